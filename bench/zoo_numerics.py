"""What the test zoo's programs lose, measured per quantization mode (the figures the README's
"Numerics" tables quote; re-run this to re-measure them). Figures, not a test.

For each zoo model (tests/export/models/) and mode: export, then
`sdk.evaluation.numerics.analyse` on the model's example inputs. Per output: SNR against fp32
of the quantized PyTorch model and
of the host reference (the lowered program: TOSA reference model + ExecuTorch's runtime),
and the host reference against the quantized model in steps of the output's quantization
scale (max, mean, share of elements that differ); per NPU delegate output, the same against
the quantized model's integer tensor; and the collapsed parts of concatenated outputs.

    .venv/bin/python bench/zoo_numerics.py [--quant int8 int16] [--model resnet ...]
        [--json figures.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "tests" / "export" / "models"
# name -> MODEL spec (file.py[:Name]); the YOLO11-style detector and its two fixes.
ZOO = {
    "mobilenet_v2_block": f"{MODELS / 'mobilenet_v2_block.py'}",
    "resnet": f"{MODELS / 'resnet.py'}",
    "yolo11": f"{MODELS / 'yolo11_detector.py'}",
    "yolo11:separate_outputs": f"{MODELS / 'yolo11_detector.py'}:separate_outputs",
    "yolo11:normalised_boxes": f"{MODELS / 'yolo11_detector.py'}:normalised_boxes",
}


def _db(value: float | None) -> str:
    return "identical" if value is None else f"{value:.1f} dB"


def measure(name: str, quant: str, workdir: Path) -> dict:
    from sdk.ethosu.config import NpuConfig, QuantMode
    from sdk.evaluation.numerics import analyse
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import lower, quantize

    start = time.monotonic()
    loaded = load_model(ZOO[name])
    quantized = quantize(loaded, NpuConfig.U55_128, QuantMode(quant))
    result = lower(quantized, workdir / f"{name.replace(':', '_')}_{quant}")
    inputs = [t.numpy() for t in loaded.example_inputs]
    report = analyse(loaded, quantized, result.program_path, inputs)
    placed = result.report
    return {
        "model": name,
        "quant": quant,
        "seconds": round(time.monotonic() - start, 1),
        "delegates": len(placed["delegates"]),
        "cpu_operators": sorted(
            {n["target"] for n in placed["cpu_nodes"] if "quantize_per_tensor" not in n["target"]}
        ),
        "numerics": report.to_json(),
    }


def rows(figures: dict) -> list[str]:
    lines = []
    numerics = figures["numerics"]
    for output in numerics["outputs"]:
        stages = {s["stage"]: s for s in output["stages"]}
        host = stages["host"]
        lsb = host["lsb_vs_previous"] or {}
        differing = lsb.get("differing")
        lines.append(
            f"| {figures['model']} | {figures['quant']} | {output['index']} "
            f"| {_db(stages['quantized']['vs_fp32']['snr_db'])} "
            f"| {_db(host['vs_fp32']['snr_db'])} "
            f"| {lsb.get('max', float('nan')):.3g} | {lsb.get('mean', float('nan')):.3g} "
            f"| {'n/a' if differing is None else f'{100 * differing:.1f} %'} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quant", nargs="+", default=["int8", "int16"])
    parser.add_argument("--model", nargs="+", default=list(ZOO), choices=list(ZOO))
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    sys.path.insert(0, str(REPO))
    all_figures = []
    header = (
        "| model | quant | output | quantized vs fp32 | host vs fp32 | host vs quantized: max "
        "LSB | mean LSB | differing |\n|---|---|---|---|---|---|---|---|"
    )
    with tempfile.TemporaryDirectory(prefix="zoo-numerics-") as tmp:
        for name in args.model:
            for quant in args.quant:
                figures = measure(name, quant, Path(tmp))
                all_figures.append(figures)
                print(f"# {name} {quant}: {figures['seconds']} s, {figures['delegates']} "
                      f"delegate(s), CPU: {', '.join(figures['cpu_operators']) or 'Q/DQ only'}",
                      flush=True)  # fmt: skip
                for b in figures["numerics"]["boundaries"]:
                    if b["node"] is not None:
                        print(f"#   delegate {b['delegate']} output {b['output']} ({b['dtype']}) "
                              f"vs the quantized model: max {b['max_lsb']:g} LSB, mean "
                              f"{b['mean_lsb']:.3g}, {100 * b['differing']:.1f} % differ",
                              flush=True)  # fmt: skip
                for c in figures["numerics"]["collapses"]:
                    print(f"#   COLLAPSE: {c['message']}", flush=True)
                if args.json:
                    args.json.write_text(json.dumps(all_figures, indent=2) + "\n")
    print(header)
    for figures in all_figures:
        print("\n".join(rows(figures)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
