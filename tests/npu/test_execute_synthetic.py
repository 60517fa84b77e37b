"""The command-stream executor on hand-made streams: the modes no export of the regression set
reaches (ELEMENTWISE SHL/SHR/CLZ/LRELU, TRUNCATE rounding, reversed operands, an IFM split
over tiles, negative strides), against numpy written from the documented semantics
(sdk/npu/arith.py's notes). These hold the executor's plumbing (registers -> operands ->
output stage -> OFM bytes); the semantics themselves are open points until the FVP or
silicon checks them (no TOSA graph pins them).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from sdk.errors import ProgramError
from sdk.npu.decode import decode_cmd_data
from sdk.npu.execute import NpuState, execute
from sdk.npu.registers import BY_NAME, CMD1_CONTROL

ELEMENTWISE_MODES = {"MUL": 0, "ADD": 1, "SUB": 2, "LRELU": 5, "CLZ": 7, "SHR": 8, "SHL": 9}


def command(name: str, **fields: int) -> list[int]:
    """One command's words (the inverse of the decoder's field extraction)."""
    cmd = BY_NAME[name]
    param = payload = 0
    for f in cmd.fields:
        value = fields.pop(f.name, 0)
        if f.address:
            payload, param = value & 0xFFFFFFFF, param | ((value >> 32) & 0xFF)
        elif f.word == 0:
            param |= (value & ((1 << f.width) - 1)) << f.lsb
        else:
            payload |= (value & ((1 << f.width) - 1)) << f.lsb
    assert not fields, f"{name} has no fields {sorted(fields)}"
    word = (param << 16) | ((CMD1_CONTROL if cmd.cmd1 else 0) << 14) | cmd.code
    return [word, payload] if cmd.cmd1 else [word]


def cmd_data(*commands: list[int]) -> bytes:
    words = [w for c in commands for w in c] + command("NPU_OP_STOP", mask=0xFFFF)
    action = 2 | ((len(words) >> 16) << 8) | ((len(words) & 0xFFFF) << 16)
    return b"COP1" + struct.pack(f"<{len(words) + 1}I", action, *words)


PRECISION = {np.int8: 0, np.int16: 1, np.int32: 2}


def feature_map(prefix: str, base: int, shape, dtype, strides=None, tiles=None) -> list[list[int]]:
    """Registers of an NHWC feature map in region 1 (tiles: (height0, base2) for a 2-row split)."""
    h, w, c = shape
    elem = np.dtype(dtype).itemsize
    sy, sx = strides or (w * c * elem, c * elem)
    height0, base2 = tiles or (h, 0)
    out = [
        command(f"NPU_SET_{prefix}_REGION", region=1),
        command(f"NPU_SET_{prefix}_BASE0", addr=base),
        command(f"NPU_SET_{prefix}_BASE2", addr=base2),
        command(f"NPU_SET_{prefix}_HEIGHT0_M1", height_m1=height0 - 1),
        command(f"NPU_SET_{prefix}_HEIGHT1_M1", height_m1=height0 - 1),
        command(f"NPU_SET_{prefix}_WIDTH0_M1", width_m1=w - 1),
        command(f"NPU_SET_{prefix}_STRIDE_Y", addr=sy & 0xFFFFFFFF),
        command(f"NPU_SET_{prefix}_STRIDE_X", addr=sx & 0xFFFFFFFF),
        command(f"NPU_SET_{prefix}_STRIDE_C", addr=elem),
    ]
    precision = {"activation_type": 1, "activation_precision": PRECISION[dtype]}
    if prefix == "IFM":
        out.append(command("NPU_SET_IFM_DEPTH_M1", depth_m1=c - 1))
    if prefix == "OFM":
        out += [
            command("NPU_SET_OFM_HEIGHT_M1", height_m1=h - 1),
            command("NPU_SET_OFM_WIDTH_M1", width_m1=w - 1),
            command("NPU_SET_OFM_DEPTH_M1", depth_m1=c - 1),
        ]
    return [*out, command(f"NPU_SET_{prefix}_PRECISION", **precision)]


def run(data: bytes, memory: np.ndarray) -> np.ndarray:
    state = NpuState({1: memory})
    execute(decode_cmd_data(data), state)
    return memory


def place(memory: np.ndarray, at: int, values: np.ndarray) -> None:
    raw = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
    memory[at : at + raw.size] = raw


SHAPE = (3, 4, 5)


def elementwise(
    mode: str, a: np.ndarray, b: np.ndarray | None, out_dtype, *extra: list[int]
) -> np.ndarray:
    memory = np.zeros(4096, dtype=np.uint8)
    place(memory, 0, a)
    regs = feature_map("IFM", 0, SHAPE, a.dtype.type) + feature_map("OFM", 2048, SHAPE, out_dtype)
    if b is not None:
        place(memory, 1024, b)
        regs += feature_map("IFM2", 1024, SHAPE, b.dtype.type)
    op = command("NPU_OP_ELEMENTWISE", elementwise_mode=ELEMENTWISE_MODES[mode])
    run(cmd_data(*regs, *extra, op), memory)
    size = int(np.prod(SHAPE)) * np.dtype(out_dtype).itemsize
    return memory[2048 : 2048 + size].view(out_dtype).reshape(SHAPE)


rng = np.random.default_rng(5)


def test_shl_wraps_at_32_bits_and_shr_rounds_at_the_ifm_round_mode():
    a = rng.integers(-(2**31), 2**31, SHAPE, dtype=np.int32)
    b = rng.integers(0, 32, SHAPE, dtype=np.int32)
    got = elementwise("SHL", a, b, np.int32)
    want = ((a.astype(np.int64) << b) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(got, want)
    natural = command("NPU_SET_IFM_PRECISION", activation_type=1, activation_precision=2,
                      round_mode=2)  # fmt: skip
    got = elementwise("SHR", a, b, np.int32, natural)
    half = np.where(b > 0, np.left_shift(1, np.maximum(b - 1, 0).astype(np.int64)), 0)
    np.testing.assert_array_equal(got, (a.astype(np.int64) + half) >> b)


def test_clz_counts_the_leading_zeros_of_32_bits():
    a = rng.integers(-(2**31), 2**31, SHAPE, dtype=np.int32)
    a.flat[:3] = (0, 1, -1)
    got = elementwise("CLZ", a, None, np.int32)
    want = [32 - int(v & 0xFFFFFFFF).bit_length() for v in a.astype(np.int64).reshape(-1)]
    np.testing.assert_array_equal(got.reshape(-1), want)


def test_lrelu_scales_negatives_by_alpha_and_truncate_rounds_toward_zero():
    a = rng.integers(-128, 128, SHAPE, dtype=np.int8)
    alpha = command("NPU_SET_OFM_SCALE", scale=3, shift=3)  # alpha = 3/8
    truncate = command("NPU_SET_OFM_PRECISION", activation_type=1, round_mode=1)
    got = elementwise("LRELU", a, None, np.int8, alpha, truncate)
    x = a.astype(np.int64)
    np.testing.assert_array_equal(got, np.where(x >= 0, x, -((-x * 3) >> 3)))


def test_reversed_operands_subtract_ifm_from_ifm2():
    a = rng.integers(-100, 100, SHAPE, dtype=np.int8)
    b = rng.integers(-100, 100, SHAPE, dtype=np.int8)
    unit = [command("NPU_SET_OPA_SCALE", scale=1), command("NPU_SET_OPB_SCALE", scale=1)]
    normal = elementwise("SUB", a, b, np.int16, *unit)
    np.testing.assert_array_equal(normal, a.astype(np.int16) - b)
    swapped = elementwise("SUB", a, b, np.int16, *unit, command("NPU_SET_IFM2_BROADCAST",
                          operand_order=1))  # fmt: skip
    np.testing.assert_array_equal(swapped, b.astype(np.int16) - a)


def test_an_ifm_over_two_tiles_and_an_ofm_written_backwards():
    """ADD with a zero scalar copies: IFM rows 0-1 in tile 0, row 2 in tile 2 elsewhere; the
    OFM's negative x stride reverses each row (Vela's reverse/transposes)."""
    _, w, c = SHAPE
    a = rng.integers(-128, 128, SHAPE, dtype=np.int8)
    memory = np.zeros(4096, dtype=np.uint8)
    place(memory, 0, a[:2])
    place(memory, 512, a[2:])
    row = w * c
    regs = feature_map("IFM", 0, SHAPE, np.int8, tiles=(2, 512))
    regs += feature_map("OFM", 2048 + (w - 1) * c, SHAPE, np.int8, strides=(row, -c))
    regs += [
        command("NPU_SET_IFM2_BROADCAST", broadcast_constant=1),
        command("NPU_SET_IFM2_SCALAR", scalar=0),
        command("NPU_SET_IFM2_PRECISION", activation_type=1),
        command("NPU_SET_OPA_SCALE", scale=1),
        command("NPU_SET_OPB_SCALE", scale=1),
    ]
    run(cmd_data(*regs, command("NPU_OP_ELEMENTWISE", elementwise_mode=1)), memory)
    got = memory[2048 : 2048 + a.size].view(np.int8).reshape(SHAPE)
    np.testing.assert_array_equal(got, a[:, ::-1])


def test_an_ofm_outside_its_region_is_refused():
    a = np.zeros(SHAPE, dtype=np.int8)
    memory = np.zeros(128, dtype=np.uint8)
    regs = feature_map("IFM", 0, SHAPE, np.int8) + feature_map("OFM", 100, SHAPE, np.int8)
    op = command("NPU_OP_ELEMENTWISE", elementwise_mode=6)  # ABS
    place(memory, 0, a)
    with pytest.raises(ProgramError, match="outside its region"):
        run(cmd_data(*regs, op), memory)


def test_a_register_never_set_is_named():
    with pytest.raises(ProgramError, match="needs OFM_HEIGHT_M1"):
        run(cmd_data(command("NPU_OP_ELEMENTWISE", elementwise_mode=6)), np.zeros(64, np.uint8))


@pytest.mark.parametrize(
    "function,message",
    [(3, "the TANH activation function"), (4, "the SIGMOID activation function"),
     (5, "activation function 5 \\(undefined\\)")],
)  # fmt: skip
def test_the_built_in_tanh_and_sigmoid_are_refused_by_name(function, message):
    """Their arithmetic is in no public source (sdk/npu/execute.py `_activation`)."""
    a = np.zeros(SHAPE, dtype=np.int16)
    with pytest.raises(ProgramError, match=message):
        elementwise("LRELU", a, None, np.int16, command("NPU_SET_ACTIVATION",
                    activation_function=function))  # fmt: skip
