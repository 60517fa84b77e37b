"""What `sdk deploy` on QEMU says about speed on the board: per delegate the virtual U55's
modelled cycles beside Vela's estimate, and one inference at the board's clocks (the report's
`performance` section). Figures, not a test.

    PYTHONPATH=. .venv/bin/python bench/deploy_performance.py \
        [--models examples/shared_split.py:int8,examples/yolo_attention.py:int16]

Each model is deployed once on QEMU (a fresh cache: exported, built, run); the report's rows
are printed as they are.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODELS = "examples/shared_split.py:int8,examples/yolo_attention.py:int16"


def bench(model: str, quant: str, workdir: Path) -> None:
    from sdk.deploy.pipeline import deploy
    from sdk.targets.base import VIRTUAL_NPU_MODELLED

    report = deploy(str(REPO / model), target="qemu", quant=quant, outdir=workdir / "out")
    print(f"{model} {quant}: {'passed' if report.passed else report.failure}")
    for row in report.timing:
        if row["source"] == VIRTUAL_NPU_MODELLED:
            ratio = row["ratio_to_vela"]
            print(f"  delegate {row['delegate']}: modelled {row['value']:,} cycles, Vela "
                  f"{row['vela_estimate_cycles']:,.0f}, ratio {ratio:.2f}")  # fmt: skip
    perf = report.performance
    if perf is None:
        print("  no performance section")
        return
    config = perf["config"]
    print(
        f"  latency {perf['latency_ms']:.4g} ms ({perf['inferences_per_s']:.4g}/s) at CPU "
        f"{config['cpu_clock_hz'] / 1e6:g} MHz + NPU {config['npu_clock_hz'] / 1e6:g} MHz: CPU "
        f"{perf['cpu_instructions']:,} instructions = {perf['cpu_ms']:.4g} ms "
        f"({100 * perf['cpu_share']:.1f}%), NPU {perf['npu_cycles_modelled']:,} cycles = "
        f"{perf['npu_ms']:.4g} ms"
    )
    if perf["npu_cycles_modelled"]:
        print(
            f"  NPU {config['npu']} ({config['system_config']}, {config['memory_mode']}): MAC "
            f"utilisation {100 * perf['npu_mac_utilisation']:.1f}%, memory-bound "
            f"{100 * perf['npu_memory_bound_share']:.1f}%; firmware PMCCNTR total agrees: "
            f"{perf['npu_cycles_check']['agrees']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=MODELS, help="MODEL:QUANT,... (repository paths)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="deploy-performance-") as tmp:
        os.environ["SDK_CACHE_DIR"] = str(Path(tmp) / "cache")
        for k, entry in enumerate(args.models.split(",")):
            model, quant = entry.rsplit(":", 1)
            bench(model, quant, Path(tmp) / str(k))


if __name__ == "__main__":
    main()
