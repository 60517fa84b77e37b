"""The firmware on QEMU (mps3-an547): real arm-none-eabi builds, real QEMU, no mocks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fwprograms import oracle, random_inputs

from sdk.errors import TargetError, UsageError
from sdk.firmware.boards import load_board
from sdk.firmware.build import build_firmware
from sdk.firmware.image import pack_program, write_blobs
from sdk.firmware.records import check_record, parse_record
from sdk.program.pte import load_program
from sdk.targets.qemu import TIMING_SOURCE as QEMU_TIMING
from sdk.targets.qemu import QemuTarget
from sdk.targets.run import run_built, run_firmware, run_on_target

pytestmark = pytest.mark.slow
BOARD = "corstone300"
TIMEOUT_S = 120.0


def boot(
    elf: Path,
    pte: Path,
    program_blob: Path | None,
    inputs_blob: Path,
    tmp_path: Path,
    timeout_s: float = TIMEOUT_S,
):
    """Run a built firmware on QEMU with these blobs, checked against `pte`'s outputs."""
    board = load_board(BOARD)
    outputs = load_program(pte).outputs()
    return run_firmware(
        QemuTarget(board),
        board,
        elf,
        program_blob,
        inputs_blob,
        timeout_s,
        tmp_path,
        outputs=outputs,
    )


def test_cpu_program_matches_executorch_bit_for_bit(programs, tmp_path: Path):
    pte = programs["quant_mix"]
    inputs = random_inputs(pte, seed=11)
    result = run_on_target("qemu", BOARD, pte, inputs, TIMEOUT_S, tmp_path)
    expected = oracle(pte, inputs)
    assert len(result.outputs) == len(expected) == 2
    for got, want in zip(result.outputs, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    assert result.outputs[1].dtype == np.int16
    timing = result.timing
    assert timing.run_ticks > 0 and timing.instructions is not None and timing.instructions > 0
    assert timing.tick_hz == 32_000_000  # QEMU's SysTick rate in virtual time
    assert timing.source == QEMU_TIMING
    assert result.memory.planned_used > 0
    assert result.memory.planned_used <= result.memory.planned_size
    assert result.log_path.is_file() and result.log_path.name == "link.log"


def test_instruction_counts_are_deterministic(programs, tmp_path: Path):
    """On the preloaded path nothing waits for the host, so the counts repeat exactly (over
    the link, when host bytes arrive moves SysTick's phase: +-1 tick, about 31 instructions)."""
    pte = programs["quant_mix"]
    inputs = random_inputs(pte, seed=1)
    board = load_board(BOARD)
    elf = build_firmware(BOARD, pte, tmp_path / "fw.elf")
    runs = [
        run_built(QemuTarget(board), board, elf, load_program(pte), inputs, TIMEOUT_S, tmp_path / k)
        for k in "ab"
    ]
    assert runs[0].timing.run_ticks == runs[1].timing.run_ticks
    assert runs[0].timing.instructions == runs[1].timing.instructions
    over_link = [
        run_on_target("qemu", BOARD, pte, inputs, TIMEOUT_S, tmp_path / f"link{k}") for k in "ab"
    ]
    assert abs(over_link[0].timing.run_ticks - over_link[1].timing.run_ticks) <= 1


def test_bmm_program_agrees_with_executorch(programs, tmp_path: Path):
    # The Helium bmm kernel accumulates with fused multiply-adds: a few float ULPs from
    # ExecuTorch's portable kernel; the sum is exact.
    pte = programs["bmm"]
    inputs = random_inputs(pte, seed=5)
    result = run_on_target("qemu", BOARD, pte, inputs, TIMEOUT_S, tmp_path)
    expected = oracle(pte, inputs)
    np.testing.assert_allclose(result.outputs[0], expected[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(result.outputs[1], expected[1])


def test_embedded_program_runs_without_a_program_blob(programs, tmp_path: Path):
    pte = programs["add"]
    inputs = random_inputs(pte, seed=2)
    _, inputs_blob = write_blobs(load_program(pte), inputs, tmp_path)
    elf = build_firmware(BOARD, pte, tmp_path / "embedded.elf", embed=True)
    result = boot(elf, pte, None, inputs_blob, tmp_path)
    np.testing.assert_array_equal(result.outputs[0], inputs[0] + inputs[1])


def test_ethos_u_program_without_npu_fails_with_no_hardware(programs, tmp_path: Path):
    # The preloaded text path: the backend is registered, QEMU has no NPU (its registers read
    # 0) and there is no host to run a virtual NPU, so the load says so.
    pte = programs["delegate"]
    program_blob, inputs_blob = write_blobs(load_program(pte), random_inputs(pte), tmp_path)
    elf = build_firmware(BOARD, pte, tmp_path / "delegate.elf")
    with pytest.raises(
        TargetError,
        match=r"NoHardware \(code 14\).*delegate 0 \(EthosUBackend\) init: no Ethos-U55 at "
        r"0x58102000 on this board",
    ):
        boot(elf, pte, program_blob, inputs_blob, tmp_path)


def test_a_hanging_firmware_is_a_timeout(programs, tmp_path: Path):
    pte = programs["id"]
    program_blob, inputs_blob = write_blobs(load_program(pte), random_inputs(pte), tmp_path)
    elf = build_firmware(BOARD, pte, tmp_path / "hang.elf", test_hook="hang")
    with pytest.raises(TargetError, match=r"timeout after 3 s") as caught:
        boot(elf, pte, program_blob, inputs_blob, tmp_path, timeout_s=3.0)
    assert "hanging on purpose" in caught.value.log_path.read_text()


def test_a_faulting_firmware_reports_the_fault(programs, tmp_path: Path):
    pte = programs["id"]
    program_blob, inputs_blob = write_blobs(load_program(pte), random_inputs(pte), tmp_path)
    elf = build_firmware(BOARD, pte, tmp_path / "fault.elf", test_hook="fault")
    with pytest.raises(TargetError, match=r"faulted: cfsr=0x00010000 .*pc=0x1") as caught:
        boot(elf, pte, program_blob, inputs_blob, tmp_path)
    assert "@sdk fault cfsr=0x00010000" in caught.value.log_path.read_text()  # UNDEFINSTR


def test_a_stack_overflow_is_caught_by_the_stack_limit(programs, tmp_path: Path):
    pte = programs["id"]
    program_blob, inputs_blob = write_blobs(load_program(pte), random_inputs(pte), tmp_path)
    elf = build_firmware(BOARD, pte, tmp_path / "stack.elf", test_hook="stack")
    # UsageFault STKOF (CFSR bit 20): MSPLIM stops the overflow before it reaches .bss.
    with pytest.raises(TargetError, match=r"faulted: cfsr=0x00100000"):
        boot(elf, pte, program_blob, inputs_blob, tmp_path)


def test_a_corrupt_program_blob_is_refused_by_the_firmware(programs, tmp_path: Path):
    pte = programs["add"]
    _, inputs_blob = write_blobs(load_program(pte), random_inputs(pte), tmp_path)
    corrupt = bytearray(pack_program(pte.read_bytes()))
    corrupt[64] ^= 0x40
    program_blob = tmp_path / "corrupt.sdkp"
    program_blob.write_bytes(bytes(corrupt))
    elf = build_firmware(BOARD, pte, tmp_path / "fw.elf")
    with pytest.raises(TargetError, match=r"InvalidProgram \(code 3\): program blob CRC"):
        boot(elf, pte, program_blob, inputs_blob, tmp_path)


def test_a_corrupt_inputs_blob_is_reported(programs, tmp_path: Path):
    pte = programs["add"]
    program_blob, inputs_blob = write_blobs(load_program(pte), random_inputs(pte), tmp_path)
    corrupt = bytearray(inputs_blob.read_bytes())
    corrupt[40] ^= 0x01
    damaged = tmp_path / "damaged.sdki"
    damaged.write_bytes(bytes(corrupt))
    elf = build_firmware(BOARD, pte, tmp_path / "fw.elf")
    with pytest.raises(TargetError, match=r"InvalidInputs \(code 13\): inputs blob CRC"):
        boot(elf, pte, program_blob, damaged, tmp_path)


def test_without_an_inputs_blob_the_firmware_serves_the_link(programs, tmp_path: Path):
    """No SDKI magic in the inputs slot: link mode (docs/link.md), which never exits."""
    pte = programs["add"]
    program_blob, _ = write_blobs(load_program(pte), random_inputs(pte), tmp_path)
    empty = tmp_path / "empty.bin"
    empty.write_bytes(bytes(64))
    elf = build_firmware(BOARD, pte, tmp_path / "fw.elf")
    with pytest.raises(TargetError, match=r"timeout after 5 s"):
        boot(elf, pte, program_blob, empty, tmp_path, timeout_s=5.0)
    console = (tmp_path / "console.log").read_bytes()
    assert b"executor_runner: link mode" in console
    assert b"\x00\x03\x01\x01" in console  # HELLO: a frame, version 1, kind 1, after its 0x00


def test_inputs_are_checked_on_the_host_before_anything_runs(programs, tmp_path: Path):
    pte = programs["add"]
    wrong = [np.zeros((2, 3), np.float32), np.zeros((2, 3), np.int32)]
    with pytest.raises(UsageError, match=r"input 1: the program takes Float \[2, 3\], got int32"):
        run_on_target("qemu", BOARD, pte, wrong, TIMEOUT_S, tmp_path)
    with pytest.raises(UsageError, match="takes 2 inputs, 1 were given"):
        run_on_target("qemu", BOARD, pte, wrong[:1], TIMEOUT_S, tmp_path)
    assert not (tmp_path / "executor_runner.elf").exists()
    assert not (tmp_path / "console.log").exists()


def test_unknown_target_is_a_usage_error(programs, tmp_path: Path):
    pte = programs["add"]
    known = "fvp, host, qemu, serial"
    with pytest.raises(UsageError, match=f"unknown target 'board9'; targets: {known}"):
        run_on_target("board9", BOARD, pte, random_inputs(pte), TIMEOUT_S, tmp_path)


def test_a_parked_firmware_prints_its_whole_record_and_stays_up(programs, tmp_path: Path):
    """exit=park is for boards without a debugger: the record is the whole result and the CPU
    parks instead of exiting, so an emulator that waits for an exit status times out."""
    pte = programs["add"]
    inputs = random_inputs(pte, seed=4)
    program_blob, inputs_blob = write_blobs(load_program(pte), inputs, tmp_path)
    elf = build_firmware(BOARD, pte, tmp_path / "park.elf", exit="park")
    with pytest.raises(TargetError, match=r"timeout after 5 s") as caught:
        boot(elf, pte, program_blob, inputs_blob, tmp_path, timeout_s=5.0)
    record = parse_record(caught.value.log_path.read_text())
    outputs = check_record(record, 0, expected=load_program(pte).outputs())
    np.testing.assert_array_equal(outputs[0], inputs[0] + inputs[1])
