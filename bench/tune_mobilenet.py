"""`sdk deploy --optimize latency` on MobileNetV2-96 INT8 (docs/tuning.md): every configuration
the board allows, each deployed and checked on QEMU (`host`: on the host's functional U55, the
same command stream bit for bit), then the chosen one deployed to QEMU. Prints the table, Vela's
estimate for ExecuTorch's default, and the chosen one's modelled cycles against it. MobileNetV2
takes a 4-D image: each configuration is tried with it as the model takes it (NCHW) and
channels-last (`--input-layout`, no input transpose on the NPU).

    PYTHONPATH=. python bench/tune_mobilenet.py [outdir] [qemu|host] [io ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from sdk.cache import Cache
from sdk.deploy.tune import (
    AUTO,
    Plan,
    Session,
    candidates,
    interface,
    render_table,
    tune_and_deploy,
)
from sdk.ethosu.memories import EXECUTORCH_DEFAULT
from sdk.firmware.boards import load_board

MODEL = Path(__file__).parent / "models" / "mobilenet_v2_96.py"


def main(outdir: Path, check: str, ios: list[str]) -> None:
    board = load_board("corstone300")
    io_list, layouts = interface(str(MODEL), ios, [AUTO])
    plan = Plan(tuple(candidates(board, ios=io_list, layouts=layouts)))
    report = tune_and_deploy(
        str(MODEL), Session("latency", board, outdir, check, Cache()), "qemu", plan,
        timeout_s=3600.0,
    )  # fmt: skip
    tuning = report.tuning
    assert tuning is not None
    print(render_table(tuning))
    trials = {t["name"]: t for t in tuning["trials"]}
    default = trials[f"{EXECUTORCH_DEFAULT} Performance io={io_list[0]}"]
    chosen = trials[tuning["chosen"]]
    print(f"ExecuTorch default: Vela estimate {default['vela_estimate_cycles']:,.0f}, "
          f"modelled {default['npu_cycles']:,}")  # fmt: skip
    print(f"chosen {chosen['name']}: modelled {chosen['npu_cycles']:,} cycles "
          f"({chosen['npu_cycles'] / default['vela_estimate_cycles']:.2f} x the default's "
          f"estimate), Vela estimate {chosen['vela_estimate_cycles']:,.0f}, MAC utilisation "
          f"{chosen['mac_utilisation']:.1%}; on QEMU: "
          f"{'passed' if report.passed else 'FAILED ' + str(report.failure)}")  # fmt: skip


if __name__ == "__main__":
    args = sys.argv[1:]
    outdir = Path(args[0]) if args else Path("/tmp/tune-mobilenet")
    main(outdir, args[1] if len(args) > 1 else "qemu", args[2:] or ["float", "int"])
