"""`--cpu-op` for each operator of issue #10's list (acceptance 2): forced off the NPU in an INT8
program, it runs as a CPU kernel between delegates; the firmware built for the program runs it
on QEMU (mps3-an547, virtual NPU) and every output equals ExecuTorch's Python runtime on the
same .pte (the host reference: ExecuTorch's runtime for the CPU steps, the TOSA reference model
for the delegates), integers bit for bit, floats within 1e-6 of the output's magnitude.

The models (tests/deploy/models/forced_cpu_ops.py) give each operator an output of its own, so
a difference names the operator; one firmware build per model. Where an operator of the list
never reaches the CPU as itself in a quantized program, the test says what reaches it instead
(see NOT_FORCEABLE).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from sdk.evaluation.compare import DEFAULT_RTOL, OutputComparison, compare_each
from sdk.program.pte import LoadedProgram, load_program, operator_name

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "tests" / "deploy" / "models" / "forced_cpu_ops.py"
BOARD = "corstone300"

pytestmark = pytest.mark.slow

# Per model: each `--cpu-op` (the edge operator the lowered graph has) and the CPU kernel the
# program must call for it, once.
FORCED: dict[str, dict[str, str]] = {
    "Elementwise": {
        "aten.clamp.default": "aten::clamp.out",
        "aten.hardtanh.default": "aten::hardtanh.out",
        "aten.exp.default": "aten::exp.out",
        "aten.sub.Tensor": "aten::sub.out",
        "aten.relu.default": "aten::relu.out",
        "aten.where.self": "aten::where.self_out",
        "aten.select_copy.int": "aten::select_copy.int_out",
        "aten.index_select.default": "aten::index_select.out",
        "aten.argmax.default": "aten::argmax.out",
    },
    "Activations": {
        "aten.hardswish.default": "aten::hardswish.out",
        "aten.silu.default": "aten::silu.out",
    },
    "Spatial": {
        "aten.max_pool2d_with_indices.default": "aten::max_pool2d_with_indices.out",
        "aten.avg_pool2d.default": "aten::avg_pool2d.out",
        "aten.constant_pad_nd.default": "aten::constant_pad_nd.out",
        "aten.upsample_nearest2d.vec": "aten::upsample_nearest2d.vec_out",
    },
    "Matmul": {
        "aten.convolution.default": "aten::convolution.out",
        "aten.mm.default": "aten::mm.out",
        # the Arm partitioner keeps nn.Linear whole: forced, it is linear.out (not
        # permute_copy + addmm / mm)
        "aten.linear.default": "aten::linear.out",
    },
}

# Operators of the list that ExecuTorch's Arm quantizer rewrites before annotation
# (EthosUQuantizer.transform_for_annotation, for every node it quantizes): the quantized
# program never has them, so `--cpu-op` cannot name them.
NOT_FORCEABLE = {
    "aten.div.Tensor": "DecomposeDivPass: reciprocal + mul (a constant divisor: mul)",
    "aten.mean.dim": "DecomposeMeanDimPass: sum.dim_IntList + mul",
    "aten._log_softmax.default": "DecomposeSoftmaxPass: amax, sub, exp, sum, log, sub",
    "aten.addmm.default": "DecomposeAddmmPass: mm + add",
}

# Operators ExecuTorch's Python runtime has no kernel for (export decomposes them, the Arm
# partitioner keeps them whole): the reference runs export's decomposition of the segment.
NO_EXECUTORCH_KERNEL = {"aten::hardswish.out", "aten::silu.out"}


def spec(model: str) -> str:
    return f"{MODELS}:{model}"


# ---- the reference of a segment calling an operator ExecuTorch lacks -----------------------


def _decode(program: LoadedProgram, index: int, kind: str, env: dict[int, torch.Tensor]):
    """A kernel argument as PyTorch takes it (tensors from `env`)."""
    from executorch.exir.schema import Bool, Double, Int, Null, Tensor

    val = program.plan.values[index].val
    if isinstance(val, Tensor):
        return env[index]
    if isinstance(val, Null):
        return None
    if isinstance(val, Int):
        if kind.startswith("ScalarType"):
            return torch.from_numpy(np.empty(0, _numpy_dtype(val.int_val))).dtype
        return val.int_val
    if isinstance(val, (Double, Bool)):
        return val.double_val if isinstance(val, Double) else val.bool_val
    raise NotImplementedError(f"value {index}: {type(val).__name__} arguments")


def _numpy_dtype(scalar_type: int) -> np.dtype:
    from executorch.exir.schema import ScalarType

    from sdk.program.pte import numpy_dtype

    return numpy_dtype(ScalarType(scalar_type))


def segment_function(pte: bytes) -> Callable[..., tuple[torch.Tensor, ...]]:
    """The CPU-only program `pte` as a PyTorch function: each `.out` kernel call as its
    functional operator, in the program's order."""
    program = load_program(pte)
    plan = program.plan

    def run(*inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        env = {int(v): t for v, t in zip(plan.inputs, inputs)}
        for _, call in program.kernel_calls():
            op = plan.operators[call.op_index]
            namespace, name = op.name.split("::", 1)
            packet = getattr(getattr(torch.ops, namespace), name)
            schema = getattr(packet, op.overload)._schema
            kwargs, outs = {}, []
            for argument, index in zip(schema.arguments, call.args):
                if argument.is_out:
                    outs.append(int(index))
                else:
                    kwargs[argument.name] = _decode(program, int(index), str(argument.type), env)
            result = packet.default(**kwargs)
            env.update(zip(outs, result if isinstance(result, tuple) else (result,)))
        return tuple(env[int(v)] for v in plan.outputs)

    return run


class _Fn(torch.nn.Module):
    def __init__(self, fn: Callable[..., tuple[torch.Tensor, ...]]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.fn(*args)


def decomposed_segment(pte: bytes, inputs: list[np.ndarray]) -> bytes:
    """The same segment exported again as ExecuTorch exports it (hardswish, silu decomposed)."""
    from executorch.exir import to_edge_transform_and_lower

    example = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in inputs)
    exported = torch.export.export(_Fn(segment_function(pte)), example)
    return to_edge_transform_and_lower(exported).to_executorch().buffer


def decomposing_host_run(program_path: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The host reference (sdk.targets.host), where a CPU segment calls an operator of
    NO_EXECUTORCH_KERNEL: ExecuTorch's runtime running export's decomposition of the segment."""
    from sdk.program.cut import cut_cpu_segment
    from sdk.targets.host import HostRunner, host_runner

    runner = host_runner(program_path)

    class Decomposing(HostRunner):
        def _run_cpu(self, step, env) -> None:
            segment = cut_cpu_segment(self.program, step)
            if not NO_EXECUTORCH_KERNEL & set(load_program(segment.pte).operators()):
                return super()._run_cpu(step, env)
            feeds = [np.ascontiguousarray(env[v]) for v in segment.inputs]
            pte = decomposed_segment(segment.pte, feeds)
            assert not NO_EXECUTORCH_KERNEL & set(load_program(pte).operators())
            method = self.runtime.load_program(pte)
            results = method.load_method("forward").execute([torch.from_numpy(f) for f in feeds])
            env.update(zip(segment.outputs, [r.numpy().copy() for r in results]))

    return Decomposing(runner.program, runner.executor.tosa_paths).run(inputs)


# ---- the runs ----------------------------------------------------------------------------


@dataclass
class ForcedRun:
    model: str
    program: LoadedProgram
    export_report: dict
    cpu_calls: dict[str, int]  # CPU kernel -> calls, as the deploy report lists them
    npu_operators: set[str]  # edge operators inside the delegates
    target: list[np.ndarray]  # on QEMU
    reference: list[np.ndarray]  # ExecuTorch's Python runtime on the same .pte
    comparisons: list[OutputComparison]
    quantized_model: list[np.ndarray] | None = None  # the quantized PyTorch model's outputs


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("forced_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SDK_CACHE_DIR", str(root))
        mp.setenv("SDK_FVP", str(root / "no-fvp-here"))  # QEMU's report, where an FVP is installed
        yield root


@pytest.fixture(scope="module")
def deployed(cache_root, tmp_path_factory) -> Callable[[str], ForcedRun]:
    """deployed(model) -> ForcedRun: `sdk deploy` (export with the model's `--cpu-op`s, firmware
    for the program, QEMU, the host reference, the strict comparison), once per model."""
    from sdk.cache import Cache
    from sdk.deploy.pipeline import deploy
    from sdk.targets.host import run_host
    from sdk.utils.npz import read_arrays

    runs: dict[str, ForcedRun] = {}

    def get(model: str) -> ForcedRun:
        if model not in runs:
            outdir = tmp_path_factory.mktemp(f"deploy_{model}")
            report = deploy(
                spec(model), board=BOARD, target="qemu", cpu_ops=list(FORCED[model]),
                outdir=outdir, cache=Cache(cache_root),
            )  # fmt: skip
            data = report.to_json()
            # The deploy's own verdict: the target against the host reference, and the
            # program within ExecuTorch's tolerance of the quantized PyTorch model; the fp32
            # floor (a warning) judges these random tiny models' INT8 quantization (Matmul's
            # convolution: SNR ~6 dB, the quantized PyTorch model's own), not the CPU kernels.
            for output in data["outputs"]:
                assert output["host_reference"]["ok"] and output["criterion"]["ok"], output
            program = load_program(Path(data["files"]["program"]))
            entry = Path(data["files"]["program"]).parents[1]
            target = read_arrays(outdir / "outputs.npz")
            reference = run_host(program, read_arrays(entry / "inputs.npz"))
            placement = data["placement"]
            runs[model] = ForcedRun(
                model=model,
                program=program,
                export_report=_read_json(program.path.parent / "report.json"),
                cpu_calls={c["op"]: c["calls"] for c in placement["cpu"]},
                npu_operators={op for d in placement["npu"] for op in d["operators"]},
                target=target,
                reference=reference,
                comparisons=compare_each(target, reference, DEFAULT_RTOL),
            )
        return runs[model]

    return get


@pytest.fixture(scope="module")
def activations(tmp_path_factory) -> ForcedRun:
    """hardswish and silu forced to the CPU: `sdk deploy` cannot check this program, because
    its host reference loads each CPU segment into ExecuTorch's runtime, which has no
    hardswish.out / silu.out ("Missing operator"). So: the same steps by hand (export, the
    firmware for the program, QEMU) and the reference with those segments decomposed."""
    from collections import Counter

    from sdk.ethosu.config import NpuConfig, QuantMode
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import lower, quantize
    from sdk.firmware.boards import load_board
    from sdk.firmware.build import build_firmware
    from sdk.targets.base import RunOptions
    from sdk.targets.run import make_target

    model = "Activations"
    work = tmp_path_factory.mktemp("activations")
    loaded = load_model(spec(model))
    quantized = quantize(loaded, NpuConfig.U55_128, QuantMode.INT8)
    result = lower(quantized, work / "export", cpu_ops=list(FORCED[model]))
    program = load_program(result.program_path)
    board = load_board(BOARD)
    elf = build_firmware(BOARD, result.program_path, work / "executor_runner.elf")
    inputs = [t.numpy() for t in loaded.example_inputs]
    options = RunOptions(timeout_s=120.0, workdir=work / "run", firmware=elf)
    run = make_target("qemu", board).strategy.run_program(
        program, inputs, options
    )  # the virtual NPU: the link
    reference = decomposing_host_run(result.program_path, inputs)
    calls = Counter(
        operator_name(program.plan.operators[call.op_index]) for _, call in program.kernel_calls()
    )
    with torch.no_grad():
        expected = quantized.graph_module(*loaded.example_inputs)
    return ForcedRun(
        model=model,
        program=program,
        export_report=result.report,
        cpu_calls=dict(calls),
        npu_operators={n["target"] for d in result.report["delegates"] for n in d["nodes"]},
        target=run.outputs,
        reference=reference,
        comparisons=compare_each(run.outputs, reference, DEFAULT_RTOL),
        quantized_model=[t.numpy() for t in expected],
    )


def _read_json(path: Path) -> dict:
    import json

    return json.loads(path.read_text())


def forced_run(request, model: str) -> ForcedRun:
    if model == "Activations":
        return request.getfixturevalue("activations")
    return request.getfixturevalue("deployed")(model)


def model_outputs(model: str) -> tuple[str, ...]:
    from sdk.export.model_loader import load_model

    module = type(load_model(spec(model)).module)
    return module.OUTPUTS


# ---- the checks --------------------------------------------------------------------------


@pytest.mark.parametrize("model", list(FORCED))
def test_each_forced_operator_runs_on_the_cpu(request, model):
    """The program calls the operator's CPU kernel once; no delegate holds the operator; the
    export report lists the node on the CPU and the operator as forced."""
    run = forced_run(request, model)
    for edge_op, kernel in FORCED[model].items():
        assert run.cpu_calls.get(kernel) == 1, (kernel, run.cpu_calls)
        assert edge_op not in run.npu_operators, (edge_op, run.npu_operators)
        assert edge_op in {n["target"] for n in run.export_report["cpu_nodes"]}
    compute = {op for op in run.npu_operators if not op.startswith("quantized_decomposed.")}
    assert compute, "no NPU work left around the forced operators"
    delegates = list(run.program.delegate_calls())
    assert len(delegates) >= 2, "each operator should sit between NPU work"


@pytest.mark.parametrize("model", list(FORCED))
def test_qemu_equals_executorch_on_every_output(request, record_property, model):
    """Integers bit for bit, floats within 1e-6 of the output's magnitude
    (sdk.evaluation.compare). The outputs are what the program gives: dequantized INT8 values
    for the float operators (each quantized after it, on the CPU), Long indices for argmax."""
    run = forced_run(request, model)
    names = model_outputs(model)
    assert len(run.target) == len(run.reference) == len(names)
    for name, comparison, out in zip(names, run.comparisons, run.target):
        record_property(f"{name}_max_abs_diff", comparison.max_abs_diff)
        assert comparison.ok, f"{model} output {name}: {comparison.describe()}"
        if not np.issubdtype(out.dtype, np.floating):
            assert comparison.exact, f"{model} output {name} (integer): {comparison.describe()}"


def test_a_wrong_value_fails_the_comparison(request):
    """The comparison the checks above use is able to fail: one element of the integer output
    off by one, one float element off by just over the tolerance."""
    run = forced_run(request, "Elementwise")
    names = model_outputs("Elementwise")
    reference = [r.copy() for r in run.reference]
    integer = names.index("argmax")
    reference[integer].flat[5] += 1
    floating = names.index("exp")
    scale = float(np.max(np.abs(run.reference[floating])))
    reference[floating].flat[7] += np.float32(3 * DEFAULT_RTOL * scale)
    comparisons = compare_each(run.target, reference, DEFAULT_RTOL)
    bad = [i for i, c in enumerate(comparisons) if not c.ok]
    assert bad == [floating, integer], [c.describe() for c in comparisons]
    assert comparisons[integer].tolerance == 0.0 and comparisons[integer].max_abs_diff == 1.0


def test_the_stock_host_reference_cannot_run_hardswish_or_silu(activations):
    """Why the Activations model has a reference of its own: ExecuTorch's runtime has no
    kernel for the operators, so the SDK's host reference (`sdk run --target host`, the
    deploy's reference step) fails to load the program's CPU segment."""
    from sdk.targets.host import run_host

    program = activations.program
    assert set(program.operators()) >= NO_EXECUTORCH_KERNEL
    inputs = [np.zeros(t.shape, np.float32) for t in program.inputs()]
    with pytest.raises(RuntimeError):
        run_host(program, inputs)


def test_the_decomposed_reference_equals_the_quantized_pytorch_model(activations):
    """The reference itself, held to an independent one: INT8 programs equal the quantized
    PyTorch model (tests/support/quantref.py), and so does ExecuTorch running the decomposition."""
    assert activations.quantized_model is not None
    for got, want in zip(activations.reference, activations.quantized_model, strict=True):
        np.testing.assert_array_equal(got, want)


def test_listed_operators_the_quantizer_rewrites_cannot_be_forced():
    """div, mean.dim, log_softmax and addmm never reach an INT8 program as themselves
    (NOT_FORCEABLE): the quantized graph has what they are rewritten to, and `--cpu-op` on
    them is refused. The refusal is ForceOnCpu.check_matches, the check `sdk export` makes on
    the lowered graph (tests/export/test_cpu_ops.py); here it sees the edge graph without
    partitioning it (Vela's part, which does not change the refusal, takes a minute)."""
    from executorch.exir import to_edge_transform_and_lower

    from sdk.errors import UsageError
    from sdk.ethosu.config import NpuConfig, QuantMode
    from sdk.export.cpu_ops import ForceOnCpu
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import quantize

    loaded = load_model(spec("Rewritten"))
    quantized = quantize(loaded, NpuConfig.U55_128, QuantMode.INT8)
    targets = {
        str(getattr(n.target, "__name__", n.target))
        for n in quantized.exported.graph_module.graph.nodes
        if n.op == "call_function"
    }
    names = {t.removeprefix("aten.") for t in targets}
    gone = {"div.Tensor", "mean.dim", "_log_softmax.default", "log_softmax.int", "addmm.default"}
    assert not gone & names, gone & names
    assert {"reciprocal.default", "sum.dim_IntList", "amax.default", "log.default"} <= names
    assert {"mm.default", "add.Tensor"} <= names
    edge = to_edge_transform_and_lower(quantized.exported).exported_program().graph_module
    with pytest.raises(UsageError) as info:
        ForceOnCpu(list(NOT_FORCEABLE)).check_matches([edge])
    for op in NOT_FORCEABLE:
        assert f"--cpu-op {op} matches no operator" in info.value.message
