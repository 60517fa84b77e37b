"""The command-stream executor on hand-made streams: the modes no export of the regression set
reaches (ELEMENTWISE SHL/SHR/CLZ/LRELU, TRUNCATE rounding, reversed operands, an IFM split
over tiles, negative strides), against numpy written from the documented semantics
(sdk/ethosu/functional/arith.py's notes). These hold the executor's plumbing (registers ->
operands ->
output stage -> OFM bytes); the semantics themselves are open points until the FVP or
silicon checks them (no TOSA graph pins them).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from sdk.errors import ProgramError
from sdk.ethosu.functional.execute import NpuState, execute
from sdk.ethosu.stream.decode import decode_cmd_data
from sdk.ethosu.stream.registers import BY_NAME, CMD1_CONTROL

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
    """Their arithmetic is in no public source (sdk/ethosu/functional/execute.py `_activation`)."""
    a = np.zeros(SHAPE, dtype=np.int16)
    with pytest.raises(ProgramError, match=message):
        elementwise("LRELU", a, None, np.int16, command("NPU_SET_ACTIVATION",
                    activation_function=function))  # fmt: skip


def average_pool(x: np.ndarray, kernel, stride, pads, zps=(0, 0), *extra: list[int]) -> np.ndarray:
    """A hand-made POOL AVERAGE over `x` (H, W, C) with padding (top, left, bottom, right),
    registers as regor writes a padded one (GLOBAL scale mode, OFM_SCALE 1 shift 0)."""
    (kh, kw), (top, left, bottom, right) = kernel, pads
    oh = (x.shape[0] + top + bottom - kh) // stride + 1
    ow = (x.shape[1] + left + right - kw) // stride + 1
    out_shape = (oh, ow, x.shape[2])
    memory = np.zeros(4096, dtype=np.uint8)
    place(memory, 0, x)
    dtype = x.dtype.type
    regs = feature_map("IFM", 0, x.shape, dtype) + feature_map("OFM", 2048, out_shape, dtype)
    regs += [
        command("NPU_SET_OFM_PRECISION", activation_type=1, activation_precision=PRECISION[dtype],
                scale_mode=1, round_mode=2),
        command("NPU_SET_OFM_SCALE", scale=1, shift=0),
        command("NPU_SET_KERNEL_HEIGHT_M1", height_m1=kh - 1),
        command("NPU_SET_KERNEL_WIDTH_M1", width_m1=kw - 1),
        command("NPU_SET_KERNEL_STRIDE", stride_x_lsb=stride - 1, stride_y_lsb=stride - 1),
        command("NPU_SET_IFM_PAD_TOP", pad=top),
        command("NPU_SET_IFM_PAD_LEFT", pad=left),
        command("NPU_SET_IFM_PAD_BOTTOM", pad=bottom),
        command("NPU_SET_IFM_PAD_RIGHT", pad=right),
        command("NPU_SET_IFM_ZERO_POINT", zero_point=zps[0] & 0xFFFF),
        command("NPU_SET_OFM_ZERO_POINT", zero_point=zps[1] & 0xFFFF),
    ]  # fmt: skip
    run(cmd_data(*regs, *extra, command("NPU_OP_POOL", pooling_mode=1)), memory)
    size = int(np.prod(out_shape)) * x.dtype.itemsize
    return memory[2048 : 2048 + size].view(dtype).reshape(out_shape)


def tosa_avg_pool2d(x: np.ndarray, kernel, stride, pads, zps=(0, 0)) -> np.ndarray:
    """TOSA 1.0 AVG_POOL2D, element by element in Python integers: the divisor counts only
    elements inside the IFM; reciprocal_scale, then apply_scale_32 without double rounding."""
    (kh, kw), (top, left, bottom, right) = kernel, pads
    h, w, c = x.shape
    oh, ow = (h + top + bottom - kh) // stride + 1, (w + left + right - kw) // stride + 1
    info = np.iinfo(x.dtype)
    out = np.zeros((oh, ow, c), dtype=x.dtype)
    for oy in range(oh):
        for ox in range(ow):
            for ch in range(c):
                inside = [
                    int(x[y, xx, ch]) - zps[0]
                    for y in range(oy * stride - top, oy * stride - top + kh)
                    for xx in range(ox * stride - left, ox * stride - left + kw)
                    if 0 <= y < h and 0 <= xx < w
                ]
                count = len(inside)
                k = (count - 1).bit_length()
                multiplier, shift = (((1 << 30) + 1) << k) // count, 30 + k
                value = (sum(inside) * multiplier + (1 << (shift - 1))) >> shift
                out[oy, ox, ch] = min(max(value + zps[1], info.min), info.max)
    return out


def test_a_padded_average_pool_divides_by_the_valid_elements_halves_away_from_zero():
    """Hand-checked: windows [pad, 3, 4], [3, 4, 8], [4, 8, pad] -> 3.5, 5, 6 -> 4, 5, 6; the
    negated input gives -4, -5, -6 (a kernel-size divisor would give 2 and 4 at the edges)."""
    x = np.array([3, 4, 8], dtype=np.int8).reshape(1, 3, 1)
    got = average_pool(x, (1, 3), 1, (0, 1, 0, 1))
    np.testing.assert_array_equal(got.reshape(-1), [4, 5, 6])
    got = average_pool(-x, (1, 3), 1, (0, 1, 0, 1))
    np.testing.assert_array_equal(got.reshape(-1), [-4, -5, -6])


# Shapes whose padded extent less the kernel divides by the stride: TOSA's AVG_POOL2D requires
# it, so the padding registers hold exactly what the windows reach.
@pytest.mark.parametrize(
    "dtype,shape,kernel,stride,pads,zps",
    [
        (np.int8, (5, 6, 3), (3, 3), 1, (1, 1, 1, 1), (-3, 7)),  # SAME 3x3
        (np.int8, (5, 5, 2), (2, 2), 2, (0, 0, 1, 1), (0, 0)),  # ceil_mode's bottom/right pad
        (np.int8, (5, 7, 2), (3, 3), 2, (1, 1, 1, 1), (5, -2)),  # stride 2
        (np.int16, (4, 5, 2), (3, 2), 1, (1, 0, 1, 1), (0, 0)),  # int16, uneven padding
    ],
)
def test_a_padded_average_pool_matches_tosa_avg_pool2d(dtype, shape, kernel, stride, pads, zps):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max + 1, shape, dtype=dtype)
    got = average_pool(x, kernel, stride, pads, zps)
    want = tosa_avg_pool2d(x, kernel, stride, pads, zps)
    np.testing.assert_array_equal(got, want)
    # the edges differ from a kernel-size divisor (count_include_pad): the test can tell
    full = tosa_avg_pool2d(np.pad(x, ((pads[0], pads[2]), (pads[1], pads[3]), (0, 0)),
                           constant_values=zps[0]), kernel, stride, (0, 0, 0, 0), zps)  # fmt: skip
    assert (got != full).any()


def test_a_padded_average_pool_with_a_scale_is_refused():
    x = np.zeros((3, 3, 1), dtype=np.int8)
    with pytest.raises(ProgramError, match="padded AVERAGE pool with OFM_SCALE 3 shift 1"):
        average_pool(x, (3, 3), 1, (1, 1, 1, 1), (0, 0), command("NPU_SET_OFM_SCALE", scale=3,
                     shift=1))  # fmt: skip


def dma(
    memory: np.ndarray,
    src: int,
    dst: int,
    length: int,
    modes: tuple[int, int] = (0, 0),
    size0: int | None = None,
    size1: int | None = None,
    skip0: int | None = None,
    skip1: int | None = None,
) -> np.ndarray:
    """One DMA_START within region 1 (sizes and skips set only when given)."""
    regs = [
        command("NPU_SET_DMA0_SRC_REGION", region=1, stride_mode=modes[0]),
        command("NPU_SET_DMA0_DST_REGION", region=1, stride_mode=modes[1]),
        command("NPU_SET_DMA0_SRC", addr=src),
        command("NPU_SET_DMA0_DST", addr=dst),
        command("NPU_SET_DMA0_LEN", addr=length),
    ]
    for name, value in (("SIZE0", size0), ("SIZE1", size1)):
        if value is not None:
            regs.append(command(f"NPU_SET_DMA0_{name}", size=value))
    for name, value in (("SKIP0", skip0), ("SKIP1", skip1)):
        if value is not None:
            regs.append(command(f"NPU_SET_DMA0_{name}", addr=value & ((1 << 40) - 1)))
    return run(cmd_data(*regs, command("NPU_OP_DMA_START")), memory)


def numbered(size: int = 512) -> np.ndarray:
    return (np.arange(size) % 251).astype(np.uint8)


def test_a_2d_dma_gathers_rows_of_len_bytes_skip0_apart():
    """Rows of 3 bytes every 3 + 5 bytes from 10, packed contiguously at 300."""
    memory = numbered()
    before = memory.copy()
    dma(memory, 10, 300, 3, modes=(1, 0), size0=4, skip0=5)
    rows = before[10 : 10 + 4 * 8].reshape(4, 8)[:, :3]
    np.testing.assert_array_equal(memory[300:312], rows.reshape(-1))
    np.testing.assert_array_equal(memory[312:], before[312:])  # nothing past the 12 bytes


def test_a_3d_dma_scatters_planes_skip1_apart_after_their_rows():
    """Contiguous source; destination rows every 4 + 2 bytes, planes (4 + 2) * 3 + 7 apart."""
    memory = numbered()
    before = memory.copy()
    dma(memory, 0, 200, 4, modes=(0, 2), size0=3, size1=2, skip0=2, skip1=7)
    want = before.copy()
    for plane in range(2):
        for row in range(3):
            at = 200 + plane * 25 + row * 6
            want[at : at + 4] = before[(plane * 3 + row) * 4 :][:4]
    np.testing.assert_array_equal(memory, want)


def test_both_sides_strided_share_the_skips_and_a_negative_skip_walks_back():
    memory = numbered()
    before = memory.copy()
    dma(memory, 100, 300, 2, modes=(1, 1), size0=3, skip0=-4)  # rows at 0, -2, -4
    for row in range(3):
        np.testing.assert_array_equal(memory[300 - 2 * row :][:2], before[100 - 2 * row :][:2])
    np.testing.assert_array_equal(memory[302:], before[302:])
    np.testing.assert_array_equal(memory[:296], before[:296])


def test_a_strided_dma_past_its_region_or_with_mixed_modes_is_refused():
    with pytest.raises(ProgramError, match="destination outside its region"):
        dma(numbered(), 0, 400, 8, modes=(0, 1), size0=4, skip0=32)  # last row 520: past 512
    dma(numbered(), 0, 400, 8, modes=(0, 1), size0=4, skip0=5)  # last row 439..446: inside
    with pytest.raises(ProgramError, match="strided 2-D from and 3-D to"):
        dma(numbered(), 0, 100, 4, modes=(1, 2), size0=2, size1=2, skip0=0, skip1=0)
    with pytest.raises(ProgramError, match="needs DMA0_SIZE0"):
        dma(numbered(), 0, 100, 4, modes=(1, 0), skip0=0)


def reduce_sum(x: np.ndarray, acc_format: int) -> int:
    """A hand-made REDUCE_SUM of an int32 (1, 1, C) IFM into one int32, OFM_SCALE 1 >> 4."""
    memory = np.zeros(256, dtype=np.uint8)
    place(memory, 0, x)
    regs = feature_map("IFM", 0, x.shape, np.int32) + feature_map("OFM", 128, (1, 1, 1), np.int32)
    regs += [
        command("NPU_SET_OFM_PRECISION", activation_type=1, activation_precision=2, scale_mode=1,
                round_mode=2),
        command("NPU_SET_OFM_SCALE", scale=1, shift=4),
        command("NPU_SET_ACC_FORMAT", acc_format=acc_format),
    ]  # fmt: skip
    run(cmd_data(*regs, command("NPU_OP_POOL", pooling_mode=2)), memory)
    return int(memory[128:132].view(np.int32)[0])


@pytest.mark.parametrize("sign", [1, -1])
def test_a_sum_past_the_i32_accumulator_saturates_and_fits_in_i40(sign):
    """4 * 2^30 = 2^32: I32 holds 2^31 - 1 (or -2^31), then / 16; I40 holds it exactly."""
    x = np.full((1, 1, 4), sign * 2**30, dtype=np.int32)
    saturated = (2**31 - 1) if sign > 0 else -(2**31)
    assert reduce_sum(x, 0) == (saturated + 8) >> 4
    assert reduce_sum(x, 1) == (sign * 2**32 + 8) >> 4
    small = np.array([[[5, -7, 100, 2]]], dtype=np.int32)  # far inside: exact either way
    assert reduce_sum(small, 0) == reduce_sum(small, 1) == (100 + 8) >> 4


def test_a_sum_whose_saturation_depends_on_the_accumulation_order_is_refused():
    """2^30 + 2^30 - 2^30 - 2^30 passes 2^31 in this order and not in another."""
    x = np.array([[[2**30, 2**30, -(2**30), -(2**30)]]], dtype=np.int32)
    with pytest.raises(ProgramError, match="mixed-sign partial sums"):
        reduce_sum(x, 0)
    assert reduce_sum(x, 1) == 0  # 40 bits: no partial sum leaves the range


def conv_1x1(x: np.ndarray, w: np.ndarray, acc_format: int) -> np.ndarray:
    """A hand-made 1x1 CONV of an int16 (1, 1, IC) IFM by int8-range weights (OC, 1, 1, IC)
    into int16, bias 0, scale 1 >> 20 per channel; weights encoded by the wheel's codec."""
    from ethosu import mlw_codec

    from sdk.ethosu.functional.weights import encode_scales

    oc, block = w.shape[0], 8
    encoded, _ = mlw_codec.reorder_encode(8, 8, w.astype(np.int16), block, 0, 0, 16, 8, 8)
    scales = encode_scales(np.zeros(oc), np.ones(oc, dtype=np.uint64), np.full(oc, 20))
    memory = np.zeros(16384, dtype=np.uint8)
    place(memory, 0, x)
    memory[8192 : 8192 + len(scales)] = np.frombuffer(scales, dtype=np.uint8)
    memory[9216 : 9216 + len(encoded)] = np.frombuffer(bytes(encoded), dtype=np.uint8)
    regs = feature_map("IFM", 0, x.shape, np.int16) + feature_map("OFM", 6144, (1, 1, oc), np.int16)
    regs += [
        command("NPU_SET_OFM_BLK_DEPTH_M1", depth_m1=block - 1),
        command("NPU_SET_SCALE_REGION", region=1),
        command("NPU_SET_SCALE_BASE", addr=8192),
        command("NPU_SET_SCALE_LENGTH", length=len(scales)),
        command("NPU_SET_WEIGHT_REGION", region=1),
        command("NPU_SET_WEIGHT_BASE", addr=9216),
        command("NPU_SET_WEIGHT_LENGTH", length=len(encoded)),
        command("NPU_SET_ACC_FORMAT", acc_format=acc_format),
    ]
    run(cmd_data(*regs, command("NPU_OP_CONV")), memory)
    return memory[6144 : 6144 + 2 * oc].view(np.int16)


def test_a_convolution_saturates_at_the_accumulator_width():
    """1024 * 32767 * 127 = 4261085184: I32 holds 2^31 - 1 -> 2048 after >> 20 (rounded);
    I40 holds it -> 4064; a channel of small weights is exact in both."""
    x = np.full((1, 1, 1024), 32767, dtype=np.int16)
    w = np.zeros((8, 1, 1, 1024), dtype=np.int64)
    w[0], w[1], w[2] = 127, -127, 1
    exact = [x.astype(np.int64).sum() * k for k in (127, -127, 1)]
    got32, got40 = conv_1x1(x, w, 0), conv_1x1(x, w, 1)
    want32 = [(min(max(v, -(2**31)), 2**31 - 1) + 2**19) >> 20 for v in exact]
    want40 = [(v + 2**19) >> 20 for v in exact]
    np.testing.assert_array_equal(got32[:3], want32)
    np.testing.assert_array_equal(got40[:3], want40)
    assert want32[:2] != want40[:2] and want32[2] == want40[2]


def test_a_convolution_whose_saturation_depends_on_the_order_is_refused():
    x = np.full((1, 1, 2048), 32767, dtype=np.int16)
    w = np.zeros((8, 1, 1, 2048), dtype=np.int64)
    w[0, ..., :1024], w[0, ..., 1024:] = 127, -127  # each half alone passes 2^31: order decides
    with pytest.raises(ProgramError, match="mixed-sign partial sums"):
        conv_1x1(x, w, 0)
    assert conv_1x1(x, w, 1)[0] == 0
