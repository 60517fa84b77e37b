"""Operators whose export used to fail with a message a user could not act on (issue 20, from
ExecuTorch's own Ethos-U55 tests): each now exports, or fails in exactly one `error:` line
naming the operator and what to do."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sdk.cli.main import main
from sdk.targets.host import run_host
from tests.support.quantref import assert_matches_quantized_model

MODELS = Path(__file__).parent / "models" / "unlowerable_ops.py"


def _export_error(name: str, outdir: Path, capsys) -> str:
    """Export MODELS:name through the CLI, which must fail with one error line: that line."""
    code = main(["export", f"{MODELS}:{name}", "-o", str(outdir)])
    err = capsys.readouterr().err
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    assert not outdir.exists()
    return lines[0]


@pytest.mark.slow
def test_nan_made_inside_the_model_names_the_node(tmp_path, capsys):
    """Stock: 'torch.histc: range of [-nan, -nan] is not finite' from an observer."""
    line = _export_error("AcoshOfZero", tmp_path / "out", capsys)
    assert "node acosh (aten.acosh.default) produces NaN" in line
    assert "calibration sample 0" in line and "clamp" in line
    assert "histc" not in line


@pytest.mark.slow
@pytest.mark.parametrize("name", ["Erfinv", "LeftShift"])
def test_operators_outside_core_aten_run_on_the_npu(export_case, name):
    """Stock: 'Operator torch._ops.aten.erfinv.default is not in Core ATen opset' from the
    edge verifier, although the Arm backend lowers these (sdk.export.aten_rewrites)."""
    case = export_case(f"{MODELS}:{name}", "int8", True, None)
    report = case.result.report
    assert report["boundary_audit"]["ok"]
    compute = [n["target"] for n in report["cpu_nodes"] if "quantize" not in n["target"]]
    assert compute == [], compute  # the operator itself is in the delegate
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    assert_matches_quantized_model(case, run_host(case.result.program_path, inputs))


@pytest.mark.slow
def test_right_shift_is_placed_on_the_cpu_and_says_why(export_case, tmp_path, capsys):
    """On the U55 ExecuTorch lowers it to a rounding shift: the SDK keeps it on the CPU, where
    the host runtime and the firmware both have its kernel."""
    case = export_case(f"{MODELS}:RightShift", "int8", True, None)
    report = case.result.report
    op = "aten.bitwise_right_shift.Tensor"
    [placed] = report["lowering_workarounds"]
    assert placed["cpu_op"] == op and placed["found"] == ["bitwise_right_shift"]
    assert "rounding" in placed["why"] and report["cpu_ops_forced"] == []
    [node] = [n for n in report["cpu_nodes"] if n["target"] == op]
    assert node["reason"].startswith("moved onto the CPU by the SDK: ")
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    assert_matches_quantized_model(case, run_host(case.result.program_path, inputs))
    capsys.readouterr()  # the host runtime's own chatter
    assert main(["kernels", str(case.result.program_path)]) == 0  # the firmware runs it


def test_a_reduction_to_rank_0_keeps_its_dims_then_views():
    from sdk.export.aten_rewrites import keep_reduced_dims
    from sdk.export.model_loader import load_model

    loaded = load_model(f"{MODELS}:AminRank1")
    graph = torch.export.export(loaded.module, loaded.example_inputs).module()
    want = graph(*loaded.example_inputs)
    assert keep_reduced_dims(graph) == 1
    [amin] = [n for n in graph.graph.nodes if n.target == torch.ops.aten.amin.default]
    assert amin.args[2] is True and amin.meta["val"].shape == (1,)
    got = graph(*loaded.example_inputs)
    assert got.shape == () and got == want


@pytest.mark.slow
@pytest.mark.parametrize("name", ["AmaxRank1", "AminRank1", "AminRank4AllDims"])
def test_a_reduction_to_rank_0_runs_on_the_npu(export_case, capsys, name):
    """Stock: 'InternalError: While executing %tosa_const_shape_default' (a rank-0 shape)."""
    case = export_case(f"{MODELS}:{name}", "int8", True, None)
    report = case.result.report
    assert len(report["delegates"]) == 1
    [view] = [n for n in report["cpu_nodes"] if "quantize" not in n["target"]]
    assert view["target"] == "aten.view_copy.default" and "rank-0" in view["reason"]
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    assert_matches_quantized_model(case, run_host(case.result.program_path, inputs))
    capsys.readouterr()
    assert main(["kernels", str(case.result.program_path)]) == 0  # the firmware runs it


@pytest.mark.slow
def test_export_says_when_the_firmware_cannot_run_the_cpu_part(tmp_path, capsys):
    assert main(["export", f"{MODELS}:TopK", "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "WARNING: no CPU kernel for aten::topk.values" in out
    program = tmp_path / "out" / "model.pte"
    assert main(["kernels", str(program)]) != 0  # `sdk kernels` names it too, in one line
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: no CPU kernel for aten::topk.values")
    assert len(err.splitlines()) == 1


def test_a_fill_like_a_tensor_does_not_read_it():
    from sdk.export.aten_rewrites import fills_without_source
    from sdk.export.model_loader import load_model

    loaded = load_model(f"{MODELS}:WhereAboveZerosLike")
    graph = torch.export.export(loaded.module, loaded.example_inputs).module()
    want = graph(*loaded.example_inputs)
    assert fills_without_source(graph) == 1
    [full] = [n for n in graph.graph.nodes if n.target == torch.ops.aten.full.default]
    assert full.args == ([2, 2], 0) and full.kwargs["dtype"] == torch.float32
    assert torch.equal(graph(*loaded.example_inputs), want)


@pytest.mark.slow
def test_a_fill_like_a_tensor_exports_without_an_unread_delegate_input(export_case):
    """Stock: the delegate that makes the zeros takes x, which its NPU program does not read;
    the boundary audit refused the program ('the call passes 2 values but the NPU has 0
    inputs + 1 outputs')."""
    case = export_case(f"{MODELS}:WhereAboveZerosLike", "int8", True, None)
    assert case.result.report["boundary_audit"]["ok"]
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    assert_matches_quantized_model(case, run_host(case.result.program_path, inputs))


@pytest.mark.slow
def test_an_int64_index_input_reaches_gather_unnarrowed(export_case):
    """Stock: the index reached gather as int32, which ExecuTorch's kernel (and the firmware's)
    refuses: 'index has dtype Int'."""
    case = export_case(f"{MODELS}:GatherByInput", "int8", True, None)
    targets = [n["target"] for n in case.result.report["cpu_nodes"]]
    assert targets == ["aten.gather.default"], targets
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    [got] = run_host(case.result.program_path, inputs)
    x, index = case.quantized.loaded.example_inputs
    assert (got == torch.gather(x, 1, index).numpy()).all()


def test_a_nested_cond_is_refused_naming_the_node(tmp_path, capsys):
    """Stock: 'An error occurred when running the DuplicateDQPass pass after the following
    passes: []' from torchao, naming nothing."""
    line = _export_error("NestedCond", tmp_path / "out", capsys)
    assert "node cond (in cond): a torch.cond inside a torch.cond branch" in line
    assert "DuplicateDQPass" in line and "one level of torch.cond" in line
