"""`sdk deploy --io int` on QEMU: it passes, its report carries the I/O figures, its program
has no quantize/dequantize at its edges (the float program has) and the profile shows fewer
of their instructions; a wrong integer output fails it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main
from sdk.deploy.verdict import HOST_MISMATCH, judge_outputs
from sdk.evaluation.accuracy import Tolerance
from sdk.program.integer_io import IoQuant, IoSection
from tests.support.integer_io import check_int_io_program

REPO = Path(__file__).resolve().parents[2]


def qdq_instructions(report: dict) -> int:
    return sum(
        o["instructions"] or 0 for o in report["profile"]["operators"] if "quantize" in o["what"]
    )


def test_wrong_integer_output_fails_the_verdict():
    q = IoQuant("int8", 0.1, 0, -128, 127)
    io = IoSection("int", (q,), (q,))
    host = [np.array([10, 20, 30], np.int8)]
    refs = {
        "quantized": [np.array([1.0, 2.0, 3.0], np.float32)],
        "fp32": [np.array([1.0, 2.0, 3.0], np.float32)],
    }
    checks, failure, _ = judge_outputs(host, host, refs, "int8", Tolerance(), 1e-6, [0.1], io)
    assert failure is None and all(c.ok for c in checks)
    wrong = [np.array([10, 21, 30], np.int8)]
    checks, failure, _ = judge_outputs(wrong, host, refs, "int8", Tolerance(), 1e-6, [0.1], io)
    assert failure is not None and failure.startswith(HOST_MISMATCH)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "quant"),
    [("examples/yolo_attention.py", "int8"), ("examples/shared_split.py", "int16")],
)
def test_deploy_int_io_on_qemu(tmp_path, monkeypatch, model, quant):
    monkeypatch.setenv("SDK_FVP", str(tmp_path / "no-fvp"))
    reports = {}
    for io in ("float", "int"):
        out = tmp_path / io
        code = main([
            "deploy", str(REPO / model), "--target", "qemu", "--quant", quant, "--io", io,
            "-o", str(out), "--json", str(out / "r.json"), "--quiet",
        ])  # fmt: skip
        reports[io] = json.loads((out / "r.json").read_text())
        assert code == 0 and reports[io]["passed"], reports[io]["failure"]
    io_section = reports["int"]["io"]
    assert io_section["mode"] == "int"
    assert all(
        e["scale"] > 0 and "zero_point" in e for e in io_section["inputs"] + io_section["outputs"]
    )
    assert reports["int"]["outputs"][0]["dtype"] == {"int8": "int8", "int16": "int16"}[quant]
    assert qdq_instructions(reports["int"]) < qdq_instructions(reports["float"])
    programs = [Path(reports[io]["files"]["program"]) for io in ("float", "int")]
    check_int_io_program(*programs, quant)


def test_io_is_part_of_the_program_key():
    from sdk.cache import digest
    from sdk.deploy.keys import program_key_parts
    from sdk.export.model_loader import ModelSpec

    spec = ModelSpec.parse(str(REPO / "examples" / "shared_split.py"))
    keys = {io: digest(program_key_parts(spec, None, "ethos-u55-128", "int8", [], None, io))
            for io in ("float", "int")}  # fmt: skip
    assert keys["float"] != keys["int"]
