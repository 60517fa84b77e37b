"""The host build of the runtime and runner (gcc, ASan + UBSan): unit tests, fuzzing, runner."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from sdk.environment.paths import FIRMWARE_DIR
from tests.support.fwprograms import oracle, random_inputs

UNIT_TESTS = sorted(p.stem for p in FIRMWARE_DIR.glob("**/*_test.cpp"))
FUZZ_SEEDS = ("id", "add", "quant_mix", "bmm", "delegate")  # programs the fuzzers start from


def test_there_are_unit_tests():
    assert {"program_test", "method_test", "runner_test"} <= set(UNIT_TESTS)


@pytest.mark.parametrize("name", UNIT_TESTS)
def test_unit_tests_pass_under_sanitizers(host_build: Path, programs, name: str):
    folder = programs["add"].parent
    result = subprocess.run(
        [str(host_build / "tests" / name), "--programs", str(folder)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert summary.endswith(" 0 failed"), summary
    assert "runtime error" not in result.stderr  # UBSan reports
    assert "FAIL" not in result.stdout


def test_fuzz_thousands_of_mutated_programs(host_build: Path, programs, tmp_path: Path):
    from sdk.program.bundle import BundleCase, write_bundle
    from sdk.targets.host import run_host
    from tests.support.fwprograms import random_inputs

    # A .bpte seed too: mutants of a bundle go through runner::program_in_bundle first.
    add = programs["add"]
    inputs = random_inputs(add)
    bundle = write_bundle(add, [BundleCase(inputs, run_host(add, inputs))], tmp_path / "a.bpte")
    seeds = [str(programs[name]) for name in FUZZ_SEEDS] + [str(bundle)]
    result = subprocess.run(
        [str(host_build / "fuzz_program"), "--iterations", "5000", "--seed", "7", *seeds],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert "fuzz_program: 5000 iterations" in result.stdout
    # Some mutants must get past verification, or the fuzzing never reaches the method loader.
    passed = int(result.stdout.split(",")[1].split()[0])
    assert passed > 100, result.stdout
    assert f"{len(seeds)} of {len(seeds)} seeds passed verification" in result.stdout


def test_host_link_matches_executorch_bit_for_bit(host_run, programs):
    pte = programs["quant_mix"]
    inputs = random_inputs(pte, seed=3)
    outputs = host_run(pte, inputs).outputs()
    expected = oracle(pte, inputs)
    assert len(outputs) == len(expected) == 2
    for got, want in zip(outputs, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_host_link_reports_input_mismatch(host_run, programs):
    wrong = [np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32)]
    result = host_run(programs["add"], wrong)
    assert result.record.result.code == 10  # InputMismatch
    name, reason = result.error()
    assert name == "InputMismatch"
    assert "input 1: shape [3,2] given, the program takes [2,3]" in reason


def test_host_link_reports_missing_operator(host_run, programs):
    pte = programs["cumsum"]
    result = host_run(pte, random_inputs(pte))
    assert result.record.result.code == 5  # OperatorMissing
    assert "aten::cumsum.out" in result.error()[1]


def test_libfuzzer_target(host_build: Path, programs, tmp_path: Path):
    binary = host_build / "fuzz_program_libfuzzer"
    # scripts/bootstrap.sh installs clang; without it this is a missing install step.
    assert binary.is_file(), "clang is not installed: the libFuzzer target was not built"
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in FUZZ_SEEDS:
        (corpus / f"{name}.pte").write_bytes(programs[name].read_bytes())
    result = subprocess.run(
        [str(binary), "-runs=5000", "-seed=7", f"-artifact_prefix={tmp_path}/", str(corpus)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Done 5000 runs" in result.stderr
