"""The Ethos-U55 delegate and driver on the host (register model, not hardware): the unit tests
run with the real delegated export, and the Vela payload parser under both fuzzers.

(The unit tests themselves, vela_payload_test, driver_test and backend_test, also run in
test_host_build.py with every other *_test.cpp.)
"""

from __future__ import annotations

import re
import shutil
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


def _seed_coverage(binary: Path, seed: bytes, tmp_path: Path) -> int:
    """The edges libFuzzer reached running one seed once (-runs=0), after checking it ran."""
    corpus = tmp_path / f"corpus{len(list(tmp_path.iterdir()))}"
    corpus.mkdir()
    (corpus / "seed").write_bytes(seed)
    result = subprocess.run(
        [
            str(binary),
            "-runs=0",
            "-print_final_stats=1",
            f"-artifact_prefix={tmp_path}/",
            str(corpus),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    inited = re.search(r"INITED cov: (\d+)", result.stderr)
    assert inited, result.stderr[-4000:]
    return int(inited.group(1))


def test_fuzz_vela_payload_libfuzzer_cuts_payloads_from_pte_seeds(
    host_build: Path, programs, tmp_path: Path
):
    """A .pte seed reaches the payload parser as its payload does (bench/fuzz.py seeds the
    target with .pte files); garbage and a .pte without a delegate stop before it."""
    if not any(shutil.which(c) for c in ("clang++", "clang++-14", "clang++-15", "clang++-16")):
        pytest.skip("clang++ is not installed: no libFuzzer build")
    binary = host_build / "fuzz_vela_payload_libfuzzer"
    assert binary.is_file()
    pte = programs["delegate"].read_bytes()
    from_pte = _seed_coverage(binary, pte, tmp_path)
    from_payload = _seed_coverage(binary, _payload(programs["delegate"]), tmp_path)
    garbage = _seed_coverage(binary, bytes(range(256)) * 4, tmp_path)
    no_delegate = _seed_coverage(binary, programs["add"].read_bytes(), tmp_path)
    assert from_pte > garbage + 20, (from_pte, garbage)
    assert from_pte > no_delegate + 20, (from_pte, no_delegate)
    assert from_pte >= from_payload - 2, (from_pte, from_payload)
