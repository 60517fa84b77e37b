"""Programs export never makes (a review's reproducers): each is refused with a reason by the
host build (ASan + UBSan) and by the firmware on QEMU, whose 32-bit size_t and `long` show
what the host's 64-bit ones hide. And the host reading the record: a target that does not pass
the firmware's exit status on (the FVP, a board) must not be fooled by program text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from executorch.exir.schema import ScalarType
from fwprograms import method, planned_tensor, program_from_json, shared_int_list_program

from sdk.errors import TargetError
from sdk.firmware.boards import load_board
from sdk.firmware.image import pack_inputs, pack_program
from sdk.program.pte import TensorInfo
from sdk.targets.base import Timing
from sdk.targets.emulator import ConsoleRun, Preload
from sdk.targets.qemu import QemuTarget
from sdk.targets.run import run_firmware

BOARD = "corstone300"
TIMEOUT_S = 120.0
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


def assert_ascii_record(console: str) -> None:
    assert console.isascii(), [c for c in console if not c.isascii()][:5]
    results = [line for line in console.split("\n") if line.startswith("@sdk result")]
    assert len(results) == 1, console


@pytest.mark.parametrize("name", CASES)
def test_the_host_build_refuses(host_run, hostile, name: str):
    _, error, reason = CASES[name]
    # --planned-bytes: the fixture would ask ExecuTorch's deserializer, which expands shared
    # tables (and the programs plan at most 16 bytes).
    result = host_run(hostile[name], [], "--planned-bytes", "16")
    got_name, got_reason = result.error()
    assert (got_name, reason in got_reason) == (error, True), got_reason
    assert "runtime error" not in result.stderr  # UBSan
    assert_ascii_record(result.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_the_firmware_refuses_on_qemu(every_kernel_elf: Path, hostile, name: str, tmp_path):
    _, error, reason = CASES[name]
    board = load_board(BOARD)
    program_blob = tmp_path / "program.sdkp"
    program_blob.write_bytes(pack_program(hostile[name]))
    inputs_blob = tmp_path / "inputs.sdki"
    inputs_blob.write_bytes(pack_inputs([]))
    with pytest.raises(TargetError, match=rf"firmware error {error} \(code \d+\)") as caught:
        run_firmware(
            QemuTarget(board),
            board,
            every_kernel_elf,
            program_blob,
            inputs_blob,
            TIMEOUT_S,
            tmp_path,
            outputs=[],
        )
    assert reason in caught.value.message
    assert_ascii_record(caught.value.log_path.read_text())


# ---- The host's side, on a target that does not pass the exit status on ----------------------


class ReplayTarget:
    """A target that 'runs' by handing back a console text, like the FVP: no exit status."""

    name = "replay"
    propagates_exit_code = False

    def __init__(self, console: str) -> None:
        self.console = console

    def run(self, elf: Path, preloads: list[Preload], timeout_s: float, workdir: Path):
        log = workdir / "console.log"
        log.write_text(self.console, encoding="utf-8")
        return ConsoleRun(0, log, self.console, "")

    def timing(self, init_ticks: int, run_ticks: int, reported_hz: int) -> Timing:
        return Timing("replayed console", init_ticks, run_ticks, reported_hz)


FLOAT23 = TensorInfo(0, "Float", ScalarType.FLOAT, (2, 3), 24, False)


def replay(console: str, tmp_path: Path, outputs=(FLOAT23,)):
    board = load_board(BOARD)
    blob = tmp_path / "inputs.sdki"
    blob.write_bytes(pack_inputs([]))
    return run_firmware(
        ReplayTarget(console),
        board,
        tmp_path / "fw.elf",
        None,
        blob,
        10.0,
        tmp_path,
        outputs=list(outputs),
    )


def ok_record(header: str, data: bytes) -> str:
    import zlib

    return (
        "@sdk begin v=1 board=corstone300\n"
        "@sdk memory planned_used=32 planned_size=64 meta_used=8 meta_size=64\n"
        f"@sdk output index=0 {header} crc={zlib.crc32(data):08x}\n"
        f"@sdk data index=0 offset=0 hex={data.hex()}\n"
        "@sdk result status=ok outputs=1 init_ticks=1 run_ticks=2 tick_hz=10\n"
    )


def test_a_good_record_passes_the_replay_target(tmp_path: Path):
    data = np.arange(6, dtype=np.float32).tobytes()
    result = replay(ok_record("dtype=6 sizes=2,3 nbytes=24", data), tmp_path)
    np.testing.assert_array_equal(result.outputs[0], np.arange(6, dtype=np.float32).reshape(2, 3))


def test_an_injected_result_line_does_not_pass_without_an_exit_status(tmp_path: Path):
    """What the firmware printed for inject.pte before it sanitised names: the operator name's
    U+2028 made the host's str.splitlines() see a last `result status=ok` line."""
    console = (
        "@sdk begin v=1 board=corstone300\n"
        '@sdk result status=error code=5 name=OperatorMissing reason="x\u2028'
        "@sdk memory planned_used=0\u2028"
        f'{FAKE_RESULT}.out: no kernel in this firmware (31 kernels)"\n'
    )
    with pytest.raises(TargetError, match=r"firmware error OperatorMissing \(code 5\)"):
        replay(console, tmp_path, outputs=())


def test_outputs_are_checked_against_the_program(tmp_path: Path):
    data = np.arange(6, dtype=np.float32).tobytes()
    with pytest.raises(
        TargetError,
        match=r"output 0: the firmware reported Int \(3\) \[2, 3\], "
        r"the program's output is Float \(6\) \[2, 3\]",
    ):
        replay(ok_record("dtype=3 sizes=2,3 nbytes=24", data), tmp_path)
    with pytest.raises(TargetError, match=r"reported Float \(6\) \[3, 2\]"):
        replay(ok_record("dtype=6 sizes=3,2 nbytes=24", data), tmp_path)
    with pytest.raises(TargetError, match="the program has 2 outputs, the firmware reported 1"):
        replay(ok_record("dtype=6 sizes=2,3 nbytes=24", data), tmp_path, (FLOAT23, FLOAT23))
