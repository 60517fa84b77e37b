"""Malformed cmd_data is refused with a ProgramError naming the byte offset and the reason;
random truncations and corruptions of a real stream never raise anything else."""

from __future__ import annotations

import random
import re
import struct

import pytest

from sdk.errors import ProgramError
from sdk.ethosu.stream.decode import decode_cmd_data

STOP = 0xFFFF0000
IFM_REGION_1 = 0x0001010F
IFM_BASE0 = 0x00004000  # cmd1: needs a payload word


@pytest.fixture(scope="module")
def real_cmd_data(npu_program) -> bytes:
    from sdk.program.audit import read_delegates
    from sdk.program.pte import load_program

    return read_delegates(load_program(npu_program("conv_act", "int8")))[0].vela.blocks["cmd_data"]


def _cop1(*stream: int, config: int = 0x00001807, actions: tuple[int, ...] = ()) -> bytes:
    """COP1 + OPTIMIZER_CONFIG + `actions` + one COMMAND_STREAM of `stream` (at byte 20+)."""
    words = [0x00100001, config, 0x10066001, *actions, 0x02 | (len(stream) << 16), *stream]
    return b"COP1" + struct.pack(f"<{len(words)}I", *words)


def _refused(data: bytes, offset: int, reason: str) -> None:
    with pytest.raises(ProgramError) as info:
        decode_cmd_data(data)
    message = str(info.value)
    assert f"cmd_data byte {offset} " in message, message
    assert re.search(reason, message), message


def test_a_minimal_stream_decodes():
    decoded = decode_cmd_data(_cop1(IFM_REGION_1, IFM_BASE0, 0x100, STOP))
    assert [c.name for c in decoded.commands] == [
        "NPU_SET_IFM_REGION",
        "NPU_SET_IFM_BASE0",
        "NPU_OP_STOP",
    ]
    stop = decoded.operations[0]
    assert stop.fields == {"mask": 0xFFFF}
    assert stop.value("IFM_BASE0", "addr") == 0x100 and stop.value("IFM_REGION", "region") == 1
    assert decoded.commands[0].offset == 20 and decoded.commands[0].stream_offset == 0


def test_bad_fourcc():
    _refused(b"XOP1" + _cop1(STOP)[4:], 0, "fourcc COP1")
    _refused(b"", 0, "fourcc COP1")


def test_unsupported_cop_version():
    _refused(b"COP2" + _cop1(STOP)[4:], 3, "unsupported payload version")


def test_unsupported_command_stream_version():
    _refused(_cop1(STOP, config=0x00001817), 8, "command stream version 1")


def test_truncated_word():
    data = _cop1(IFM_REGION_1, STOP)
    _refused(data[:-2], len(data) - 4, r"truncated word \(2 bytes\)")


def test_command_stream_length_past_the_end():
    data = _cop1(IFM_REGION_1, STOP)
    _refused(data[:-4], 16, "COMMAND_STREAM: 2 words, 1 past the end")


def test_optimizer_config_past_the_end():
    _refused(b"COP1" + struct.pack("<2I", 0x00100001, 0x1807), 4, "OPTIMIZER_CONFIG")


def test_cmd1_without_payload():
    _refused(_cop1(IFM_REGION_1, IFM_BASE0), 24, r"NPU_SET_IFM_BASE0 \(cmd1\) without its payload")


def test_unknown_opcodes():
    _refused(_cop1(0x000003FF, STOP), 20, "unknown cmd0 opcode 0x3ff")
    _refused(_cop1(0x000043FF, 0, STOP), 20, "unknown cmd1 opcode 0x3ff")
    _refused(_cop1(0x00000004, STOP), 20, "unknown cmd0 opcode 0x004")  # a gap in cmd0


def test_reserved_and_control_bits():
    _refused(_cop1(IFM_REGION_1 | 0x400, STOP), 20, "reserved bits 10-13")
    _refused(_cop1(IFM_REGION_1 | 0x8000, STOP), 20, "control bits 2")


def test_stop_must_end_the_stream():
    _refused(_cop1(IFM_REGION_1), 24, "ends without NPU_OP_STOP")
    _refused(_cop1(STOP, IFM_REGION_1), 24, "1 words after NPU_OP_STOP")


def test_unknown_driver_action_and_missing_stream():
    _refused(_cop1(STOP, actions=(0x07,)), 16, "unknown driver action 7")
    _refused(b"COP1" + struct.pack("<3I", 0x00100001, 0x1807, 0x10066001), 16, "no COMMAND_STREAM")


def test_every_truncation_of_a_real_stream_is_refused(real_cmd_data):
    decode_cmd_data(real_cmd_data)  # the whole one is fine
    for cut in range(len(real_cmd_data)):
        with pytest.raises(ProgramError):
            decode_cmd_data(real_cmd_data[:cut])
            pytest.fail(f"a cut at byte {cut} was accepted")


def test_random_corruptions_raise_only_program_errors(real_cmd_data):
    """Flipped bits, random words, dropped and inserted words: decoded or ProgramError."""
    rng = random.Random(11)
    n_words = len(real_cmd_data) // 4
    refused = accepted = 0
    for _ in range(3000):
        data = bytearray(real_cmd_data)
        kind = rng.randrange(4)
        at = rng.randrange(n_words) * 4
        if kind == 0:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif kind == 1:
            data[at : at + 4] = rng.randbytes(4)
        elif kind == 2:
            del data[at : at + 4 * rng.randint(1, 3)]
        else:
            data[at:at] = rng.randbytes(4 * rng.randint(1, 3))
        try:
            decode_cmd_data(bytes(data))
            accepted += 1
        except ProgramError as exc:
            assert re.search(r"cmd_data byte \d+ \(0x[0-9a-f]+\): ", str(exc)), exc
            refused += 1
    assert refused > 1000 and accepted > 100, (refused, accepted)
