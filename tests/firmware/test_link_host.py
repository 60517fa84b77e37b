"""The host link's firmware side on the host build (ASan + UBSan): host_link over TCP, driven
by the SDK's own session (sdk.link.session) through pyserial's socket:// exactly like a board;
and the link fuzzers. The unit tests (firmware/link/*_test.cpp) run in test_host_build.py."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from sdk.errors import FirmwareRefused, TargetError
from sdk.link import protocol as p
from sdk.link.protocol import Kind
from sdk.link.session import LinkSession
from sdk.program.pte import load_program
from sdk.targets.linked import run_linked
from tests.support import hostlink
from tests.support.fwprograms import oracle, random_inputs

FUZZ_SEEDS = ("id", "add", "quant_mix", "bmm")


@pytest.fixture
def host_link(host_build: Path, tmp_path: Path) -> Iterator[LinkSession]:
    with hostlink.host_link(host_build, tmp_path / "link.log") as session:
        yield session


def test_host_link_runs_programs_like_executorch(host_link: LinkSession, programs):
    info = host_link.connect()
    assert info.protocol_version == 1 and info.max_payload == 4096 and not info.has_npu
    for name in ("quant_mix", "bmm", "add", "quant_mix"):
        pte = programs[name]
        inputs = random_inputs(pte, seed=5)
        outputs, record = run_linked(host_link, load_program(pte), inputs, iterations=3)
        expected = oracle(pte, inputs)
        for got, want in zip(outputs, expected, strict=True):
            if got.dtype.kind == "f":  # the host build's kernels are ExecuTorch's semantics
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
            else:
                np.testing.assert_array_equal(got, want)
        assert record.result.tick_hz == 1_000_000_000


def test_retransmissions_get_the_kept_response_and_a_stale_session_an_error(
    host_link: LinkSession, programs
):
    host_link.connect()
    pte = programs["add"]
    run_linked(host_link, load_program(pte), random_inputs(pte, 1))
    runs = host_link.stats().runs
    # The same RUN frame twice: answered twice, executed once.
    host_link._seq += 1
    frame = p.encode_frame(Kind.RUN, host_link._seq, host_link.session, p.run(1))
    host_link.port.write(frame + frame)
    assert host_link._await(Kind.RUN, host_link._seq, 5.0) is not None
    assert host_link._await(Kind.RUN, host_link._seq, 5.0) is not None
    assert host_link.stats().runs == runs + 1
    # Another session's request: an ERROR carrying the firmware's session, read as a reset.
    real, host_link.session = host_link.session, 99
    with pytest.raises(TargetError, match="the firmware reset"):
        host_link.request_info()
    # Not yet connected, the same request is simply refused, with the reason.
    host_link.connected = False
    with pytest.raises(FirmwareRefused, match=r"BadMessage.*session"):
        host_link.request_info()
    host_link.session = real
    host_link.connected = True
    assert host_link.request_info().program_loaded


def test_what_a_failed_run_left_is_read_only_when_asked_and_only_after_a_failure(
    host_link: LinkSession, programs
):
    """(A failed run's outputs, asked for: tests/kernels `refused` reads them after every
    refusal and checks they are untouched.)"""
    host_link.connect()
    pte = programs["add"]
    run_linked(host_link, load_program(pte), random_inputs(pte, 1))
    with pytest.raises(FirmwareRefused, match="the last RUN did not fail"):
        host_link.get_output(0, after_failure=True)
    assert host_link.get_output(0).nbytes == 24


def test_the_profile_has_one_event_per_instruction_of_the_last_run(
    host_link: LinkSession, programs
):
    host_link.connect()
    program = load_program(programs["quant_mix"])
    with pytest.raises(FirmwareRefused, match="PROFILE: no RUN"):
        host_link.profile()  # nothing ran yet
    run_linked(host_link, program, random_inputs(programs["quant_mix"], 1), iterations=2)
    header, events = host_link.profile()
    instructions = len(program.plan.chains[0].instructions)
    assert header["total"] == len(events) == instructions and header["dropped"] == 0
    assert [e["pc"] for e in events] == list(range(instructions))
    starts = [e["start"] for e in events]
    assert starts[0] == 0 and starts == sorted(starts) and header["run_ticks"] >= starts[-1]


def test_reset_restarts_with_a_hello_and_nothing_loaded(host_link: LinkSession, programs):
    host_link.connect()
    pte = programs["add"]
    run_linked(host_link, load_program(pte), random_inputs(pte, 2))
    info = host_link.reset()
    assert host_link.hello is not None and not info.program_loaded


def test_fuzz_link_thousands_of_mutated_streams(host_build: Path, programs):
    seeds = [str(programs[name]) for name in FUZZ_SEEDS]
    result = subprocess.run(
        [str(host_build / "fuzz_link"), "--iterations", "5000", "--seed", "11", *seeds],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert "fuzz_link: 5000 iterations" in result.stdout
    assert "runtime error" not in result.stderr


def test_fuzz_link_libfuzzer(host_build: Path, tmp_path: Path):
    binary = host_build / "fuzz_link_libfuzzer"
    assert binary.is_file(), "clang is not installed: the libFuzzer target was not built"
    result = subprocess.run(
        [str(binary), "-runs=20000", "-seed=7", f"-artifact_prefix={tmp_path}/"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Done 20000 runs" in result.stderr
