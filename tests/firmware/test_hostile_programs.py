"""Programs export never makes (a review's reproducers): each is refused with a reason by the
host build (ASan + UBSan) and by the firmware on QEMU, whose 32-bit size_t and `long` show
what the host's 64-bit ones hide. And the host's one check of what the firmware reported: a
record that does not match the program never passes, and program text in a reason stays text."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest
from executorch.exir.schema import ScalarType

from sdk.errors import TargetError
from sdk.firmware.boards import load_board
from sdk.link.record import FirmwareRecord, MemoryUse, Outcome, OutputRecord, check_record
from sdk.program.pte import TensorInfo
from sdk.targets.base import RunOptions
from sdk.targets.run import make_target
from tests.support.fwprograms import (
    method,
    planned_tensor,
    program_from_json,
    shared_int_list_program,
)

BOARD = "corstone300"
FAKE_RESULT = "@sdk result status=ok outputs=0 init_ticks=1 run_ticks=1 tick_hz=1 "


def numel_wrap() -> bytes:
    """Float [2^30]: 4 GiB, which a 32-bit size_t wraps to 0 bytes, on a 16-byte buffer."""
    big = planned_tensor("FLOAT", [1 << 30])
    call = {"instr_args_type": "KernelCall", "instr_args": {"op_index": 0, "args": [0, 1, 1]}}
    return program_from_json(
        method(
            [big, big],
            outputs=[1],
            instructions=[call],
            operators=[{"name": "aten::sigmoid", "overload": "out"}],
            buffers=[0, 16],
        )
    )


def move_confusion() -> bytes:
    """A MoveCall of an Int into the output tensor, after the runner checked the outputs."""
    pointer = {"val_type": "Int", "val": {"int_val": 0x4141414141414141}}
    move = {"instr_args_type": "MoveCall", "instr_args": {"move_from": 1, "move_to": 0}}
    return program_from_json(
        method(
            [planned_tensor("FLOAT", [4]), pointer],
            outputs=[0],
            instructions=[move],
            buffers=[0, 16],
        )
    )


def inject() -> bytes:
    """An operator name carrying U+2028 and fake record lines."""
    name = f"x\u2028@sdk memory planned_used=0\u2028{FAKE_RESULT}"
    call = {"instr_args_type": "KernelCall", "instr_args": {"op_index": 0, "args": [0]}}
    return program_from_json(
        method(
            [planned_tensor("FLOAT", [4])],
            outputs=[0],
            instructions=[call],
            operators=[{"name": name, "overload": "out"}],
            buffers=[0, 16],
        )
    )


def const_input() -> bytes:
    """A legacy constant_buffer tensor as the input: set_input would write into the program."""
    constant = {
        "val_type": "Tensor",
        "val": {"scalar_type": "FLOAT", "sizes": [4], "dim_order": [0], "data_buffer_idx": 1},
    }
    program = method([constant], inputs=[0], outputs=[0])
    one = [0, 0, 128, 63]
    program["constant_buffer"] = [{"storage": []}, {"storage": one * 4}]
    return program_from_json(program)


def big_list_item() -> bytes:
    """An IntList item of 2^40: a "%ld" reason printed it as 0 on the target."""
    return program_from_json(method([{"val_type": "IntList", "val": {"items": [1 << 40]}}]))


def shared_lists() -> bytes:
    """65537 references to one 65536-item IntList: 2^32 + 2^16 items, 65536 in 32 bits."""
    return shared_int_list_program(65536, 65537)


# name: (program, error name, the reason contains)
CASES = {
    "numel_wrap": (
        numel_wrap,
        "NotSupported",
        "value 0: 1073741824 elements of 4 bytes: over the 2147483647-byte limit",
    ),
    "move_confusion": (
        move_confusion,
        "InvalidProgram",
        "instruction 0: MoveCall of a Int value into a Tensor value",
    ),
    "inject": (inject, "OperatorMissing", "x???@sdk memory planned_used=0???@sdk result"),
    "const_input": (const_input, "NotSupported", "input 0 (value 0) is not memory-planned"),
    "big_list_item": (big_list_item, "InvalidProgram", "value 1099511627776 out of range (1)"),
    "shared_lists": (
        shared_lists,
        "InvalidProgram",
        "list items pass 2147483647 in all",
    ),
}


@pytest.fixture(scope="module")
def hostile() -> dict[str, bytes]:
    return {name: make() for name, (make, _, _) in CASES.items()}


@pytest.mark.parametrize("name", CASES)
def test_the_host_build_refuses(host_run, hostile, name: str):
    _, error, reason = CASES[name]
    # --planned-bytes: the fixture would ask ExecuTorch's deserializer, which expands shared
    # tables (and the programs plan at most 16 bytes).
    result = host_run(hostile[name], [], "--planned-bytes", "16")
    got_name, got_reason = result.error()
    assert (got_name, reason in got_reason) == (error, True), got_reason
    assert "runtime error" not in result.stderr  # UBSan
    assert got_reason.isprintable() and got_reason.isascii()


@pytest.mark.slow
def test_the_firmware_refuses_on_qemu(every_kernel_elf: Path, hostile, tmp_path):
    """Every case on one boot: a refusal leaves the firmware serving the next program."""
    target = make_target("qemu", load_board(BOARD))
    with target.strategy.up(RunOptions(firmware=every_kernel_elf, workdir=tmp_path)) as up:
        session = up.session
        for name, (_, error, reason) in CASES.items():
            record = session.run_program(hostile[name], [], [])
            result = record.result
            assert (result.name, reason in result.reason) == (error, True), (name, result)
            assert result.reason.isprintable() and result.reason.isascii()
        assert session.request_info().board == BOARD


# ---- The host's one check of a record --------------------------------------------------------

FLOAT23 = TensorInfo(0, "Float", ScalarType.FLOAT, (2, 3), 24, False)


def record_of(dtype: int, sizes: tuple[int, ...], data: bytes, crc: int | None = None):
    output = OutputRecord(0, dtype, sizes, len(data), zlib.crc32(data) if crc is None else crc)
    output.data += data
    return FirmwareRecord(
        board=BOARD,
        memory=MemoryUse(32, 64, 8, 64),
        outputs=[output],
        result=Outcome(True, outputs=1, init_ticks=1, run_ticks=2, tick_hz=10),
    )


def test_a_good_record_passes():
    data = np.arange(6, dtype=np.float32).tobytes()
    (out,) = check_record(record_of(6, (2, 3), data), expected=[FLOAT23])
    np.testing.assert_array_equal(out, np.arange(6, dtype=np.float32).reshape(2, 3))


def test_a_damaged_or_refused_record_fails():
    data = np.arange(6, dtype=np.float32).tobytes()
    with pytest.raises(TargetError, match="CRC mismatch"):
        check_record(record_of(6, (2, 3), data, crc=1), expected=[FLOAT23])
    short = record_of(6, (2, 3), data)
    del short.outputs[0].data[-1]
    with pytest.raises(TargetError, match="23 of 24 bytes arrived"):
        check_record(short, expected=[FLOAT23])
    refused = record_of(6, (2, 3), data)
    refused.result = Outcome(False, code=5, name="OperatorMissing", reason="x")
    with pytest.raises(TargetError, match=r"firmware error OperatorMissing \(code 5\): x"):
        check_record(refused, expected=[FLOAT23])
    with pytest.raises(TargetError, match="never answered the run"):
        check_record(FirmwareRecord(board=BOARD))


def test_outputs_are_checked_against_the_program():
    data = np.arange(6, dtype=np.float32).tobytes()
    with pytest.raises(
        TargetError,
        match=r"output 0: the firmware reported Int \(3\) \[2, 3\], "
        r"the program's output is Float \(6\) \[2, 3\]",
    ):
        check_record(record_of(3, (2, 3), data), expected=[FLOAT23])
    with pytest.raises(TargetError, match=r"reported Float \(6\) \[3, 2\]"):
        check_record(record_of(6, (3, 2), data), expected=[FLOAT23])
    with pytest.raises(TargetError, match="the program has 2 outputs, the firmware reported 1"):
        check_record(record_of(6, (2, 3), data), expected=[FLOAT23, FLOAT23])
