"""The INT-boundary regression: stock ExecuTorch 1.5.1 exposes a float tensor at an INT-only
NPU delegate's boundary for a YOLO-style shared split; the SDK's partitioner does not.

For both patterns (shared split, YOLO11 attention) in INT16 and in INT8 with BMM forced onto
the CPU: the stock program is flagged (the test is sensitive to the bug), the SDK's program
has integer-only boundaries, passes `sdk inspect`, and runs on the host reference with the
quantized PyTorch model's results (INT8 exact; INT16 within the documented LSB tolerance).
"""

from __future__ import annotations

import json

import pytest

from sdk.cli.main import main
from sdk.errors import BoundaryError
from sdk.targets.host import run_host
from tests.support.markers import SHARED_EXPORTS
from tests.support.quantref import assert_matches_quantized_model

pytestmark = SHARED_EXPORTS

# INT16 as is (U55 rejects INT16 BMM, so it stays on the CPU) and INT8 with BMM forced onto
# the CPU, so the boundary stays put even if a later Vela learns INT16 BMM.
CPU_OPS = {"int16": None, "int8": ["aten.bmm"]}
CASES = [(m, q) for m in ("shared_split", "yolo_attention") for q in CPU_OPS]
INTEGER_DTYPES = {"Char", "Short", "Byte", "Int"}


@pytest.mark.parametrize(("model", "quant"), CASES)
def test_stock_partitioner_exposes_a_float_boundary(export_case, model, quant, capsys):
    case = export_case(model, quant, False, CPU_OPS[quant])
    audit = case.result.report["boundary_audit"]
    assert not audit["ok"], "the stock partitioner no longer triggers the bug"
    assert any("program says Float" in p for p in audit["problems"])

    code = main(["inspect", str(case.result.program_path), "--json"])
    out, err = capsys.readouterr()
    assert code == 3
    report = json.loads(out)
    bad = [
        c
        for d in report["delegates"]
        for site in d["call_sites"]
        for c in site["boundary"]
        if not c["ok"]
    ]
    assert bad and all(c["program"]["dtype"] == "Float" for c in bad)
    assert all(c["npu"]["dtype"] in ("Char", "Short") for c in bad)
    # The error names the tensor: delegate, direction, index and value.
    assert f"value {bad[0]['program']['value']}" in err

    with pytest.raises(BoundaryError, match="boundary audit"):
        run_host(
            case.result.program_path, [t.numpy() for t in case.quantized.loaded.example_inputs]
        )


@pytest.mark.parametrize(("model", "quant"), CASES)
def test_sdk_partitioner_keeps_boundaries_integer(export_case, model, quant, capsys):
    case = export_case(model, quant, True, CPU_OPS[quant])
    report = case.result.report
    assert report["boundary_audit"] == {"ok": True, "problems": []}
    assert report["boundary_fixes"], "the fix took nothing out: the bug shape was not hit"
    assert any("split_with_sizes" in f["target"] for f in report["boundary_fixes"])

    code = main(["inspect", str(case.result.program_path), "--json"])
    inspected = json.loads(capsys.readouterr().out)
    assert code == 0
    boundary = [c for d in inspected["delegates"] for s in d["call_sites"] for c in s["boundary"]]
    assert boundary and all(c["ok"] for c in boundary)
    assert all(c["program"]["dtype"] in INTEGER_DTYPES for c in boundary)
    assert {d["backend"] for d in inspected["delegates"]} == {"EthosUBackend"}
    # What the bug used to hide in the delegate now runs on the CPU.
    assert "aten::split_with_sizes_copy.out" in report["program"]["cpu_operators"]
    bmm = [n for n in report["cpu_nodes"] if n["target"] == "aten.bmm.default"]
    assert bmm and all(n["reason"] for n in bmm)


@pytest.mark.parametrize(("model", "quant"), CASES)
def test_host_run_matches_quantized_pytorch(export_case, model, quant):
    case = export_case(model, quant, True, CPU_OPS[quant])
    inputs = case.quantized.loaded.example_inputs
    outputs = run_host(case.result.program_path, [t.numpy() for t in inputs])
    assert_matches_quantized_model(case, outputs)


def test_inspect_flags_a_program_made_by_stock_executorch_alone(stock_program, capsys):
    """No SDK code in the lowering: ExecuTorch's own EthosUPartitioner, as users run it."""
    program, _ = stock_program("shared_split", "int16")
    assert main(["inspect", str(program)]) == 3
    out, err = capsys.readouterr()
    assert "boundary audit: FAILED" in out
    assert "program says Float" in err and "the NPU moves Short" in err
