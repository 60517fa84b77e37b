"""The seed regression end to end on QEMU with the virtual U55: the firmware's Ethos-U delegate
and driver (payload and boundary checks, scratch layout, registers over the link), the command
stream executed on the host (by default Vela's, on the functional U55 model; `tosa`: the
delegate's saved TOSA on the TOSA reference model).

For the YOLO-style shared split and the YOLO attention example, INT16 and INT8 (BMM forced to
the CPU): the firmware's outputs equal `sdk run --target host` bit for bit and the quantized
PyTorch model within the documented tolerance; the stock partitioner's programs are refused at
load by the firmware itself (no host audit in the way) with the boundary dtype message."""

from __future__ import annotations

import numpy as np
import pytest

from sdk.cli.main import main
from sdk.errors import TargetError
from sdk.targets.base import VIRTUAL_NPU_MODELLED, VIRTUAL_NPU_TIMING
from sdk.targets.host import run_host
from sdk.targets.run import run_on_target
from sdk.utils.npz import read_arrays
from tests.support.markers import SHARED_EXPORTS
from tests.support.quantref import assert_matches_quantized_model

pytestmark = [pytest.mark.slow, SHARED_EXPORTS]
BOARD = "corstone300"
CPU_OPS = {"int16": None, "int8": ["aten.bmm"]}
CASES = [(m, q) for m in ("shared_split", "yolo_attention") for q in CPU_OPS]


@pytest.mark.parametrize(("model", "quant"), CASES)
def test_firmware_with_the_virtual_npu_equals_the_host_reference(
    export_case, model, quant, tmp_path
):
    case = export_case(model, quant, True, CPU_OPS[quant])
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    report = run_on_target("qemu", BOARD, case.result.program_path, inputs, 300, tmp_path)
    host = run_host(case.result.program_path, inputs)
    assert len(report.outputs) == len(host)
    for got, want in zip(report.outputs, host, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert_matches_quantized_model(case, report.outputs)
    # the delegates' NPU time is the virtual U55's model, the firmware's PMCCNTR reads agreeing
    modelled = report.timing.npu_modelled
    assert report.timing.virtual_npu and modelled is not None and modelled.agrees
    assert modelled.complete and all(d.cycles > 0 for d in modelled.delegates)
    assert VIRTUAL_NPU_MODELLED in report.timing.describe()
    assert VIRTUAL_NPU_TIMING not in report.timing.describe()
    assert report.timing.instructions and report.timing.instructions > 0
    assert "NPU_REGS" in report.log_path.read_text()


@pytest.mark.parametrize(("model", "quant"), CASES)
def test_the_firmware_refuses_a_stock_program_naming_the_boundary_dtype(
    export_case, model, quant, tmp_path
):
    case = export_case(model, quant, False, CPU_OPS[quant])
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    with pytest.raises(TargetError) as caught:
        run_on_target("qemu", BOARD, case.result.program_path, inputs, 300, tmp_path)
    message = caught.value.message
    assert "firmware error" in message and "EthosUBackend" in message
    assert "program says Float" in message and "the NPU moves" in message


def test_sdk_run_on_an_export_folder_just_works(export_case, tmp_path, capsys):
    case = export_case("shared_split", "int16", True, None)
    outdir = case.result.outdir
    argv = ["run", "--board", BOARD, "--inputs", str(outdir / "example_inputs.npz")]
    assert main([*argv, "--target", "host", str(case.result.program_path), "-o",
                 str(tmp_path / "host.npz")]) == 0  # fmt: skip
    code = main([*argv, "--target", "qemu", str(case.result.program_path), "-o",
                 str(tmp_path / "qemu.npz"), "--expect", str(tmp_path / "host.npz")])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "bit-identical" in out and VIRTUAL_NPU_MODELLED in out and VIRTUAL_NPU_TIMING not in out
    for a, b in zip(read_arrays(tmp_path / "qemu.npz"), read_arrays(tmp_path / "host.npz")):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("quant", list(CPU_OPS))
def test_qemu_with_the_command_stream_executor_equals_the_host_with_it(
    export_case, quant, tmp_path
):
    """Issue 11's acceptance: the YOLO example on QEMU, its delegates run by the command-stream
    executor (Vela's command stream, no saved TOSA), equals `--target host` with the same one."""
    case = export_case("yolo_attention", quant, True, CPU_OPS[quant])
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    program = case.result.program_path
    report = run_on_target(
        "qemu", BOARD, program, inputs, 300, tmp_path, npu_executor="command-stream"
    )
    host = run_host(program, inputs, npu_executor="command-stream")
    for got, want in zip(report.outputs, host, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert "NPU_REGS" in report.log_path.read_text()
