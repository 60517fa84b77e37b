"""The U85 command set (sdk/ethosu/stream/registers_u85.py), its selection by CONFIG, and the
FWD weight format (sdk/ethosu/functional/weights_u85.py) on hand-made data."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from sdk.errors import ProgramError
from sdk.ethosu.functional.weights_u85 import decode_fwd, decode_scales
from sdk.ethosu.stream.decode import decode_cmd_data
from sdk.ethosu.stream.registers import U55
from sdk.ethosu.stream.registers_u85 import U85


def test_the_u85_set_has_regors_commands():
    assert (len(U85.cmd0), len(U85.cmd1)) == (63, 48)
    assert U85.by_name["NPU_OP_RESIZE"].code == 7 and U85.lookup(256, True).name == "NPU_OP_BRANCH"
    scale = U85.by_name["NPU_SET_OFM_SCALE"]
    assert [(f.name, f.word, f.lsb, f.width) for f in scale.fields] == [
        ("shift", 0, 0, 6), ("dbl_rnd", 0, 6, 5), ("round_mode", 0, 13, 3), ("scale", 1, 0, 31),
    ]  # fmt: skip
    assert scale.fields[2].text(1) == "ROUND_MODE_OFM_NATURAL"
    # the same name, another layout: the U55's OFM_SCALE has a 32-bit scale
    assert U55.by_name["NPU_SET_OFM_SCALE"].fields[-1].width == 32


def _cop1(cfg: int, *words: int) -> bytes:
    body = [1, cfg, 0x20007000, 2 | (len(words) << 16), *words]
    return b"COP1" + struct.pack(f"<{len(body)}I", *body)


def test_config_picks_the_command_set():
    stop = 0xFFFF0000
    resize_mode = 0x00020007  # NPU_OP_RESIZE mode NEAREST: an opcode only the U85 has
    decoded = decode_cmd_data(_cop1(0x20000118, resize_mode, stop))
    assert decoded.is_u85 and decoded.operations[0].name == "NPU_OP_RESIZE"
    with pytest.raises(ProgramError, match="unknown cmd0 opcode 0x007"):
        decode_cmd_data(_cop1(0x00001817 & ~0xF0, resize_mode, stop))  # a U55's CONFIG
    with pytest.raises(ProgramError, match="command stream version 0 for Ethos-U85"):
        decode_cmd_data(_cop1(0x20000108, stop))


def _fwd(raw: bool, small: bool, adjust: int, palette: list[int], codes: list[int], width: int):
    bits = [int(raw), int(small)] + [0] * 102
    bits += [(adjust & 0xFF) >> k & 1 for k in range(8)]
    for value in palette + [0] * (16 - len(palette)):
        folded = (abs(value) << 1) | (value < 0)
        bits += [folded >> k & 1 for k in range(9)]
    for code in codes:
        bits += [code >> k & 1 for k in range(width)]
    bits += [0] * (-len(bits) % 256)
    return np.packbits(np.array(bits, dtype=np.uint8), bitorder="little").tobytes()


def test_fwd_streams_decode():
    small = decode_fwd(_fwd(False, True, 0, [3, -1, 0, 7], [0, 1, 2, 3, 1], 2))
    assert small[:5].tolist() == [3, -1, 0, 7, -1]
    lut4 = decode_fwd(_fwd(False, False, 0, list(range(-8, 8)), [0, 15, 8], 4))
    assert lut4[:3].tolist() == [-8, 7, 0]
    raw = decode_fwd(_fwd(True, False, -2, [], [0x81, 0x7F, 0x00], 8))  # values + adjust
    assert raw[:3].tolist() == [-127 + 2, 127 + 2, 2]
    with pytest.raises(ProgramError, match="no FWD stream"):
        decode_fwd(b"\0" * 31)


def test_scale_records_by_accumulator():
    record32 = (-5).to_bytes(4, "little", signed=True) + (0x7FFFFFFF).to_bytes(4, "little")
    record48 = (-(1 << 40)).to_bytes(6, "little", signed=True) + (0x7FFF).to_bytes(2, "little")
    i32 = decode_scales(record32 + bytes([40, 0]), 1, acc48=False)
    i48 = decode_scales(record48 + bytes([3, 0]), 1, acc48=True)
    assert (int(i32.bias[0]), int(i32.scale[0]), int(i32.shift[0])) == (-5, 0x7FFFFFFF, 40)
    assert (int(i48.bias[0]), int(i48.scale[0]), int(i48.shift[0])) == (-(1 << 40), 0x7FFF, 3)
