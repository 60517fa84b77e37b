"""Vela's estimate for MobileNetV2-96 INT8 under ExecuTorch's default U55 configuration and
under each configuration the board's memories allow (docs/memory.md).

Exports once (ExecuTorch's default), then recompiles the saved TOSA with Vela per board
configuration. MAC utilisation = MACs / (cycles x 128), the U55-128's MACs per cycle.

    PYTHONPATH=. python bench/memories_mobilenet.py [outdir]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from sdk.export.pipeline import export_model
from sdk.export.vela_summary import read_vela_summary
from sdk.firmware.boards import load_board
from sdk.program.audit import read_delegates
from sdk.program.pte import load_program

MODEL = Path(__file__).parent / "models" / "mobilenet_v2_96.py"
MACS_PER_CYCLE = 128
VELA = Path(sys.executable).parent / "vela"


def vela(tosa: Path, flags: list[str], out: Path) -> dict:
    """Vela's summary for `tosa` compiled with `flags` (its input named out.tosa, as ET's)."""
    out.mkdir(parents=True, exist_ok=True)
    src = out / "out.tosa"
    shutil.copyfile(tosa, src)
    subprocess.run([str(VELA), *flags, f"--output-dir={out}", str(src)], check=True,
                   capture_output=True)  # fmt: skip
    summary = read_vela_summary(out)
    assert summary is not None, out
    return summary


def main(outdir: Path) -> None:
    result = export_model(str(MODEL), outdir / "export")
    program = result.program_path
    infos = read_delegates(load_program(program))
    memories = load_board("corstone300").npu_memories
    ini = memories.write_vela_ini(outdir)
    rows = []
    base_flags = None
    for info in infos:
        flags = info.compile_specs["compile_flags"].split()
        base_flags = [f for f in flags if not f.startswith(("--system-config", "--memory-mode",
                                                            "--config"))]  # fmt: skip
        print("ExecuTorch's flags:", " ".join(flags))
    assert len(infos) == 1, "one delegate expected"
    tosa = program.parent / "tosa" / f"delegate_{infos[0].index}.tosa"
    configs = {"ExecuTorch default": infos[0].compile_specs["compile_flags"].split()}
    for mode in memories.modes:
        section = memories.section_name(mode)
        for optimise in ("Performance", "Size"):
            configs[f"{section} --optimise {optimise}"] = [
                *[f for f in base_flags if not f.startswith("--optimise")],
                f"--config={ini}", f"--system-config={section}", f"--memory-mode={section}",
                f"--optimise={optimise}",
            ]  # fmt: skip
    print(f"{'configuration':58} {'cycles':>12} {'MACs':>12} {'util':>6} {'SRAM KiB':>9}")
    for i, (name, flags) in enumerate(configs.items()):
        s = vela(tosa, flags, outdir / f"vela{i}")
        util = s["macs"] / (s["total_cycles"] * MACS_PER_CYCLE)
        rows.append((name, s))
        print(f"{name:58} {s['total_cycles']:>12,.0f} {s['macs']:>12,.0f} {util:>6.1%} "
              f"{s['sram_used_kib']:>9,.1f}")  # fmt: skip


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/mem-bench"))
