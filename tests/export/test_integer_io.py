"""--io int: the program takes and returns integers, the report says with which figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sdk.errors import UsageError
from sdk.program.integer_io import IoQuant, IoSection, check_io
from sdk.program.pte import load_program

REPO = Path(__file__).resolve().parents[2]

QDQ = ("quantized_decomposed::quantize_per_tensor", "quantized_decomposed::dequantize_per_tensor")


def boundary_qdq(program) -> list[str]:
    """Quantize/dequantize calls that read a program input or write a program output."""
    plan = program.plan
    ins, outs = set(plan.inputs), set(plan.outputs)
    found = []
    for _, call in program.kernel_calls():
        name = plan.operators[call.op_index].name
        if name in QDQ and (int(call.args[0]) in ins or int(call.args[-1]) in outs):
            found.append(name)
    return found


def test_quantize_dequantize_round_trip():
    q = IoQuant("int8", 0.5, 3, -128, 127)
    ints = q.quantize(np.array([0.0, 1.0, -1.25, 1000.0], dtype=np.float32))
    assert ints.dtype == np.int8 and ints.tolist() == [3, 5, 1, 127]
    assert q.dequantize(ints).tolist() == [0.0, 1.0, -1.0, 62.0]
    with pytest.raises(UsageError, match="int8 value was expected"):
        q.dequantize(np.zeros(2, np.int16))


def test_bad_io_mode_is_one_line():
    with pytest.raises(UsageError, match="--io double: one of float, int"):
        check_io("double")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "quant", "dtype"),
    [
        ("examples/yolo_attention.py", "int8", "int8"),
        ("examples/shared_split.py", "int16", "int16"),
    ],
)
def test_int_io_program_has_no_boundary_qdq(tmp_path, model, quant, dtype):
    from sdk.export.pipeline import export_model
    from sdk.targets.host import run_host
    from sdk.utils.npz import read_arrays

    floats = export_model(str(REPO / model), tmp_path / "float", quant=quant)
    ints = export_model(str(REPO / model), tmp_path / "int", quant=quant, io="int")
    assert boundary_qdq(load_program(floats.program_path))  # the float program has them
    program = load_program(ints.program_path)
    assert boundary_qdq(program) == []
    assert ints.report["boundary_audit"]["ok"]
    io = IoSection.from_json(ints.report["io"])
    assert io.mode == "int" and floats.report["io"]["mode"] == "float"
    for q, t in zip([*io.inputs, *io.outputs], [*program.inputs(), *program.outputs()]):
        assert q is not None and q.dtype == dtype and q.scale > 0
        assert t.dtype == {"int8": "Char", "int16": "Short"}[dtype]
    # the host reference runs it: its dequantized outputs are the float program's
    x = read_arrays(ints.outdir / "example_inputs.npz")
    assert [a.dtype for a in x] == [np.dtype(dtype)] * len(x)
    got = io.dequantize_outputs(run_host(program, x))
    want = run_host(
        load_program(floats.program_path), read_arrays(floats.outdir / "example_inputs.npz")
    )
    for g, w in zip(got, want):
        assert np.abs(g - w).max() <= 1.01 * max(q.scale for q in io.outputs)
