"""Instruction counts of the CPU kernels on Cortex-M55 (QEMU mps3-an547, -icount shift=0).

Builds the bare-metal bench image (tests/kernels/harness/target/bench_main.cpp: every
kernel, Helium on) and runs it once. With -icount shift=0 every retired instruction
advances QEMU's virtual clock by 1 ns, and SysTick counts that clock: a loop of known
length calibrates ticks to instructions. Prints a table: instructions per MAC of
aten::bmm.out (float32, int16, int8) and per byte of aten::split_with_sizes_copy.out,
next to plain scalar loops compiled with the same flags.

QEMU models no pipeline: these are instruction counts, not cycles.

    .venv/bin/python bench/kernels_bench.py
"""

from __future__ import annotations

import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "kernels"))
sys.path.insert(0, str(REPO))

import kbuild  # noqa: E402

LINE = re.compile(
    r"@bench name=(?P<name>.+?) ticks=(?P<ticks>\d+) work=(?P<work>\d+) unit=(?P<unit>\w+)"
)


@dataclass(frozen=True)
class Measurement:
    name: str
    ticks: int
    work: int
    unit: str


def run_bench() -> list[Measurement]:
    elf = kbuild.build_target("bench", [kbuild.TARGET / "bench_main.cpp"])
    with tempfile.TemporaryDirectory() as tmp:
        proc = kbuild.run_qemu(elf, "", cwd=Path(tmp), icount=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"bench image exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    found = [LINE.match(line) for line in proc.stdout.splitlines()]
    return [Measurement(m["name"], int(m["ticks"]), int(m["work"]), m["unit"]) for m in found if m]


def main() -> int:
    measurements = run_bench()
    by_name = {m.name: m for m in measurements}
    calib = by_name.pop("calibration")
    by_name.pop("empty", None)
    per_tick = calib.work / calib.ticks  # instructions per SysTick tick
    print(f"calibration: {per_tick:.2f} instructions per SysTick tick (-icount shift=0)\n")
    print(f"{'measurement':<40} {'instructions':>13} {'work':>10}  {'instr/unit':>12}")
    print("-" * 80)
    for m in by_name.values():
        instructions = m.ticks * per_tick
        print(
            f"{m.name:<40} {instructions:>13.0f} {m.work:>10} {m.unit:>5}  "
            f"{instructions / m.work:>8.3f}/{m.unit}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
