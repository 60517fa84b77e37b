"""Operators whose export used to fail with a message a user could not act on (issue 20, from
ExecuTorch's own Ethos-U55 tests): each now exports, or fails in exactly one `error:` line
naming the operator and what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdk.cli.main import main

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
