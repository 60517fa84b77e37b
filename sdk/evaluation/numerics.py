"""Where accuracy is lost: every output (and every NPU delegate's output) at every stage.

    report = analyse(loaded, quantized, program_path, inputs)

Stages, in order: the fp32 PyTorch model, the quantized PyTorch model (what quantization alone
gives), the host reference (the program as lowered: TOSA reference model + ExecuTorch's
runtime) and, when given, the target's outputs. Each is measured against fp32 (SNR, max abs
error, cosine: sdk.evaluation.accuracy) and, in units of the tensor's quantization step, against the
stage before it, so the first stage that loses accuracy is named, and among the delegate
outputs the first tensor where the lowered program leaves the quantized model.

It also finds the outputs quantization itself ruins in a known way: an output that
concatenates parts of very different ranges under one scale (a detector's box coordinates,
0..~545 px, and class scores, 0..1): the scale follows the widest part and another part
collapses to a few levels. It names the part and the fixes that work (separate outputs,
normalised coordinates; not `--cpu-op aten.cat`: the concat's parts share one scale wherever
the concat runs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from sdk.evaluation.accuracy import THRESHOLDS, Accuracy, measure
from sdk.export.model_loader import output_tensors

STAGES = ("fp32", "quantized", "host", "target")
# A part of a concatenated output spanning fewer quantization levels than this has collapsed
# (while another part of the same output spans at least WIDE_LEVELS).
COLLAPSED_LEVELS = 16
WIDE_LEVELS = 64
# Not among them: the concat on the CPU (`--cpu-op aten.cat`). The quantizer gives a concat's
# inputs and output one shared scale wherever the concat runs, so the scores collapse there
# too (tests/numerics/test_numerics.py measures it); a float concat would need the parts
# left unquantized, which the SDK's quantization does not offer.
CONCAT_FIXES = (
    "return the parts as separate outputs (each gets its own quantization scale)",
    "normalise the wide part before the concat (e.g. box coordinates divided by the image "
    "size) so the parts share a range",
)


@dataclass
class StageFigures:
    stage: str
    vs_fp32: Accuracy
    lsb_vs_previous: tuple[float, float] | None  # (max, mean) in quantization steps
    # share of elements more than half a step from the stage before
    differing_vs_previous: float | None = None

    def to_json(self) -> dict:
        lsb = None
        if self.lsb_vs_previous is not None:
            lsb = {
                "max": self.lsb_vs_previous[0],
                "mean": self.lsb_vs_previous[1],
                "differing": self.differing_vs_previous,
            }
        return {"stage": self.stage, "vs_fp32": self.vs_fp32.to_json(), "lsb_vs_previous": lsb}


@dataclass
class OutputNumerics:
    index: int
    shape: list[int]
    scale: float | None
    stages: list[StageFigures]
    first_loss: str | None  # the stage that first falls below its floor against fp32

    def to_json(self) -> dict:
        return {
            "index": self.index,
            "shape": self.shape,
            "scale": self.scale,
            "stages": [s.to_json() for s in self.stages],
            "first_loss": self.first_loss,
        }


@dataclass
class BoundaryNumerics:
    """A delegate's integer output against the quantized model's tensor of the same values."""

    delegate: int
    output: int
    node: str | None  # the quantized model's quantize node it corresponds to
    dtype: str
    shape: list[int]
    max_lsb: float | None
    mean_lsb: float | None
    differing: float | None  # share of elements that differ

    def to_json(self) -> dict:
        return dict(vars(self))


@dataclass
class Collapse:
    output: int
    dim: int
    parts: list[dict]  # start, stop, levels, snr_db (quantized vs fp32) per part
    collapsed: list[int]  # indices into parts
    fixes: tuple[str, ...] = CONCAT_FIXES

    def describe(self) -> str:
        wide = max(self.parts, key=lambda p: p["levels"])
        names = ", ".join(
            f"[{p['start']}:{p['stop']}] ({p['levels']:.1f} levels, SNR "
            + ("identical" if p["snr_db"] is None else f"{p['snr_db']:.1f} dB")
            + " against fp32)"
            for p in (self.parts[i] for i in self.collapsed)
        )
        return (
            f"output {self.output}: the concatenation along dim {self.dim} shares one scale, set "
            f"by part [{wide['start']}:{wide['stop']}] ({wide['levels']:.0f} levels); "
            f"{names} collapse(s). Fix: " + "; or ".join(self.fixes)
        )

    def to_json(self) -> dict:
        return {
            "output": self.output,
            "dim": self.dim,
            "parts": self.parts,
            "collapsed": self.collapsed,
            "fixes": list(self.fixes),
            "message": self.describe(),
        }


@dataclass
class NumericsReport:
    quant: str
    outputs: list[OutputNumerics]
    boundaries: list[BoundaryNumerics]
    collapses: list[Collapse] = field(default_factory=list)

    @property
    def first_loss(self) -> str | None:
        """The first tensor, in program order, where the lowered program leaves the quantized
        model by more than one step; else the first output's lossy stage."""
        for b in self.boundaries:
            if b.max_lsb is not None and b.max_lsb > 1:
                return (
                    f"delegate {b.delegate} output {b.output} ({b.node}): up to {b.max_lsb:g} "
                    f"LSB from the quantized model on {100 * (b.differing or 0):.1f} % of it"
                )
        for c in self.collapses:
            return f"output {c.output}: at quantization (a concatenated part collapses)"
        for o in self.outputs:
            if o.first_loss:
                return f"output {o.index}: at the {o.first_loss} stage"
        return None

    def to_json(self) -> dict:
        return {
            "schema": "sdk.evaluation.numerics/1",
            "quant": self.quant,
            "first_loss": self.first_loss,
            "outputs": [o.to_json() for o in self.outputs],
            "boundaries": [b.to_json() for b in self.boundaries],
            "collapses": [c.to_json() for c in self.collapses],
        }


def _as_tuple(value) -> tuple:
    """A graph output node's argument (flat in an exported graph) as a tuple."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _lsb(a: np.ndarray, b: np.ndarray, scale: float | None) -> tuple[float, float] | None:
    if scale is None or not scale:
        return None
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64)) / scale
    return float(diff.max(initial=0.0)), float(diff.mean()) if diff.size else 0.0


def _differing(a: np.ndarray, b: np.ndarray, scale: float | None) -> float | None:
    """The share of elements of `a` more than half a quantization step from `b`."""
    if scale is None or not scale or not a.size:
        return None
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64)) / scale
    return float(np.mean(diff > 0.5))


def output_stages(
    index: int, arrays: dict[str, np.ndarray], scale: float | None, quant: str
) -> OutputNumerics:
    """One output through the stages given (fp32 first)."""
    fp32 = arrays["fp32"]
    floor = THRESHOLDS[quant]["fp32"]
    stages, previous, first_loss = [], None, None
    for stage in STAGES:
        if stage not in arrays:
            continue
        array = arrays[stage].reshape(fp32.shape)
        accuracy = measure(array, fp32)
        lsb = differing = None
        if previous is not None:
            lsb, differing = _lsb(array, previous, scale), _differing(array, previous, scale)
        stages.append(StageFigures(stage, accuracy, lsb, differing))
        if first_loss is None and stage != "fp32" and not accuracy.meets(floor):
            first_loss = stage
        previous = array
    return OutputNumerics(index, list(fp32.shape), scale, stages, first_loss)


class _Recorder(torch.fx.Interpreter):
    """Runs a graph module keeping every node's output."""

    def __init__(self, module: torch.fx.GraphModule) -> None:
        super().__init__(module)
        self.values: dict[str, object] = {}

    def run_node(self, n):
        result = super().run_node(n)
        self.values[n.name] = result
        return result


def quantized_tensors(graph_module: torch.fx.GraphModule, inputs: tuple) -> dict[str, np.ndarray]:
    """The integer output of every quantize node of the quantized model."""
    recorder = _Recorder(graph_module)
    with torch.no_grad():
        recorder.run(*inputs)
    found = {}
    for node in graph_module.graph.nodes:
        if node.op == "call_function" and "quantize_per_tensor" in str(node.target):
            if "dequantize" in str(node.target):
                continue
            value = recorder.values.get(node.name)
            if isinstance(value, torch.Tensor):
                found[node.name] = value.detach().numpy()
    return found


def boundary_numerics(
    delegate_runs: list[tuple[int, list[np.ndarray]]], quantized: dict[str, np.ndarray]
) -> list[BoundaryNumerics]:
    """Each delegate output against the quantized model's quantize node of the same dtype and
    size whose values agree best (the delegate's output is one of them)."""
    results = []
    for delegate, outputs in delegate_runs:
        for k, array in enumerate(outputs):
            candidates = [
                (name, q)
                for name, q in quantized.items()
                if q.dtype == array.dtype and q.size == array.size
            ]
            best = None
            for name, q in candidates:
                diff = np.abs(q.reshape(-1).astype(np.int64) - array.reshape(-1).astype(np.int64))
                key = (float(diff.mean()), name)
                if best is None or key < best[0]:
                    best = (key, name, diff)
            if best is None:
                results.append(
                    BoundaryNumerics(
                        delegate, k, None, str(array.dtype), list(array.shape), None, None, None
                    )
                )
                continue
            _, name, diff = best
            results.append(
                BoundaryNumerics(
                    delegate,
                    k,
                    name,
                    str(array.dtype),
                    list(array.shape),
                    float(diff.max(initial=0)),
                    float(diff.mean()),
                    float(np.mean(diff > 0)),
                )
            )
    return results


def concat_collapses(
    module: torch.nn.Module,
    inputs: tuple,
    fp32_outputs: list[np.ndarray],
    quantized_outputs: list[np.ndarray],
    scales: list[float | None],
    exported: torch.export.ExportedProgram | None = None,
) -> list[Collapse]:
    """Outputs made by a concatenation whose parts span very different numbers of levels.

    `exported`: `module` already through torch.export (else it is exported here)."""
    if exported is None:
        exported = torch.export.export(module, inputs)
    graph = exported.graph_module.graph
    (output_node,) = [n for n in graph.nodes if n.op == "output"]
    collapses = []
    for index, node in enumerate(_as_tuple(output_node.args[0])):
        scale = scales[index] if index < len(scales) else None
        if scale is None or not isinstance(node, torch.fx.Node):
            continue
        if node.target is not torch.ops.aten.cat.default:
            continue
        parts_in = node.args[0]
        dim = node.args[1] if len(node.args) > 1 else 0
        fp32 = fp32_outputs[index]
        dim = dim % fp32.ndim
        sizes = [int(p.meta["val"].shape[dim]) for p in parts_in]
        parts, start = [], 0
        for size in sizes:
            stop = start + size
            index_slice = [slice(None)] * fp32.ndim
            index_slice[dim] = slice(start, stop)
            piece = fp32[tuple(index_slice)]
            levels = float(np.ptp(piece)) / scale if piece.size else 0.0
            accuracy = measure(quantized_outputs[index][tuple(index_slice)], piece)
            parts.append(
                {"start": start, "stop": stop, "levels": levels, "snr_db": accuracy.snr_db}
            )
            start = stop
        widest = max(p["levels"] for p in parts)
        collapsed = [i for i, p in enumerate(parts) if p["levels"] < COLLAPSED_LEVELS]
        if widest >= WIDE_LEVELS and collapsed:
            collapses.append(Collapse(index, dim, parts, collapsed))
    return collapses


def analyse(
    loaded,
    quantized,
    program_path,
    inputs: list[np.ndarray],
    target_outputs: list[np.ndarray] | None = None,
) -> NumericsReport:
    """The numerics of an exported program (`sdk.export.pipeline.lower` of `quantized`)."""
    from sdk.program.pte import load_program, output_quant_scales
    from sdk.targets.host import host_runner

    tensors = tuple(torch.from_numpy(a) for a in inputs)
    with torch.no_grad():
        fp32 = [o.detach().numpy() for o in output_tensors(loaded.module(*tensors))]
        qmodel = [o.detach().numpy() for o in output_tensors(quantized.graph_module(*tensors))]
    runner = host_runner(program_path)
    host = runner.run(inputs)
    scales = output_quant_scales(load_program(program_path))
    outputs = []
    for i, ref in enumerate(fp32):
        arrays = {"fp32": ref, "quantized": qmodel[i], "host": host[i]}
        if target_outputs is not None:
            arrays["target"] = target_outputs[i]
        scale = scales[i] if i < len(scales) else None
        outputs.append(output_stages(i, arrays, scale, quantized.quant.value))
    boundaries = boundary_numerics(
        runner.delegate_runs, quantized_tensors(quantized.graph_module, tensors)
    )
    collapses = concat_collapses(
        loaded.module, tensors, fp32, qmodel, scales, getattr(quantized, "fp32_exported", None)
    )
    return NumericsReport(quantized.quant.value, outputs, boundaries, collapses)


def export_numerics(quantized, program, scales: list[float | None] | None = None) -> dict:
    """The numerics an export already has the parts for (report.json's `numerics`): per
    output the quantized PyTorch model against fp32 on the example inputs, and the collapsed
    parts of concatenated outputs. Two forward passes; the host reference and the delegate
    outputs are `sdk numerics`' (they need the program run). `scales`: each output's
    quantization step, when the program's dequantizes do not say it (integer I/O)."""
    from sdk.program.pte import output_quant_scales

    loaded = quantized.loaded
    tensors = loaded.example_inputs
    with torch.no_grad():
        fp32 = [o.detach().numpy() for o in output_tensors(loaded.module(*tensors))]
        qmodel = [o.detach().numpy() for o in output_tensors(quantized.graph_module(*tensors))]
    scales = scales if scales is not None else output_quant_scales(program)
    quant = quantized.quant.value
    outputs = []
    for i, ref in enumerate(fp32):
        scale = scales[i] if i < len(scales) else None
        stages = output_stages(i, {"fp32": ref, "quantized": qmodel[i]}, scale, quant)
        outputs.append(stages.to_json())
    collapses = None  # not checked: no fp32 graph kept (a QuantizedModel made by hand)
    if getattr(quantized, "fp32_exported", None) is not None:
        collapses = [
            c.to_json()
            for c in concat_collapses(
                loaded.module, tensors, fp32, qmodel, scales, quantized.fp32_exported
            )
        ]
    return {
        "schema": "sdk.evaluation.numerics/1",
        "inputs": "the example inputs",
        "stages": ["fp32", "quantized"],
        "outputs": outputs,
        "collapses": collapses,
        "more": "sdk numerics MODEL: the host reference and every NPU delegate output",
    }
