"""INT16 residual adds on the NPU (issue #10, item 1), and what a Vela refusal says.

ExecuTorch 1.5.1 gives an a16w8 convolution that feeds both an INT16 consumer and an add two
rescales of its INT48 accumulator; Vela 5.1.0 fuses a rescale into a convolution only when
it is the accumulator's sole reader, and refuses the convolution otherwise ("Non-passthrough
operation (Conv2D) could not run on NPU"). The SDK's NarrowInt48ForksPass makes the add read
the convolution's INT16 output instead. Here: the pass on hand-made graphs; the inverted
residual, a MobileNetV2-style stage and a convolution feeding two adds export with the add in
the delegate, pass the boundary audit and match the quantized PyTorch model on the host
reference; without the pass, the export error names the partition, its nodes and the
convolutions, and keeps Vela's output in a log beside OUTDIR.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from executorch.backends.arm.tosa.mapping import TosaSpecialDtype
from executorch.exir.dialects._ops import ops as exir_ops
from torch.fx import Graph, GraphModule

from sdk.cli.main import main
from sdk.errors import ExportError
from sdk.export.tosa_passes import NarrowInt48ForksPass, sdk_tosa_passes
from sdk.targets.host import run_host
from tests.support.quantref import assert_matches_quantized_model

MODELS = Path(__file__).parent / "models"
INVERTED_RESIDUAL = str(MODELS / "inverted_residual.py")
MOBILENET_V2_STAGE = str(MODELS / "mobilenet_v2_block.py")
CONV_TWO_ADDS = str(MODELS / "conv_two_adds.py")
INT16_MODELS = [INVERTED_RESIDUAL, MOBILENET_V2_STAGE, CONV_TWO_ADDS]
IDS = ["inverted_residual", "mobilenet_v2_stage", "conv_two_adds"]

tosa = exir_ops.backend.tosa
INT48 = {TosaSpecialDtype.meta_key(): TosaSpecialDtype.INT48}


# ---- the pass on hand-made graphs (fast) -------------------------------------------------


def _graph(readers: list[tuple[str, object]]) -> tuple[GraphModule, dict]:
    """x -> CONV2D (INT48) -> the given readers -> output. A reader is ("rescale", (dtype,
    scales, in_zp, out_zp)) or ("other", None)."""
    graph = Graph()
    x = graph.placeholder("x")
    conv = graph.call_function(tosa.CONV2D.default, (x, x, x, [1, 1], [0, 0, 0, 0], [1, 1]))
    conv.meta.update(INT48)
    nodes = {"conv": conv}
    outputs = []
    for i, (kind, args) in enumerate(readers):
        if kind == "rescale":
            node = graph.call_function(tosa.RESCALE.default, (conv, *args))
        else:
            node = graph.call_function(torch.ops.aten.relu.default, (conv,))
        nodes[f"r{i}"] = node
        outputs.append(node)
    graph.output(tuple(outputs))
    return GraphModule(torch.nn.Module(), graph), nodes


CONV_SCALES = [0.0009, 0.0011]


def test_int32_reader_moves_onto_the_int16_output():
    # The INT32 reader first, as RewriteConvPass orders a widened branch.
    gm, n = _graph(
        [
            ("rescale", (torch.int32, [s * 2048 for s in CONV_SCALES], 0, 0)),
            ("rescale", (torch.int16, CONV_SCALES, 0, 3)),
        ]
    )
    narrow_pass = NarrowInt48ForksPass()
    assert narrow_pass(gm).modified
    wide, narrow = n["r0"], n["r1"]
    assert list(n["conv"].users) == [narrow]  # one reader of the INT48 accumulator
    assert wide.args[0] is narrow and wide.args[1] is torch.int32
    assert wide.args[2] == [pytest.approx(2048.0, rel=1e-12)]  # the add's own scale
    assert wide.args[3:] == (3, 0)  # reads the INT16 output's zero point
    order = list(gm.graph.nodes)
    assert order.index(narrow) < order.index(wide)  # still topologically sorted
    (fork,) = narrow_pass.forks
    assert fork.rewritten and fork.consumers == (wide.name,)


def test_single_reader_and_foreign_readers_are_left_alone():
    gm, n = _graph([("rescale", (torch.int32, CONV_SCALES, 0, 0))])
    assert not NarrowInt48ForksPass()(gm).modified
    gm, n = _graph([("rescale", (torch.int16, CONV_SCALES, 0, 0)), ("other", None)])
    assert not NarrowInt48ForksPass()(gm).modified
    assert len(n["conv"].users) == 2


def test_all_int32_readers_without_qparams_are_reported_not_rewritten():
    gm, _ = _graph(
        [
            ("rescale", (torch.int32, [1.0, 2.0], 0, 0)),
            ("rescale", (torch.int32, [3.0, 4.0], 0, 0)),
        ]
    )
    narrow_pass = NarrowInt48ForksPass()
    assert not narrow_pass(gm).modified
    (fork,) = narrow_pass.forks
    assert not fork.rewritten and "no int16 output quantization" in fork.note


def test_the_pass_is_registered_only_inside_the_block():
    from executorch.backends.arm._passes import RewriteConvPass
    from executorch.backends.arm._passes.arm_pass_manager import _registered_pass_insertions

    before = {k: list(v.after_passes) for k, v in _registered_pass_insertions.items()}
    with sdk_tosa_passes() as narrow:
        assert narrow in _registered_pass_insertions[RewriteConvPass].after_passes
    after = {k: list(v.after_passes) for k, v in _registered_pass_insertions.items()}
    assert after == before
    with sdk_tosa_passes(enabled=False):
        assert RewriteConvPass not in _registered_pass_insertions or not any(
            isinstance(p, NarrowInt48ForksPass)
            for p in _registered_pass_insertions[RewriteConvPass].after_passes
        )


# ---- end to end (Vela, host reference) ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("model", INT16_MODELS, ids=IDS)
def test_int16_residual_add_is_inside_the_delegate(export_case, model, capsys):
    report = export_case(model, "int16", True, None).result.report
    assert report["boundary_audit"] == {"ok": True, "problems": []}
    delegated = [n["target"] for d in report["delegates"] for n in d["nodes"]]
    assert "aten.add.Tensor" in delegated
    assert "aten.convolution.default" in delegated
    # Nothing but the program's input Q and output DQs is left on the CPU.
    assert all("quantize_per_tensor" in n["target"] for n in report["cpu_nodes"])
    rewrites = [r for r in report["tosa_rewrites"] if r["rewritten"]]
    assert rewrites, "the INT48 fork was not hit: the test lost its point"
    conv_nodes = {n["name"] for d in report["delegates"] for n in d["nodes"]}
    assert all(r["node"] in conv_nodes and "convolution" in r["node"] for r in rewrites)

    code = main(["inspect", str(export_case(model, "int16", True, None).result.program_path)])
    capsys.readouterr()
    assert code == 0


@pytest.mark.slow
@pytest.mark.parametrize("model", INT16_MODELS, ids=IDS)
def test_int16_residual_host_run_matches_quantized_pytorch(export_case, model):
    case = export_case(model, "int16", True, None)
    inputs = case.quantized.loaded.example_inputs
    outputs = run_host(case.result.program_path, [t.numpy() for t in inputs])
    assert_matches_quantized_model(case, outputs)


@pytest.mark.slow
def test_int8_is_untouched_and_bit_exact(export_case):
    case = export_case(INVERTED_RESIDUAL, "int8", True, None)
    assert case.result.report["tosa_rewrites"] == []  # INT8 convolutions have no INT48 output
    inputs = case.quantized.loaded.example_inputs
    assert_matches_quantized_model(
        case, run_host(case.result.program_path, [t.numpy() for t in inputs])
    )


@pytest.fixture(scope="module")
def refused(export_case, tmp_path_factory):
    """The inverted residual lowered without the SDK's TOSA pass: Vela refuses conv_a."""
    from sdk.export.pipeline import lower

    quantized = export_case(INVERTED_RESIDUAL, "int16", True, None).quantized
    outdir = tmp_path_factory.mktemp("refused") / "out"
    with pytest.raises(ExportError) as info:
        lower(quantized, outdir, tosa_passes=False)
    return info.value, outdir


@pytest.mark.slow
def test_vela_refusal_names_the_partition_and_its_nodes(refused):
    error, outdir = refused
    message = error.message
    assert message.startswith("Vela compilation failed for NPU partition tag0 (")
    assert "Non-passthrough operation (Conv2D) could not run on NPU" in message
    for node in ("aten_convolution_default", "aten_convolution_default_1", "aten_add_tensor"):
        assert node in message
    assert "the Conv2D: aten_convolution_default or aten_convolution_default_1" in message
    assert "quantize_per_tensor" not in message  # the compute nodes, not their Q/DQ
    assert str(error).endswith(f"(log: {outdir.with_name('out.vela.log')})")
    assert not outdir.exists()  # a failed export leaves OUTDIR as it was


@pytest.mark.slow
def test_vela_refusal_keeps_vela_output_and_the_tosa_beside_outdir(refused):
    error, outdir = refused
    log = error.log_path
    assert log == outdir.with_name("out.vela.log") and log.is_file()
    text = log.read_text()
    assert text.startswith(f"error: {error.message}\n")
    assert "  aten_convolution_default  [aten.convolution.default]" in text
    assert "--accelerator-config=ethos-u55-128" in text
    assert "RuntimeError: Non-passthrough operation (Conv2D) could not run on NPU" in text
    assert "ethosu/vela/vela.py" in text  # the traceback through Vela
    tosa_file = outdir.with_name("out.vela.tosa")
    assert tosa_file.read_bytes()[4:8] == b"TOSA" and "rerun: vela " in text


@pytest.mark.slow
def test_a_later_successful_export_removes_the_failure_log(refused, export_case):
    from sdk.export.pipeline import lower

    error, outdir = refused
    quantized = export_case(INVERTED_RESIDUAL, "int16", True, None).quantized
    lower(quantized, outdir)
    assert not error.log_path.exists() and not outdir.with_name("out.vela.tosa").exists()
    assert json.loads((outdir / "report.json").read_text())["boundary_audit"]["ok"]


@pytest.mark.slow
def test_vela_argument_error_keeps_the_log(tmp_path, capsys):
    outdir = tmp_path / "out"
    code = main(["export", INVERTED_RESIDUAL, "-o", str(outdir), "--vela-arg=--no-such-flag"])
    err = capsys.readouterr().err
    assert code == 1
    (line,) = [ln for ln in err.splitlines() if ln.strip()]
    assert line.startswith("error: Vela compilation failed (exit 2)")
    assert line.endswith(f"(log: {tmp_path / 'out.vela.log'})")
    assert "unrecognized arguments: --no-such-flag" in (tmp_path / "out.vela.log").read_text()
    assert not outdir.exists()
