"""The Ethos-U55 delegate and driver on the host (register model, not hardware): the unit tests
run with the real delegated export, and the Vela payload parser under both fuzzers.

(The unit tests themselves, vela_payload_test, driver_test and backend_test, also run in
test_host_build.py with every other *_test.cpp.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sdk.program.pte import load_program

ETHOSU_TESTS = ("vela_payload_test", "driver_test", "backend_test")


def _payload(pte: Path) -> bytes:
    program = load_program(pte)
    return bytes(program.delegate_payload(program.plan.delegates[0]))


@pytest.mark.parametrize("name", ETHOSU_TESTS)
def test_ethosu_unit_tests_use_the_real_export(host_build: Path, programs, name: str):
    result = subprocess.run(
        [str(host_build / "tests" / name), "--programs", str(programs["delegate"].parent)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert result.stdout.strip().splitlines()[-1].endswith(" 0 failed")
    assert "skipped" not in result.stdout  # the delegated program was found and run
    assert "runtime error" not in result.stderr


def test_fuzz_vela_payload_mutation_loop(host_build: Path, programs):
    result = subprocess.run(
        [
            str(host_build / "fuzz_vela_payload"),
            "--iterations",
            "20000",
            "--seed",
            "7",
            str(programs["delegate"]),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert "fuzz_vela_payload: 20000 iterations" in result.stdout
    assert "1 of 1 seeds accepted" in result.stdout  # the real payload parses
    accepted = int(result.stdout.split(",")[1].split()[0])
    assert accepted > 100, result.stdout  # mutants get past the parser's first checks


def test_fuzz_vela_payload_libfuzzer(host_build: Path, programs, tmp_path: Path):
    binary = host_build / "fuzz_vela_payload_libfuzzer"
    assert binary.is_file(), "clang is not installed: the libFuzzer target was not built"
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "delegate.vela").write_bytes(_payload(programs["delegate"]))
    result = subprocess.run(
        [str(binary), "-runs=20000", "-seed=7", f"-artifact_prefix={tmp_path}/", str(corpus)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Done 20000 runs" in result.stderr
