"""The firmware on QEMU (mps3-an547): real arm-none-eabi builds, real QEMU, no mocks."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from sdk.errors import FirmwareRefused, TargetError, UsageError
from sdk.firmware.boards import load_board
from sdk.firmware.build import build_firmware
from sdk.firmware.image import pack_program
from sdk.targets.base import RunOptions
from sdk.targets.emulator import Preload
from sdk.targets.qemu import TIMING_SOURCE as QEMU_TIMING
from sdk.targets.run import make_target, run_on_target
from tests.support.fwprograms import oracle, random_inputs

pytestmark = pytest.mark.slow
BOARD = "corstone300"
TIMEOUT_S = 120.0


def run_with(elf: Path, pte: Path, tmp_path: Path, timeout_s: float = TIMEOUT_S, seed: int = 0):
    """Run `pte` over the link on QEMU booted with the built firmware `elf`."""
    inputs = random_inputs(pte, seed=seed)
    return run_on_target("qemu", BOARD, pte, inputs, timeout_s, tmp_path, firmware=elf), inputs


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


def test_instruction_counts_repeat_within_a_tick(programs, tmp_path: Path):
    """When host bytes arrive moves SysTick's phase: +-1 tick (about 31 instructions)."""
    pte = programs["quant_mix"]
    inputs = random_inputs(pte, seed=1)
    runs = [run_on_target("qemu", BOARD, pte, inputs, TIMEOUT_S, tmp_path / k) for k in "ab"]
    assert abs(runs[0].timing.run_ticks - runs[1].timing.run_ticks) <= 1
    assert runs[0].timing.instructions > 0


def test_bmm_program_agrees_with_executorch(programs, tmp_path: Path):
    # The Helium bmm kernel accumulates with fused multiply-adds: a few float ULPs from
    # ExecuTorch's portable kernel; the sum is exact.
    pte = programs["bmm"]
    inputs = random_inputs(pte, seed=5)
    result = run_on_target("qemu", BOARD, pte, inputs, TIMEOUT_S, tmp_path)
    expected = oracle(pte, inputs)
    np.testing.assert_allclose(result.outputs[0], expected[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(result.outputs[1], expected[1])


def test_an_embedded_program_is_loaded_at_boot(programs, tmp_path: Path):
    pte = programs["add"]
    elf = build_firmware(BOARD, pte, tmp_path / "embedded.elf", embed=True)
    options = RunOptions(firmware=elf, workdir=tmp_path / "boot")
    with make_target("qemu", load_board(BOARD)).strategy.up(options) as up:
        info = up.session.connect()
        assert info.program_loaded
        assert info.program_sha256 == hashlib.sha256(pte.read_bytes()).digest()
    result, inputs = run_with(elf, pte, tmp_path / "run", seed=2)
    np.testing.assert_array_equal(result.outputs[0], inputs[0] + inputs[1])


def test_a_hanging_firmware_is_a_timeout(programs, tmp_path: Path):
    pte = programs["id"]
    elf = build_firmware(BOARD, pte, tmp_path / "hang.elf", test_hook="hang")
    with pytest.raises(TargetError, match=r"no valid response to CONNECT") as caught:
        run_with(elf, pte, tmp_path, timeout_s=3.0)
    assert "hanging on purpose" in caught.value.log_path.read_text()


def test_a_faulting_firmware_reports_the_fault(programs, tmp_path: Path):
    pte = programs["id"]
    elf = build_firmware(BOARD, pte, tmp_path / "fault.elf", test_hook="fault")
    with pytest.raises(TargetError, match=r"faulted: cfsr=0x00010000 .*pc=0x1") as caught:
        run_with(elf, pte, tmp_path)  # UNDEFINSTR
    assert "@sdk fault cfsr=0x00010000" in caught.value.log_path.read_text()


def test_a_stack_overflow_is_caught_by_the_stack_limit(programs, tmp_path: Path):
    pte = programs["id"]
    elf = build_firmware(BOARD, pte, tmp_path / "stack.elf", test_hook="stack")
    # UsageFault STKOF (CFSR bit 20): MSPLIM stops the overflow before it reaches .bss.
    with pytest.raises(TargetError, match=r"faulted: cfsr=0x00100000"):
        run_with(elf, pte, tmp_path)


def test_a_corrupt_preloaded_program_is_refused_by_the_firmware(programs, tmp_path: Path):
    pte = programs["add"]
    data = pte.read_bytes()
    corrupt = bytearray(pack_program(data))
    corrupt[64] ^= 0x40
    blob = tmp_path / "corrupt.sdkp"
    blob.write_bytes(bytes(corrupt))
    board = load_board(BOARD)
    elf = build_firmware(BOARD, pte, tmp_path / "fw.elf")
    preload = Preload(blob, board.slots["program"].base)
    options = RunOptions(firmware=elf, workdir=tmp_path / "boot")
    with make_target("qemu", board).strategy.up(options, preloads=[preload]) as up:
        up.session.connect()
        with pytest.raises(FirmwareRefused, match=r"InvalidProgram.*program blob CRC"):
            up.session.load_slot(len(data), hashlib.sha256(data).digest())


def test_inputs_are_checked_on_the_host_before_anything_runs(programs, tmp_path: Path):
    pte = programs["add"]
    wrong = [np.zeros((2, 3), np.float32), np.zeros((2, 3), np.int32)]
    with pytest.raises(UsageError, match=r"input 1: the program takes Float \[2, 3\], got int32"):
        run_on_target("qemu", BOARD, pte, wrong, TIMEOUT_S, tmp_path)
    with pytest.raises(UsageError, match="takes 2 inputs, 1 were given"):
        run_on_target("qemu", BOARD, pte, wrong[:1], TIMEOUT_S, tmp_path)
    assert not (tmp_path / "executor_runner.elf").exists()
    assert not (tmp_path / "link.log").exists()


def test_unknown_target_is_a_usage_error(programs, tmp_path: Path):
    pte = programs["add"]
    known = "fvp, host, labgrid, qemu, serial"
    with pytest.raises(UsageError, match=f"unknown target 'board9'; targets: {known}"):
        run_on_target("board9", BOARD, pte, random_inputs(pte), TIMEOUT_S, tmp_path)


def test_a_parked_firmware_serves_the_link_the_same(programs, tmp_path: Path):
    """exit=park is for boards without a debugger: a fault parks the CPU instead of exiting;
    a run goes as on any build."""
    pte = programs["add"]
    elf = build_firmware(BOARD, pte, tmp_path / "park.elf", exit="park")
    result, inputs = run_with(elf, pte, tmp_path, seed=4)
    np.testing.assert_array_equal(result.outputs[0], inputs[0] + inputs[1])
