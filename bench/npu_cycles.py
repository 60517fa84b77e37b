"""The cycle model (sdk/ethosu/cycles.py) against Vela's own estimate, per delegate of the zoo.

    python bench/npu_cycles.py [--models ResNet8,conv_linear] [--quant int8,int16] [--top 3]
                               [--input-layout as-model|channels-last]

Exports each model with the SDK, times each Ethos-U delegate's command stream with the model
(for the memory system its compile spec names) and recompiles its saved TOSA with Vela's
estimate on (same flags): prints modelled vs Vela cycles, their ratio, and the operations that
differ most; where the Corstone-300 FVP is installed ($SDK_FVP or on PATH), the program's NPU
cycles as the FVP's own PMU counts them against the model's total.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ZOO = [
    *(str(p) for p in sorted((REPO / "tests/export/models").glob("*.py"))),
    str(REPO / "examples/shared_split.py"),
    str(REPO / "examples/yolo_attention.py"),
    *(f"{REPO / 'examples/mlperf_tiny.py'}:{m}"
      for m in ("DsCnn", "ResNet8", "MobileNetV1", "DeepAutoEncoder")),
]  # fmt: skip


def bench(spec: str, quant: str, top: int, workdir: Path, layout: str) -> None:
    from sdk.ethosu.config import NpuConfig, QuantMode
    from sdk.ethosu.cycles import program_timings
    from sdk.ethosu.vela_estimate import match, run_vela
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import lower, quantize
    from sdk.program.audit import read_delegates
    from sdk.program.pte import load_program

    name = spec.rsplit("/", 1)[-1]
    out = workdir / f"{name.replace(':', '_')}_{quant}"
    try:
        loaded = load_model(spec)
        quantized = quantize(loaded, NpuConfig.U55_128, QuantMode(quant), input_layout=layout)
        result = lower(quantized, out)
    except Exception as exc:  # a model the export refuses: say so, go on
        print(f"{name} {quant}: export failed: {str(exc).splitlines()[0][:100]}")
        return
    modelled_total = 0
    program = load_program(result.program_path)
    timings = program_timings(program)  # each delegate under the memory system it names
    for info in read_delegates(program):
        if info.index not in timings:
            continue
        flags = info.compile_specs["compile_flags"]
        timing = timings[info.index]
        tosa = result.outdir / "tosa" / f"delegate_{info.index}.tosa"
        vela_ops, summary = run_vela(tosa, flags.split(), out / f"vela_{info.index}")
        vela = int(float(summary["cycles_total"]))
        modelled_total += timing.cycles
        ratio = timing.cycles / vela if vela else float("nan")
        print(f"{name} {quant} delegate {info.index}: model {timing.cycles} vela {vela} "
              f"ratio {ratio:.2f} ({len(timing.ops)} ops, MACs {timing.macs})")  # fmt: skip
        matched = match(vela_ops, timing.ops, 0)
        # Vela estimates a Transpose by its bytes, not by the POOLs the stream does it with
        rest = [o for o in matched if o.operator != "Transpose"]
        model_rest, vela_rest = sum(o.modelled for o in rest), sum(o.op_cycles for o in rest)
        if vela_rest and len(rest) < len(matched):
            print(f"    without transposes: model {model_rest} vela {vela_rest} "
                  f"ratio {model_rest / vela_rest:.2f}")  # fmt: skip
        worst = sorted(matched, key=lambda o: -abs(o.modelled - o.op_cycles))
        for op in worst[:top]:
            label = f"{op.operator:12} {op.name[:24]:24}"
            print(f"    {label} model {op.modelled:8} vela {op.op_cycles:8}")
    if modelled_total:
        inputs = [t.numpy() for t in quantized.loaded.example_inputs]
        fvp_pmu(result.program_path, inputs, modelled_total)


def fvp_pmu(program: Path, inputs: list, modelled: int) -> None:
    """Where the Corstone-300 FVP is installed: the program run on it once, its NPU's own PMU
    count (the driver's PMCCNTR reads over the link) against the model's total."""
    from sdk.errors import SdkError
    from sdk.targets.run import run_on_target

    try:
        report = run_on_target("fvp", "corstone300", program, inputs)
    except SdkError as exc:
        print(f"    FVP: {exc.message.splitlines()[0][:100]}")
        return
    measured = report.timing.npu_cycles
    if measured:
        print(f"    FVP PMU {measured} cycles, model {modelled}: ratio {modelled / measured:.2f}")
    else:
        print("    FVP: ran, but its STATS carried no NPU cycle count")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="", help="comma-separated substrings of model names")
    parser.add_argument("--quant", default="int8", help="int8,int16")
    parser.add_argument("--top", type=int, default=3, help="operations shown per delegate")
    parser.add_argument(
        "--input-layout", default="as-model", help="channels-last: no input transposes on the NPU"
    )
    args = parser.parse_args()
    wanted = [m for m in args.models.split(",") if m]
    specs = [s for s in ZOO if not wanted or any(w in s for w in wanted)]
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            for quant in args.quant.split(","):
                bench(spec, quant, args.top, Path(tmp), args.input_layout)


if __name__ == "__main__":
    main()
