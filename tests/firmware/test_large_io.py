"""Inputs and outputs of real size (docs/link.md "Large inputs and outputs"): on QEMU and the
FVP the inputs are preloaded into the inputs slot (SET_INPUT_SLOT, the firmware checks their
CRC-32) and the outputs come back as semihosting files (GET_OUTPUT_FILE, the host checks their
length and CRC-32 against the firmware's). Real arm-none-eabi builds, real QEMU."""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

import numpy as np
import pytest

from sdk.errors import SdkError, TargetError
from sdk.firmware.boards import load_board
from sdk.firmware.build import build_firmware
from sdk.link.bigio import SlotInput
from sdk.program.pte import load_program
from sdk.targets.base import RunOptions
from sdk.targets.emulator import Preload
from sdk.targets.run import make_target, run_on_target
from tests.support.fwprograms import export_cpu, oracle

pytestmark = pytest.mark.slow
BOARD = "corstone300"
TIMEOUT_S = 120.0
SHAPE = (1, 3, 224, 224)  # 588 KiB of float: 40 s over QEMU's UART


@pytest.fixture(scope="module")
def pool(tmp_path_factory) -> Path:
    """A 2x2 average pool over a 224x224 RGB float image: a 147 KiB float output."""
    import torch

    class Pool(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.avg_pool2d(x, 2, 2)

    folder = tmp_path_factory.mktemp("large_io")
    return export_cpu(Pool().eval(), (torch.randn(*SHAPE),), folder / "pool.pte")


@pytest.fixture(scope="module")
def pool_elf(pool, tmp_path_factory) -> Path:
    return build_firmware(BOARD, pool, tmp_path_factory.mktemp("fw") / "executor_runner.elf")


def image(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)


def requests(log: Path) -> list[str]:
    """The kinds of the requests the host sent, in order."""
    return [line.split()[2] for line in log.read_text().splitlines() if line.split()[1:2] == [">"]]


def test_a_224x224x3_input_and_its_output_travel_outside_the_uart_bit_for_bit(
    pool, pool_elf, tmp_path: Path
):
    x = image(1)
    report = run_on_target("qemu", BOARD, pool, [x], TIMEOUT_S, tmp_path, firmware=pool_elf)
    np.testing.assert_array_equal(report.outputs[0], oracle(pool, [x])[0])
    sent = requests(report.log_path)
    assert sent == ["CONNECT", "LOAD_SLOT", "SET_INPUT_SLOT", "RUN", "GET_OUTPUT_FILE"]
    assert (tmp_path / "inputs.bin").read_bytes() == x.tobytes()  # at the inputs slot's base
    command = (tmp_path / "command.txt").read_text()
    assert "loader,file=" + str(tmp_path / "inputs.bin") + ",addr=0x72000000" in command
    assert not list(tmp_path.glob("sdk-out-*"))  # each output file is read, then removed


def test_the_preloaded_input_serves_every_run_of_the_same_input(pool, pool_elf, tmp_path: Path):
    x = image(2)
    program = load_program(pool)
    options = RunOptions(firmware=pool_elf, workdir=tmp_path, timeout_s=TIMEOUT_S)
    strategy = make_target("qemu", load_board(BOARD)).strategy
    with strategy.up(options, program, inputs=[x]) as running:
        first = running.run(program, [x], options).outputs[0]
        second = running.run(program, [x], options).outputs[0]
        log = running.session.log.path
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first, oracle(pool, [x])[0])
    assert requests(log).count("SET_INPUT_SLOT") == 2 and "SET_INPUT" not in requests(log)


def test_inputs_not_known_at_boot_come_from_a_semihosting_file(
    pool, pool_elf, tmp_path: Path, monkeypatch
):
    """A later sample (a data set's): SET_INPUT_FILE, the firmware reads the host's file into
    the inputs slot and checks its CRC-32; the same sample again is in the slot already. A
    file whose bytes are not the input (one flipped on the way) is refused."""
    from sdk.link import session as session_module

    first, second, third = image(7), image(8), image(9)
    program = load_program(pool)
    options = RunOptions(firmware=pool_elf, workdir=tmp_path, timeout_s=TIMEOUT_S)
    strategy = make_target("qemu", load_board(BOARD)).strategy
    with strategy.up(options, program, inputs=[first]) as running:
        outputs = [running.run(program, [x], options).outputs[0] for x in (first, second, second)]
        log = running.session.log.path

        def flipped(path: Path, data: bytes) -> None:
            path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))

        monkeypatch.setattr(session_module, "write_input_file", flipped)
        with pytest.raises(SdkError, match=r"InputMismatch.*not the input it wrote"):
            running.run(program, [third], options)
        monkeypatch.undo()
        outputs.append(running.run(program, [third], options).outputs[0])
    for got, x in zip(outputs, (first, second, second, third), strict=True):
        np.testing.assert_array_equal(got, oracle(pool, [x])[0])
    sent = [k for k in requests(log) if k.startswith("SET_INPUT")]
    assert sent == ["SET_INPUT_SLOT", "SET_INPUT_FILE", "SET_INPUT_SLOT", "SET_INPUT_FILE",
                    "SET_INPUT_FILE"]  # fmt: skip
    assert not list(tmp_path.glob("sdk-in-*"))  # removed once read


def test_preloaded_bytes_that_are_not_the_host_s_input_are_refused(pool, pool_elf, tmp_path: Path):
    """The host claims the CRC of the input it means; the slot holds another (one bit)."""
    x = image(3)
    wrong = bytearray(x.tobytes())
    wrong[len(wrong) // 2] ^= 0x01
    blob = tmp_path / "wrong.bin"
    blob.write_bytes(bytes(wrong))
    board = load_board(BOARD)
    program = load_program(pool)
    options = RunOptions(firmware=pool_elf, workdir=tmp_path / "boot", timeout_s=TIMEOUT_S)
    preload = Preload(blob, board.slots["inputs"].base)
    with make_target("qemu", board).strategy.up(options, program, [preload]) as running:
        running.session.slot_inputs = {0: SlotInput(0, x.nbytes, zlib.crc32(x.tobytes()))}
        running.session.slot_program = hashlib.sha256(program.data).digest()
        with pytest.raises(SdkError, match=r"InputMismatch.*not the input it preloaded"):
            running.run(program, [x], options)


def test_an_output_file_that_is_not_the_run_s_is_refused(
    pool, pool_elf, tmp_path: Path, monkeypatch
):
    """The firmware's answer holds the output's length and CRC-32: the host reading where the
    emulator does not write (a wrong folder), or a file of other bytes or another length, is
    a failure; then the right folder and the file as written pass."""
    from sdk.link import session as session_module

    x = image(4)
    program = load_program(pool)
    options = RunOptions(firmware=pool_elf, workdir=tmp_path / "boot", timeout_s=TIMEOUT_S)
    strategy = make_target("qemu", load_board(BOARD)).strategy
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    with strategy.up(options, program, inputs=[x]) as running:
        session = running.session
        real = session.files_dir
        assert real == tmp_path / "boot"
        session.files_dir = decoy
        with pytest.raises(TargetError, match=r"GET_OUTPUT_FILE: the firmware wrote .*decoy"):
            running.run(program, [x], options)
        session.files_dir = real
        for change, match in (
            (lambda b: b[:-4], r"holds 150524 bytes of CRC-32 \w+, the firmware's output 0 150528"),
            (lambda b: b[:100] + bytes([b[100] ^ 1]) + b[101:], r"holds 150528 bytes of CRC-32"),
        ):
            monkeypatch.setattr(
                session_module, "read_output_file", lambda p, change=change: change(p.read_bytes())
            )
            with pytest.raises(TargetError, match=match):
                running.run(program, [x], options)
        monkeypatch.undo()
        got = running.run(program, [x], options).outputs[0]
    np.testing.assert_array_equal(got, oracle(pool, [x])[0])
    # Only the file the host looked for elsewhere is left: the others were read and removed.
    assert [p.name for p in real.glob("sdk-out-*")] == [f"sdk-out-{session.session:08x}-1-0.bin"]


def test_small_inputs_and_outputs_stay_on_the_uart(programs, tmp_path: Path):
    pte = programs["add"]
    inputs = [np.full((2, 3), 1.5, np.float32), np.full((2, 3), 2.0, np.float32)]
    report = run_on_target("qemu", BOARD, pte, inputs, TIMEOUT_S, tmp_path)
    np.testing.assert_array_equal(report.outputs[0], inputs[0] + inputs[1])
    sent = requests(report.log_path)
    assert sent.count("SET_INPUT") == 2 and sent.count("GET_OUTPUT") == 1
    assert "SET_INPUT_SLOT" not in sent and "GET_OUTPUT_FILE" not in sent
    assert not (tmp_path / "inputs.bin").exists()


def test_a_firmware_without_semihosting_sends_its_outputs_over_the_uart(pool, tmp_path: Path):
    """exit=park (a board without a debugger) never traps: GET_OUTPUT_FILE is NotSupported
    and the host reads the output over the link, still bit for bit."""
    elf = build_firmware(BOARD, pool, tmp_path / "park.elf", exit="park")
    x = image(5)
    report = run_on_target("qemu", BOARD, pool, [x], TIMEOUT_S, tmp_path / "run", firmware=elf)
    np.testing.assert_array_equal(report.outputs[0], oracle(pool, [x])[0])
    sent = requests(report.log_path)
    assert sent[:4] == ["CONNECT", "LOAD_SLOT", "SET_INPUT_SLOT", "RUN"]
    assert sent[4] == "GET_OUTPUT_FILE" and set(sent[5:]) == {"GET_OUTPUT"}
    assert "this firmware has no semihosting" in report.log_path.read_text()


@pytest.fixture(scope="module")
def double(tmp_path_factory) -> Path:
    """x * 2 over 8 KiB of float: two frames each way over a serial line."""
    import torch

    class Double(torch.nn.Module):
        def forward(self, x):
            return x * 2

    folder = tmp_path_factory.mktemp("serial_io")
    return export_cpu(Double().eval(), (torch.randn(32, 64),), folder / "double.pte")


def test_a_serial_line_says_each_large_transfer_s_expected_time_and_its_progress(
    double, tmp_path: Path
):
    """A board over a serial port (QEMU behind a TCP port, as a user starts it): no preload, no
    semihosting; each transfer over 4 KiB is announced with its expected time at the line's
    speed (baud / 10 bytes per second, with the frames' overhead), then its progress."""
    from sdk.link.session import COBS_OVERHEAD, FRAME_OVERHEAD
    from sdk.link.transport import DEFAULT_BAUD
    from sdk.utils.progress import Steps
    from tests.support.linkprograms import listening_qemu

    elf = build_firmware(BOARD, double, tmp_path / "fw.elf")
    program = load_program(double)
    x = np.arange(32 * 64, dtype=np.float32).reshape(32, 64)
    heard: list[tuple[str, int, int, float]] = []
    steps = Steps(show=False)
    with listening_qemu(elf, tmp_path / "qemu") as port:
        options = RunOptions(port=f"socket://127.0.0.1:{port}", workdir=tmp_path / "run")
        strategy = make_target("serial", load_board(BOARD), options).strategy
        with strategy.up(options, program, inputs=[x]) as running, steps.step("run") as step:
            assert running.session.files_dir is None  # a board: no semihosting files
            running.watch_transfers(lambda *event: (heard.append(event), steps.transfer(*event)))
            got = running.run(program, [x], options).outputs[0]
            log = running.session.log.path.read_text()
    np.testing.assert_array_equal(got, x * 2)
    assert not (tmp_path / "run" / "inputs.bin").exists()
    per_second = DEFAULT_BAUD / 10
    chunk = 4096 - 48
    want = (8192 * (1 + COBS_OVERHEAD) + 3 * (FRAME_OVERHEAD + 48)) / per_second  # 3 frames
    for what in ("input 0", "output 0"):
        events = [e for e in heard if e[0] == what]
        assert events[0][1:3] == (0, 8192) and events[0][3] == pytest.approx(want)
        assert [e[1] for e in events[1:]] == [chunk, 2 * chunk, 8192]
        assert f"{what}: 8192 bytes over the line at 11520 B/s, expected {want:.1f} s" in log
    assert requests(running.session.log.path).count("SET_INPUT") == 3
    assert step.record.detail.startswith(f"input 0: 8,192 bytes, expected {want:.1f} s")


def test_the_fvp_preloads_the_input_with_data_and_takes_outputs_from_its_semihosting_cwd(
    fvp_standin, pool, pool_elf, tmp_path: Path
):
    """The FVP target (its STAND-IN: the FVP's command line, the firmware on QEMU behind it,
    started in cpu0.semihosting-cwd)."""
    x = image(6)
    report = run_on_target("fvp", BOARD, pool, [x], TIMEOUT_S, tmp_path, firmware=pool_elf)
    np.testing.assert_array_equal(report.outputs[0], oracle(pool, [x])[0])
    assert requests(report.log_path)[-3:] == ["SET_INPUT_SLOT", "RUN", "GET_OUTPUT_FILE"]
    command = (tmp_path / "command.txt").read_text()
    assert f"--data {tmp_path / 'inputs.bin'}@0x72000000" in command
    assert f"cpu0.semihosting-cwd={tmp_path}" in command


@pytest.fixture(scope="module")
def wide_delegate(tmp_path_factory) -> Path:
    """relu(x + x) over 8 KiB of int8 on the Ethos-U55: on QEMU the host's virtual U55 writes
    its 8 KiB output into the board's memory."""
    import torch

    from tests.support.fwprograms import export_ethos_u

    class Relu(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x + x)

    folder = tmp_path_factory.mktemp("wide_delegate")
    return export_ethos_u(Relu().eval(), (torch.randn(1, 8192),), folder / "relu.pte")


def test_the_virtual_u55_writes_a_large_output_through_a_semihosting_file(
    wide_delegate, tmp_path: Path, monkeypatch
):
    """NPU_WRITE_FILE: the firmware reads the virtual U55's 8 KiB output from a file the host
    wrote (its CRC-32 of what it wrote must be the host's); the outputs are the host
    reference's bit for bit. Bytes other than the host's (one flipped on the way) fail."""
    from sdk.link import npu_service
    from sdk.targets.host import run_host

    x = np.random.default_rng(7).integers(-128, 128, (1, 8192), dtype=np.int8)
    want = run_host(wide_delegate, [x], npu_executor="command-stream")
    report = run_on_target("qemu", BOARD, wide_delegate, [x], TIMEOUT_S, tmp_path / "a")
    np.testing.assert_array_equal(report.outputs[0], want[0])
    sent = requests(report.log_path)
    assert "NPU_WRITE_FILE" in sent and "NPU_WRITE" not in sent
    assert "GET_OUTPUT_FILE" in sent and "GET_OUTPUT" not in sent
    assert not list((tmp_path / "a").glob("sdk-npu-*"))  # removed once read

    def flipped(path: Path, data: bytes) -> None:
        path.write_bytes(bytes([data[0] ^ 1]) + data[1:])

    monkeypatch.setattr(npu_service, "write_npu_file", flipped)
    with pytest.raises(SdkError, match=r"NPU_WRITE_FILE: the firmware wrote 8192 bytes of CRC"):
        run_on_target("qemu", BOARD, wide_delegate, [x], TIMEOUT_S, tmp_path / "b")
