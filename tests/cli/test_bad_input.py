"""Bad input to the CLI: one clear `error:` line, a non-zero exit, nothing half-written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main

REPO = Path(__file__).resolve().parents[2]
SHARED_SPLIT = REPO / "examples" / "shared_split.py"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(err: str, *fragments: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def assert_untouched(outdir: Path, before: dict[str, bytes] | None) -> None:
    if before is None:
        assert not outdir.exists()
    else:
        assert {p.name: p.read_bytes() for p in outdir.iterdir()} == before
    assert not list(outdir.parent.glob(f".{outdir.name}.staging-*"))


MODEL_FILES = {
    "raises.py": ("import torch\n\ndef model():\n    return torch.nn.Identity()\n\n1 / 0\n", 1),
    "no_model.py": ("import torch\n\ndef example_inputs():\n    return (torch.ones(1),)\n", 1),
    "no_inputs.py": ("import torch\n\ndef model():\n    return torch.nn.ReLU()\n", 1),
    "not_a_module.py": ("def model():\n    return 3\n\ndef example_inputs():\n    return ()\n", 1),
}
EXPECTED = {
    "raises.py": ("raised ZeroDivisionError", "(line 6)"),
    "no_model.py": ("no model() found",),
    "no_inputs.py": ("no example_inputs() found",),
    "not_a_module.py": ("not a torch.nn.Module",),
}


@pytest.mark.parametrize("name", sorted(MODEL_FILES))
@pytest.mark.parametrize("existing", [False, True], ids=["new-outdir", "existing-outdir"])
def test_bad_model_files(tmp_path, capsys, name, existing):
    source, expected_code = MODEL_FILES[name]
    model = tmp_path / name
    model.write_text(source)
    outdir = tmp_path / "out"
    before = None
    if existing:
        outdir.mkdir()
        (outdir / "model.pte").write_bytes(b"previous export")
        before = {"model.pte": b"previous export"}
    code, _, err = run_cli(capsys, "export", model, "-o", outdir)
    assert code == expected_code
    assert_one_error_line(err, name, *EXPECTED[name])
    assert_untouched(outdir, before)


def test_missing_model_file(tmp_path, capsys):
    code, _, err = run_cli(capsys, "export", tmp_path / "nope.py", "-o", tmp_path / "out")
    assert code == 1
    assert_one_error_line(err, "nope.py", "model file not found")
    assert_untouched(tmp_path / "out", None)


def test_unknown_name_in_model_spec(tmp_path, capsys):
    code, _, err = run_cli(capsys, "export", f"{SHARED_SPLIT}:Nope", "-o", tmp_path / "out")
    assert code == 1
    assert_one_error_line(err, "defines no 'Nope'")


def test_unknown_npu_config(tmp_path, capsys):
    code, _, err = run_cli(
        capsys, "export", SHARED_SPLIT, "-o", tmp_path / "out", "--npu", "ethos-u99-7"
    )
    assert code == 2
    assert_one_error_line(err, "unknown NPU configuration 'ethos-u99-7'", "ethos-u55-128")
    assert_untouched(tmp_path / "out", None)


def test_export_target_names_npu(tmp_path, capsys):
    """`--target` is where a program runs; export says the NPU configuration is --npu."""
    code, _, err = run_cli(
        capsys, "export", SHARED_SPLIT, "-o", tmp_path / "out", "--target", "ethos-u55-64"
    )
    assert code == 2
    assert_one_error_line(err, "--npu ethos-u55-64", "where a program runs")
    assert_untouched(tmp_path / "out", None)


def test_unknown_quantization(tmp_path, capsys):
    code, _, err = run_cli(capsys, "export", SHARED_SPLIT, "-o", tmp_path / "o", "--quant", "int4")
    assert code == 2
    assert_one_error_line(err, "unknown quantization 'int4'")


def test_vela_failure(tmp_path, capsys):
    outdir = tmp_path / "out"
    code, _, err = run_cli(
        capsys, "export", SHARED_SPLIT, "-o", outdir, "--vela-arg=--no-such-vela-flag"
    )
    assert code == 1
    assert_one_error_line(err, "Vela compilation failed", "--no-such-vela-flag")
    assert_untouched(outdir, None)


def test_bad_calibration_file(tmp_path, capsys):
    calibration = tmp_path / "cal.npz"
    np.savez(calibration, np.zeros((2, 1, 3, 9, 9), np.float32))
    code, _, err = run_cli(
        capsys, "export", SHARED_SPLIT, "-o", tmp_path / "o", "--calibration", calibration
    )
    assert code == 2
    assert_one_error_line(err, "--calibration", "arr_0 is float32 [2, 1, 3, 9, 9]", "[1, 3, 4, 4]")


@pytest.mark.parametrize(("value", "name"), [(np.nan, "NaN"), (-np.inf, "Inf")])
def test_a_non_finite_calibration_sample_is_refused(tmp_path, capsys, value, name):
    calibration = tmp_path / "cal.npz"
    samples = np.zeros((3, 1, 3, 4, 4), np.float32)
    samples[2, 0, 1, 2, 3] = value
    np.savez(calibration, samples)
    code, _, err = run_cli(
        capsys, "export", SHARED_SPLIT, "-o", tmp_path / "o", "--calibration", calibration
    )
    assert code == 2
    assert_one_error_line(err, f"arr_0 sample 2 (input 0) holds {name}")
    assert_untouched(tmp_path / "o", None)


def test_finite_calibration_samples_are_read_with_standard_strides(tmp_path):
    """The contrast of the refusal above: finite samples pass, each a row-major tensor."""
    import torch

    from sdk.export.pipeline import read_calibration

    calibration = tmp_path / "cal.npz"
    np.savez(calibration, np.arange(2 * 48, dtype=np.float32).reshape(2, 1, 3, 4, 4))
    samples = read_calibration(calibration, (torch.zeros(1, 3, 4, 4),))
    assert len(samples) == 2
    assert samples[1][0].stride() == (48, 16, 4, 1)
    assert float(samples[1][0][0, 0, 0, 0]) == 48.0


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "not an ExecuTorch program"),
        (b"\x00" * 64, "not an ExecuTorch program"),
        (b"\x1c\x00\x00\x00ET12" + b"\xff" * 200, "corrupt program"),
    ],
    ids=["empty", "zeros", "garbage-after-identifier"],
)
def test_inspect_corrupt_program(tmp_path, capsys, content, fragment):
    program = tmp_path / "bad.pte"
    program.write_bytes(content)
    code, _, err = run_cli(capsys, "inspect", program)
    assert code == 1
    assert_one_error_line(err, "bad.pte", fragment)


def test_inspect_missing_program(tmp_path, capsys):
    code, _, err = run_cli(capsys, "inspect", tmp_path / "missing.pte")
    assert code == 1
    assert_one_error_line(err, "no such program file")


def test_console_script_reports_errors_in_one_line(tmp_path):
    """The installed `sdk` entry point, as a user runs it (no traceback)."""
    sdk = Path(sys.executable).parent / "sdk"
    result = subprocess.run(
        [str(sdk), "inspect", str(tmp_path / "missing.pte")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert_one_error_line(result.stderr, "no such program file")


def test_a_cpu_op_matching_nothing_names_the_closest(tmp_path, capsys):
    """`--cpu-op` is checked: a name no operator has is an error, not silently 'forced'."""
    code, _, err = run_cli(
        capsys, "export", SHARED_SPLIT, "-o", tmp_path / "out", "--cpu-op", "aten.bmmm"
    )
    assert code == 2
    assert_one_error_line(err, "--cpu-op aten.bmmm matches no operator", "aten.bmm.default")
    assert_untouched(tmp_path / "out", None)
