"""ExecuTorch's BundledProgram (`.bpte`): what the SDK writes ExecuTorch's own runtime reads and
verifies, and `sdk run X.bpte` runs every test case and compares (a wrong expectation fails)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main
from sdk.program.bundle import BundleCase, read_bundle, write_bundle
from sdk.targets.host import run_host
from tests.support.fwprograms import random_inputs


@pytest.fixture
def bundle(programs, tmp_path) -> tuple[Path, list[BundleCase]]:
    pte = programs["add"]
    cases = []
    for seed in (1, 2):
        inputs = random_inputs(pte, seed=seed)
        cases.append(BundleCase(inputs, run_host(pte, inputs)))
    return write_bundle(pte, cases, tmp_path / "add.bpte"), cases


def test_executorch_reads_and_verifies_the_sdk_s_bundle(bundle, programs):
    import executorch.extension.pybindings.portable_lib as runtime

    path, cases = bundle
    loaded = runtime._load_bundled_program_from_buffer(path.read_bytes())
    for i, case in enumerate(cases):  # ExecuTorch runs each case and checks our expectation
        (got,) = loaded.verify_result_with_bundled_expected_output("forward", i)
        np.testing.assert_array_equal(got.numpy(), case.expected[0])
    program, read = read_bundle(path)
    assert program == programs["add"].read_bytes() and len(read) == 2
    np.testing.assert_array_equal(read[1].inputs[0], cases[1].inputs[0])


def test_sdk_run_checks_every_case_and_a_wrong_expectation_fails(
    bundle, programs, tmp_path, capsys
):
    path, cases = bundle
    assert main(["run", str(path), "-o", str(tmp_path / "out.npz")]) == 0
    out = capsys.readouterr().out
    assert "test case 0" in out and "test case 1" in out and "identical" in out
    wrong = [BundleCase(c.inputs, [c.expected[0] + 1.0]) for c in cases]
    bad = write_bundle(programs["add"], wrong, tmp_path / "wrong.bpte")
    assert main(["run", str(bad), "-o", str(tmp_path / "out2.npz")]) == 4
    assert "test case 0" in capsys.readouterr().err


def test_a_damaged_or_empty_bundle_is_one_line(programs, tmp_path, capsys):
    bad = tmp_path / "bad.bpte"
    bad.write_bytes(b"not a bundle at all")
    assert main(["run", str(bad), "-o", str(tmp_path / "o.npz")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a readable bundled program" in err[0], err
    empty = write_bundle(programs["add"], [], tmp_path / "empty.bpte")
    assert main(["run", str(empty), "-o", str(tmp_path / "o.npz")]) != 0  # nothing to compare
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no test cases" in err[0], err


@pytest.mark.slow
def test_a_bundle_runs_on_qemu_the_firmware_reading_its_program_in_place(bundle, tmp_path, capsys):
    """The .bpte is preloaded whole; LOAD_SLOT makes the firmware find the program inside it
    (runner::program_in_bundle) and check its SHA-256: no LOAD, no copy."""
    path, _ = bundle
    code = main(["run", "--target", "qemu", str(path), "-o", str(tmp_path / "out.npz")])
    assert code == 0
    assert capsys.readouterr().out.count("bit-identical") == 2
    log = (tmp_path / "out.qemu" / "link.log").read_text()
    assert "LOAD_SLOT" in log and "LOAD_BEGIN" not in log
