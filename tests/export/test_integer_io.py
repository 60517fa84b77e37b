"""--io int: the program takes and returns integers, the report says with which figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sdk.errors import UsageError
from sdk.program.integer_io import IoQuant, check_io
from sdk.program.pte import load_program
from tests.support.integer_io import check_int_io_program, compiled_io_header

REPO = Path(__file__).resolve().parents[2]
TINY_CONV = str(REPO / "tests" / "ethosu" / "models" / "conv.py")


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
def test_export_model_io_int_on_a_tiny_conv(tmp_path):
    """The Python API's io="int" (sdk deploy's checks of the YOLO and INT16 programs run on
    the deploys' own programs: tests/deploy/test_integer_io.py)."""
    from sdk.export.pipeline import export_model

    floats = export_model(TINY_CONV, tmp_path / "float", quant="int8")
    ints = export_model(TINY_CONV, tmp_path / "int", quant="int8", io="int")
    check_int_io_program(floats.program_path, ints.program_path, "int8")
    # program_io.h says what report.json's io section and the program say, to a C compiler
    said = compiled_io_header(ints.outdir / "program_io.h", tmp_path)
    io = ints.report["io"]
    program = load_program(ints.program_path)
    for kind, quant, tensor in (
        ("INPUT0", io["inputs"][0], program.inputs()[0]),
        ("OUTPUT0", io["outputs"][0], program.outputs()[0]),
    ):
        assert said[kind]["scale"] == pytest.approx(quant["scale"], rel=1e-6)
        assert said[kind]["zero_point"] == quant["zero_point"]
        assert said[kind]["shape"] == list(tensor.shape)
        assert said[kind]["dim_order"] == list(tensor.dim_order)
        assert said[kind]["itemsize"] == 1 and said[kind]["bytes"] == tensor.nbytes


def test_program_io_h_element_types():
    from sdk.errors import ProgramError
    from sdk.program.io_header import c_type

    names = ["int8", "uint8", "int16", "int32", "int64", "float16", "float32", "bool"]
    assert [c_type(np.dtype(n)) for n in names] == [
        "int8_t", "uint8_t", "int16_t", "int32_t", "int64_t", "uint16_t", "float", "bool",
    ]  # fmt: skip
    with pytest.raises(ProgramError, match="no C type for complex64"):
        c_type(np.dtype("complex64"))
