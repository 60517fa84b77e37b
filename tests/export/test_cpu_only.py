"""A model with nothing for the NPU exports (and deploys) as a CPU-only program, said so in the
report and on the terminal, never a traceback about a Vela folder that was never made."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from sdk.cli.main import main
from sdk.export import CPU_ONLY
from sdk.program.audit import audit_program
from sdk.program.pte import load_program
from sdk.utils.npz import read_arrays, write_arrays

MODELS = Path(__file__).parent / "models"
SQUEEZE = MODELS / "squeeze_only.py"
SIGMOID = MODELS / "sigmoid_only.py"  # one NPU operator: the contrast

pytestmark = pytest.mark.slow  # each test exports (Vela, or the attempt at it)


@pytest.fixture(scope="module")
def squeeze_export(tmp_path_factory) -> tuple[int, str, Path]:
    """`sdk export` of the squeeze model: exit code, stdout, OUTDIR."""
    import contextlib
    import io

    outdir = tmp_path_factory.mktemp("squeeze") / "out"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["export", str(SQUEEZE), "-o", str(outdir)])
    return code, out.getvalue(), outdir


def test_a_model_with_nothing_for_the_npu_exports_a_cpu_only_program(squeeze_export):
    code, out, outdir = squeeze_export
    assert code == 0, out
    report = json.loads((outdir / "report.json").read_text())
    assert report["cpu_only"] is True and report["delegates"] == []
    program = load_program(outdir / "model.pte")
    assert audit_program(program).delegates == []
    assert "aten::squeeze_copy.dims_out" in report["program"]["cpu_operators"]
    assert CPU_ONLY in out and "Vela estimate" not in out
    assert not list(outdir.parent.glob(".out.staging-*"))  # the staging folder is gone


def test_the_cpu_only_program_computes_the_model(squeeze_export, tmp_path):
    """`sdk run --target host` of the program equals the model (a squeeze of int8 values:
    exact up to the input's quantization)."""
    _, _, outdir = squeeze_export
    (x,) = read_arrays(outdir / "example_inputs.npz")
    write_arrays(tmp_path / "in.npz", [x])
    argv = ["run", "--target", "host", str(outdir / "model.pte")]
    assert main([*argv, "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz")]) == 0
    (got,) = read_arrays(tmp_path / "out.npz")
    want = torch.from_numpy(x).squeeze(0).numpy()
    assert got.shape == want.shape == (4, 8)
    step = float(np.abs(x).max()) / 127  # int8 symmetric: one step of the input's scale
    assert np.abs(got - want).max() <= step
    # A wrong answer (the unsqueezed input, or another tensor) is told apart.
    assert np.abs(got - want[::-1]).max() > step


def test_a_model_with_an_npu_partition_is_not_called_cpu_only(tmp_path, capsys):
    assert main(["export", str(SIGMOID), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["cpu_only"] is False and len(report["delegates"]) == 1
    assert CPU_ONLY not in out and "Vela estimate" in out


def test_a_cpu_only_model_deploys_on_qemu(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SDK_FVP", str(tmp_path / "no-fvp-here"))
    code = main(["deploy", "--board", "corstone300", "--target", "qemu", "--no-cache", "--quiet",
                 str(SQUEEZE), "-o", str(tmp_path / "deploy")])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"deploy passed: {SQUEEZE} on corstone300/qemu ({CPU_ONLY})" in out
    report = json.loads((tmp_path / "deploy" / "deploy.json").read_text())
    assert report["passed"] and report["placement"]["npu"] == []
    assert {c["op"] for c in report["placement"]["cpu"]} >= {"aten::squeeze_copy.dims_out"}
