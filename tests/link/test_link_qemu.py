"""The host link end to end: the real firmware on QEMU (mps3-an547), UART0 on a TCP socket,
reached through pyserial exactly like a board's /dev/ttyACM0 (docs/link.md)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main
from sdk.errors import FirmwareRefused, SdkError, TargetError
from sdk.firmware.build import build_firmware
from sdk.link import protocol as p
from sdk.link.protocol import Kind
from sdk.link.session import Timeouts
from sdk.program.pte import load_program
from sdk.targets.linked import run_linked
from sdk.targets.serial import TIMING_SOURCE as SERIAL_TIMING
from sdk.utils.npz import read_arrays, write_arrays
from tests.support.faultproxy import FaultProxy, Faults
from tests.support.linkprograms import (
    BOARD,
    assert_identical,
    listening_qemu,
    oracle,
    random_inputs,
)

pytestmark = pytest.mark.slow


def test_serial_target_equals_qemu_target_and_executorch(link_programs, tmp_path: Path, capsys):
    """The acceptance path: `sdk build`, QEMU started by hand with its UART on TCP, then
    `sdk run --target serial --port socket://...` - bit-identical to `--target qemu` and to
    ExecuTorch's runtime."""
    pte = link_programs["mix"]
    inputs = random_inputs(pte, seed=3)
    write_arrays(tmp_path / "in.npz", inputs)
    elf = tmp_path / "fw.elf"
    assert main(["build", "--board", BOARD, str(pte), "-o", str(elf)]) == 0
    with listening_qemu(elf, tmp_path / "manual") as port:
        code = main([
            "run", "--board", BOARD, "--target", "serial", "--port", f"socket://127.0.0.1:{port}",
            str(pte), "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "serial.npz"),
        ])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert SERIAL_TIMING in capsys.readouterr().out
    code = main([
        "run", "--board", BOARD, "--target", "qemu", str(pte),
        "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "qemu.npz"),
    ])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    serial, qemu = read_arrays(tmp_path / "serial.npz"), read_arrays(tmp_path / "qemu.npz")
    assert_identical(serial, qemu)
    assert_identical(serial, oracle(pte, inputs))
    assert [a.dtype for a in serial] == [np.float32, np.int16]


def test_one_session_runs_many_programs_and_dtypes(link_programs, qemu_link):
    session = qemu_link()
    info = session.connect()
    assert info.board == BOARD and not info.has_npu and info.kernels_total > 0
    for round_ in range(2):
        for name, pte in link_programs.items():
            program = load_program(pte)
            inputs = random_inputs(pte, seed=round_ * 10 + len(name))
            outputs, record = run_linked(session, program, inputs)
            assert_identical(outputs, oracle(pte, inputs))
            assert record.result.ok and record.result.run_ticks > 0
    # INFO names the program loaded last, by its SHA-256.
    info = session.request_info()
    assert info.program_loaded
    assert info.program_sha256 == hashlib.sha256(link_programs["bmm"].read_bytes()).digest()


def test_the_same_program_is_not_sent_twice(link_programs, qemu_link):
    session = qemu_link()
    pte = link_programs["big"]
    program = load_program(pte)
    run_linked(session, program, random_inputs(pte, 1))
    sent = [e for e in session.log.recent]
    inputs = random_inputs(pte, 2)
    outputs, _ = run_linked(session, program, inputs)
    assert_identical(outputs, oracle(pte, inputs))
    log = session.log.path.read_text()
    assert log.count("LOAD_BEGIN request") == 1, sent


def test_iterations_are_timed_and_counted(link_programs, qemu_link):
    session = qemu_link()
    pte = link_programs["bmm"]
    run_linked(session, load_program(pte), random_inputs(pte, 0), iterations=5)
    stats = session.stats()
    assert stats.runs == 5 and stats.run_ticks >= stats.last_run_ticks > 0
    assert stats.tick_hz > 0 and not stats.npu_counters


def test_a_firmware_reset_mid_session_is_detected(link_programs, qemu_link):
    session = qemu_link()
    pte = link_programs["mix"]
    program = load_program(pte)
    inputs = random_inputs(pte, 4)
    run_linked(session, program, inputs)
    # Someone resets the board behind the session's back (the RESET is sent raw).
    session._request(Kind.RESET, b"", 5.0)
    with pytest.raises(TargetError, match="the firmware reset"):
        session.set_input(0, inputs[0], int(program.inputs()[0].scalar_type))
    # A deliberate reset starts a new session: the firmware came back empty.
    info = session.reset()
    assert not info.program_loaded
    outputs, _ = run_linked(session, program, inputs)
    assert_identical(outputs, oracle(pte, inputs))


def test_refusals_come_back_with_the_runtime_error_and_reason(link_programs, qemu_link):
    session = qemu_link()
    info = session.connect()
    too_big = info.program_slot_bytes + 16
    with pytest.raises(FirmwareRefused) as caught:
        session._request(Kind.LOAD_BEGIN, p.load_begin(too_big, bytes(32)), 5.0)
    reply = caught.value.reply
    assert reply.name == "OutOfMemory"
    assert str(too_big) in reply.reason and str(info.program_slot_bytes) in reply.reason
    with pytest.raises(FirmwareRefused) as caught:
        session._request(Kind(0x20), b"\x01", 5.0)  # SET_INPUT shorter than its header
    assert caught.value.reply.name == "BadMessage"
    with pytest.raises(FirmwareRefused) as caught:
        session._request(Kind.RUN, p.run(1), 5.0)  # nothing loaded
    assert caught.value.reply.name != "Ok"
    # A program whose bytes do not hash to what LOAD_BEGIN announced is not used.
    data = link_programs["bmm"].read_bytes()
    session._request(Kind.LOAD_BEGIN, p.load_begin(len(data), bytes(32)), 5.0)
    half = len(data) // 2
    session._request(Kind.LOAD_DATA, p.load_data(0) + data[:half], 5.0)
    session._request(Kind.LOAD_DATA, p.load_data(half) + data[half:], 5.0)
    with pytest.raises(FirmwareRefused, match=r"SHA-256|sha256|hash"):
        session._request(Kind.LOAD_END, b"", 5.0)
    # ... and the session still works afterwards.
    pte = link_programs["bmm"]
    inputs = random_inputs(pte, 9)
    outputs, _ = run_linked(session, load_program(pte), inputs)
    assert_identical(outputs, oracle(pte, inputs))


def test_a_wrong_board_is_refused_naming_it(qemu_link):
    session = qemu_link()
    session.expected_board = "mps4"
    with pytest.raises(TargetError, match=r"for board .corstone300., not .mps4. \(wrong port"):
        session.connect()


SEEDS = range(10)


@pytest.mark.sweep
@pytest.mark.parametrize("seed", SEEDS)
def test_faults_on_the_line_give_the_right_result_or_a_clear_error(link_programs, qemu_link, seed):
    """Dropped, corrupted, duplicated and delayed bytes both ways: every run is exactly right
    or an SdkError; never wrong data."""
    # About one byte in 10^4 hit: most 4 KiB frames arrive whole, many do not.
    faults = Faults(drop=3e-5, corrupt=3e-5, duplicate=3e-5, delay=0.02)
    proxies = []

    def via(url: str) -> str:
        host, port = url.removeprefix("socket://").split(":")
        proxies.append(FaultProxy((host, int(port)), faults, seed))
        return proxies[-1].url

    session = qemu_link(via=via, timeouts=Timeouts(connect=1.0, transfer=1.0, run=20.0))
    session.retries = 8
    passed = failed = 0
    errors = []
    try:
        for k, name in enumerate(["big", "mix", "int8", "big"]):
            pte = link_programs[name]
            inputs = random_inputs(pte, seed * 100 + k)
            try:
                outputs, _ = run_linked(session, load_program(pte), inputs)
            except SdkError as exc:
                failed += 1
                errors.append(exc.message)
                assert exc.message  # a clear one-line reason...
                session.connected = False  # ...and the next run starts a new session
                continue
            assert_identical(outputs, oracle(pte, inputs))
            passed += 1
    finally:
        for proxy in proxies:
            proxy.close()
    proxy = proxies[0]
    assert proxy.to_target.faults > 0 and proxy.to_host.faults > 0, (proxy.to_target, proxy.to_host)
    assert passed >= 2, f"{passed} passed, {failed} failed (not recovering): {errors}"


def test_a_line_too_noisy_to_use_fails_clearly_and_never_returns_wrong_data(
    link_programs, qemu_link
):
    faults = Faults(corrupt=0.01, drop=0.002)
    proxies = []

    def via(url: str) -> str:
        host, port = url.removeprefix("socket://").split(":")
        proxies.append(FaultProxy((host, int(port)), faults, 77))
        return proxies[-1].url

    session = qemu_link(via=via, timeouts=Timeouts(connect=0.5, transfer=0.5, run=5.0))
    session.retries = 3
    pte = link_programs["big"]
    try:
        with pytest.raises(TargetError, match=r"phase (connect|load|set input 0).*after 4 tries"):
            run_linked(session, load_program(pte), random_inputs(pte, 1))
    finally:
        proxies[0].close()
    assert proxies[0].to_target.corrupted + proxies[0].to_host.corrupted > 0


def test_soak_200_runs_without_a_failure(link_programs, qemu_link):
    session = qemu_link()
    pte = link_programs["int8"]
    program = load_program(pte)
    rng_inputs = [random_inputs(pte, seed) for seed in range(20)]
    expected = [oracle(pte, inputs) for inputs in rng_inputs]
    start = time.monotonic()
    for k in range(200):
        outputs, _ = run_linked(session, program, rng_inputs[k % 20])
        assert_identical(outputs, expected[k % 20])
        assert time.monotonic() - start < 300, f"soak too slow: {k} runs in 300 s"


@pytest.mark.parametrize(
    "hook,message",
    [
        ("fault", "the firmware faulted: cfsr="),
        ("hang", "phase connect: no valid response to CONNECT"),
    ],
)
def test_a_firmware_that_faults_or_hangs_is_a_clear_failure(
    link_programs, qemu_link, tmp_path, hook, message
):
    pte = link_programs["bmm"]
    # Built for the program (its kernels alone): the hook is the runner's, not a kernel's.
    elf = build_firmware(BOARD, pte, tmp_path / f"{hook}.elf", test_hook=hook)
    session = qemu_link(elf, timeouts=Timeouts(connect=0.5))
    session.retries = 2
    with pytest.raises(TargetError, match=message) as caught:
        run_linked(session, load_program(pte), random_inputs(pte, 0))
    assert caught.value.log_path is not None and caught.value.log_path.is_file()
