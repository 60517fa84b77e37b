"""A model zoo over a labgrid farm: wall time on 1, 2 and 4 places, and what holding a place
costs. Figures, not a test.

The farm is tests/support/localfarm.py's (labgrid's coordinator and exporter on loopback, QEMU
boards behind places). The zoo's programs are exported once first (a warm cache), so the
figures are the boards' work: acquire, power-cycle, link, run, compare, release. Each place
is a QEMU process and each deploy a Python process: the speed-up is bounded by this
machine's cores (printed).

    .venv/bin/python bench/farm_bench.py [--places 1,2,4] [--models A.py B.py ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "farm"))

ZOO = [
    "examples/shared_split.py",
    "examples/yolo_attention.py",
    "tests/export/models/conv_linear.py",
    "tests/export/models/mobilenet_v2_block.py",
    "tests/export/models/inverted_residual.py",
    "tests/deploy/models/blob_classifier.py",
]


def zoo(models: list[str], places: list[str], farm, out: Path, env: dict) -> dict:
    command = [
        str(Path(sys.executable).with_name("sdk")), "deploy", *models, "--target", "labgrid",
        "--places", ",".join(places), "--coordinator", farm.address, "-o", str(out), "--quiet",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"zoo on {places} failed ({done.returncode}): {done.stdout}{done.stderr}")
    report = json.loads((out / "zoo.json").read_text())
    report["wall"] = seconds
    return report


def place_overhead(farm, n: int) -> tuple[float, float]:
    """Mean seconds of an acquire + release through the SDK's coordinator client, and of
    opening the client session itself."""
    from sdk.targets.place import Coordinator

    sessions, holds = [], []
    for _ in range(n):
        started = time.monotonic()
        coordinator = Coordinator(farm.address)
        opened = time.monotonic()
        coordinator.acquire("c300-1", 10.0)
        coordinator.release("c300-1")
        holds.append(time.monotonic() - opened)
        coordinator.close()
        sessions.append(opened - started)
    return sum(holds) / n, sum(sessions) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--places", default="1,2,4")
    parser.add_argument("--models", nargs="+", default=ZOO)
    args = parser.parse_args()
    counts = [int(c) for c in args.places.split(",")]
    from sdk.firmware.boards import load_board
    from sdk.firmware.build import build_firmware
    from tests.support.localfarm import LocalFarm

    work = Path(tempfile.mkdtemp(prefix="farm-bench-"))
    env = {**os.environ, "SDK_CACHE_DIR": str(work / "cache")}
    os.environ["SDK_CACHE_DIR"] = env["SDK_CACHE_DIR"]
    elf = build_firmware("corstone300", None, work / "every_kernel.elf")
    farm = LocalFarm(work / "farm").start(max(counts), elf)
    try:
        names = list(farm.boards)
        print(f"{len(args.models)} models; {os.cpu_count()} cores; farm at {farm.address}")
        zoo(args.models, names[:1], farm, work / "warm", env)  # exports into the cache
        rows = []
        for count in counts:
            report = zoo(args.models, names[:count], farm, work / f"zoo{count}", env)
            rows.append((count, report))
            per_model = sum(m["seconds"] for m in report["models"]) / len(report["models"])
            print(f"  {count} place(s): {report['wall']:.1f} s wall "
                  f"({per_model:.1f} s per model deploy)", flush=True)  # fmt: skip
        base = rows[0][1]["wall"]
        for count, report in rows[1:]:
            print(f"  speed-up at {count} places: {base / report['wall']:.2f}x")
        hold, session = place_overhead(farm, 20)
        off = float(load_board("corstone300").target("labgrid")["power_off_s"])
        print(
            f"  acquire + release of a place: {hold * 1000:.0f} ms; a coordinator session: "
            f"{session * 1000:.0f} ms; the reset before a run: {off:.1f} s off + the boot"
        )
    finally:
        farm.close()


if __name__ == "__main__":
    main()
