"""The functional model of the Ethos-U85: runs a decoded U85 command stream over memory regions.

Shares with the U55's model (execute.py) what the two read alike: feature maps and their tiles,
kernels, padding, the convolution sums, DMA; and arith's exact output stage. What differs is
here, by operator family: the output stage's registers (rounding in OFM_SCALE, a clip range
B16 or NONE), OFM transpose and reverse (OFM_PRECISION: the OFM shape registers are the shape
before transposing, the tiles and strides the tensor after it), the 10-byte scale records and
the weight order (weights_u85.py), pooling's SUM and MIN, and elementwise operand scales
(IFM_SCALE / IFM2_SCALE) and broadcasts. What is not modelled is refused by name, never run.
"""

from __future__ import annotations

import time

import numpy as np

from sdk.errors import ProgramError
from sdk.ethosu.functional import arith, weights_u85
from sdk.ethosu.functional.execute import (
    Batch,
    NpuState,
    OverlappingOutput,
    Progress,
    TraceEntry,
    _conv_sum,
    _feature_map,
    _ifm_zero_point,
    _kernel,
    _overlap,
    _padded_ifm,
    _precision,
    _read,
    _saturated,
    _signed,
    _unsupported,
    _val,
    _windows,
)
from sdk.ethosu.functional.featuremap import FeatureMap
from sdk.ethosu.functional.weights import decode_stream
from sdk.ethosu.stream.decode import DecodedCmdData, Operation
from sdk.ethosu.stream.registers import as_signed
from sdk.ethosu.stream.registers_u85 import ENUMS

IGNORED = ("DMA_WAIT", "KERNEL_WAIT", "PMU_MASK", "STOP", "IRQ")
# OFM_SCALE round_mode -> arith's rounding (the others are refused: not reached or not known)
ROUND_MODES = {0: arith.RoundMode.DBL, 1: arith.RoundMode.NATURAL, 4: arith.RoundMode.TRUNCATE}
ACC_BITS = {0: 32, 1: 48}
LUTRAM_BYTES = 2048  # the U85's internal LUT memory: DMA_DST region_mode INTERNAL, address 0..
LUT_SLOT_BYTES = 256
# ACTIVATION activation_function -> (LUT input dtype, entry dtype, table bytes); the table field
# counts tables of that size (regor: slot / (size / 256)). 16-bit inputs take 512 (base, slope)
# int16 pairs interpolated as the U55's int16 LUT (arith.lut16).
LUTS = {
    "LUT_S8_S8": (np.dtype(np.int8), np.dtype(np.int8), 256),
    "LUT_U8_U8": (np.dtype(np.uint8), np.dtype(np.uint8), 256),
    "LUT_S8_S16": (np.dtype(np.int8), np.dtype("<i2"), 512),
    "LUT_S8_S32": (np.dtype(np.int8), np.dtype("<i4"), 1024),
    "LUT_S16_S16": (np.dtype(np.int16), np.dtype("<u4"), 2048),
}


def macs_of(decoded: DecodedCmdData) -> int:
    if decoded.npu_config is None:
        raise ProgramError("NPU executor: a U85 stream without OPTIMIZER_CONFIG (its MAC count)")
    return 1 << (decoded.npu_config & 0xF)


# ---------------------------------------------------------------- the OFM


def _ofm_shape(op: Operation) -> tuple[int, int, int]:
    """The OFM shape registers: the shape before any transpose."""
    return (
        _val(op, "OFM_HEIGHT_M1", "height_m1") + 1,
        _val(op, "OFM_WIDTH_M1", "width_m1") + 1,
        _val(op, "OFM_DEPTH_M1", "depth_m1") + 1,
    )


def _transpose_axes(op: Operation) -> tuple[int, int, int]:
    """The axes of the computed (H, W, C) array in the order the OFM tensor has them."""
    code = _val(op, "OFM_PRECISION", "activation_transpose", 0)
    name = ENUMS["activation_transpose"].get(code)
    if name is None:
        raise _unsupported(op, f"OFM transpose {code}")
    return tuple("HWC".index(axis) for axis in name)  # type: ignore[return-value]


def ofm_map(op: Operation) -> FeatureMap:
    """The OFM as stored: the transposed shape, over the OFM tile and stride registers."""
    shape = _ofm_shape(op)
    stored = tuple(shape[a] for a in _transpose_axes(op))
    return _feature_map(op, "OFM", stored)  # type: ignore[arg-type]


def overlapping_outputs(decoded: DecodedCmdData) -> list[OverlappingOutput]:
    """Every operation of a U85 stream whose OFM overlaps itself (none in a sound stream)."""
    found = []
    for op in decoded.operations:
        in_memory = _val(op, "OFM_PRECISION", "activation_storage", 0) in (0, 1)  # not chained
        if in_memory and op.kind in ("CONV", "DEPTHWISE", "POOL", "ELEMENTWISE", "RESIZE"):
            hit = _overlap(op, ofm_map(op))
            if hit is not None:
                found.append(hit)
    return found


def _clamp(op: Operation, dtype: np.dtype) -> tuple[int, int]:
    """ACTIVATION_MIN/MAX (16-bit) with clip range B16; the OFM type's range with NONE."""
    clip = _val(op, "ACTIVATION", "activation_clip_range", 0)
    if clip == 1 or dtype.itemsize > 2:
        return arith.clamp_range(dtype)
    signed = dtype.kind == "i"
    lo = op.value("ACTIVATION_MIN", "clip_boundary")
    hi = op.value("ACTIVATION_MAX", "clip_boundary")
    lo = None if lo is None else (as_signed(lo, 16) if signed else lo)
    hi = None if hi is None else (as_signed(hi, 16) if signed else hi)
    return arith.clamp_range(dtype, lo, hi)


def _lut_of(op: Operation) -> str | None:
    """The LUT the ACTIVATION register names (None: LUT_NONE); TANH/SIGMOID and 32-bit
    results from 16-bit inputs are refused (regor emits them for TFLite graphs only)."""
    code = _val(op, "ACTIVATION", "activation_function", 0)
    if code == 0:
        return None
    name = ENUMS["activation_function"].get(code, str(code))
    if name not in LUTS:
        raise _unsupported(op, f"the activation function {name}")
    return name


def _lookup(state: NpuState, op: Operation, lut: str, values: np.ndarray) -> np.ndarray:
    """The OFM through the LUT in LUTRAM (the output stage's value, clamped, indexes it)."""
    ifm_dtype, entry, size = LUTS[lut]
    start = _val(op, "ACTIVATION", "table", 0) * size
    if start + size > LUTRAM_BYTES:
        raise ProgramError(f"NPU executor: operation {op.index}: {lut} table past the LUTRAM")
    table = state.shram[start : start + size].view(entry)
    if lut == "LUT_S16_S16":
        return arith.lut16(values, table.astype(np.int64), _round(op))
    index = np.asarray(values, dtype=np.int64) - (np.iinfo(ifm_dtype).min)
    return table[index].astype(np.int64)


def _round(op: Operation) -> arith.RoundMode:
    mode = _val(op, "OFM_SCALE", "round_mode", 0)
    if mode not in ROUND_MODES:
        name = ENUMS["round_mode_ofm"].get(mode, str(mode))
        raise _unsupported(op, f"OFM rounding {name}")
    return ROUND_MODES[mode]


def _global_scale(op: Operation) -> tuple[int, int]:
    if _val(op, "OFM_SCALE", "dbl_rnd", 0):
        raise _unsupported(op, "OFM_SCALE double rounding (dbl_rnd)")
    return _val(op, "OFM_SCALE", "scale", 1), _val(op, "OFM_SCALE", "shift", 0)


def _finish(state: NpuState, op: Operation, acc: np.ndarray, bias, scale, shift) -> None:
    """Output stage, clamp, LUT, reverse or transpose, and the write of the OFM (or its chain
    buffer: a chained OFM has no tile registers)."""
    dtype, _ = _precision(op, "OFM")
    lut = _lut_of(op)
    storage = ENUMS["activation_storage"][_val(op, "OFM_PRECISION", "activation_storage", 0)]
    if storage == "TILE3X1":
        raise _unsupported(op, "an OFM in 3x1 tiles")
    zp = (
        _signed(op, "OFM_ZERO_POINT", "zero_point", 16)
        if dtype.kind == "i"
        else _val(op, "OFM_ZERO_POINT", "zero_point", 0)
    )
    clamp_dtype = dtype if lut is None else LUTS[lut][0]
    out = arith.output_stage(acc, bias, scale, shift, _round(op), zp, _clamp(op, clamp_dtype))
    if lut is not None:
        out = _lookup(state, op, lut, out)
    if _val(op, "OFM_PRECISION", "activation_reverse", 0):
        # The order against the transpose is not known from a checked case: refused.
        raise _unsupported(op, "OFM reverse (not yet checked against a case)")
    out = np.transpose(out, _transpose_axes(op))
    if storage == "CHAINED":  # kept for the next operation (regor: no reverse, no transpose)
        state.chained[_val(op, "OFM_REGION", "region")] = out
        return
    if storage == "NONE":  # no output (regor's enable_output off)
        return
    fm = ofm_map(op)
    hit = _overlap(op, fm)
    if hit is not None:
        raise ProgramError(f"NPU executor: {hit.describe()}: no one result")
    fm.write(state.region(op, _val(op, "OFM_REGION", "region")), out)


def _scale_records(state: NpuState, op: Operation, channels: int):
    region = state.region(op, _val(op, "SCALE_REGION", "region"))
    base = _val(op, "SCALE_BASE", "addr")
    length = _val(op, "SCALE_LENGTH", "length")
    if base + length > region.size:
        raise ProgramError(f"NPU executor: operation {op.index}: scale stream outside its region")
    acc48 = _acc_bits(op) == 48
    return weights_u85.decode_scales(region[base : base + length].tobytes(), channels, acc48)


def _acc_bits(op: Operation) -> int:
    fmt = _val(op, "ACC_FORMAT", "acc_format", 0)
    if _val(op, "ACC_FORMAT", "acc_input", 0) or _val(op, "ACC_FORMAT", "acc_output", 0):
        raise _unsupported(op, "an accumulator kept or fed across operations (ACC_FORMAT)")
    if fmt not in ACC_BITS:
        raise _unsupported(op, f"ACC_FORMAT acc_format {fmt}")
    return ACC_BITS[fmt]


def _per_channel(op: Operation) -> bool:
    return _val(op, "OFM_PRECISION", "scale_mode", 1) == 0


def _scaled_finish(state: NpuState, op: Operation, acc: np.ndarray) -> None:
    """The output stage by the scale stream (per channel) or by OFM_SCALE (global)."""
    if _per_channel(op):
        scales = _scale_records(state, op, acc.shape[-1])
        _round(op)
        _finish(state, op, acc, scales.bias, scales.scale.astype(np.int64), scales.shift)
    else:
        scale, shift = _global_scale(op)
        _finish(state, op, acc, 0, scale, shift)


def _ifm_storage(op: Operation, prefix: str) -> None:
    """Refuses IFM storage other than memory in 2x2 tiles (chained: elementwise only)."""
    storage = _val(op, f"{prefix}_PRECISION", "activation_storage", 0)
    if storage == 2:
        raise _unsupported(op, f"a chained {prefix} into {op.kind}")
    if storage == 1:
        raise _unsupported(op, f"an {prefix} in 3x1 tiles")


# ---------------------------------------------------------------- convolutions


def _conv(state: NpuState, op: Operation, macs: int, depthwise: bool) -> int:
    """CONV or DEPTHWISE; returns the MACs."""
    if not depthwise and op.fields.get("weights_ifm2"):
        return _matmul(state, op)
    _ifm_storage(op, "IFM")
    kernel = _kernel(op)
    oh, ow, oc = _ofm_shape(op)
    zp = _ifm_zero_point(op)
    ifm_dtype, _ = _precision(op, "IFM")
    bits = _acc_bits(op)
    for n in (1, 2, 3):
        if op.value(f"WEIGHT{n}_LENGTH", "length", 0):
            raise _unsupported(op, f"a weight stream per core (WEIGHT{n})")
    padded, _ = _padded_ifm(state, Batch([op]), kernel, zp)
    x = padded - zp
    ic = x.shape[-1]
    shape = (oc, kernel.height, kernel.width, 1 if depthwise else ic)
    traversal = (
        weights_u85.Traversal.DEPTHWISE
        if depthwise
        else weights_u85.Traversal.PART_KERNEL
        if kernel.part_kernel
        else weights_u85.Traversal.DEPTH_FIRST
    )
    microblock = ENUMS["microblock"].get(_val(op, "ACC_FORMAT", "microblock", 0), "?")
    order = weights_u85.U85WeightOrder(
        ofm_block_depth=_val(op, "OFM_BLK_DEPTH_M1", "depth_m1") + 1,
        ofm_ublock=weights_u85.ofm_ublock_depth(macs, microblock),
        traversal=traversal,
        ifm_bits=8 * ifm_dtype.itemsize,
        macs=macs,
        stride=(kernel.stride_y, kernel.stride_x),
        dilation=(kernel.dilation_y, kernel.dilation_x),
        sparse=bool(_val(op, "WEIGHT_FORMAT", "weight_sparsity", 0)),
    )
    region = state.region(op, _val(op, "WEIGHT_REGION", "region"))
    base = _val(op, "WEIGHT_BASE", "addr")
    length = _val(op, "WEIGHT_LENGTH", "length")
    if base + length > region.size:
        raise ProgramError(f"NPU executor: operation {op.index}: weight stream outside its region")
    data = region[base : base + length].tobytes()
    fast = _val(op, "WEIGHT_FORMAT", "weight_format", 0) == 1
    values = weights_u85.decode_fwd(data) if fast else decode_stream(data)
    index = weights_u85.stream_order(shape, order)
    w = weights_u85.unorder(values, shape, index).astype(np.float64)
    if depthwise and ic < oc:
        raise ProgramError(f"NPU executor: operation {op.index}: depthwise IFM depth {ic}")
    acc = _conv_sum(x, w, kernel, (oh, ow, oc), depthwise)
    reach = np.abs(x).max(initial=0) * np.abs(w).sum(axis=(1, 2, 3)).max(initial=0)
    if reach >= 1 << (bits - 1):
        xp, xn, wp, wn = np.maximum(x, 0), np.minimum(x, 0), np.maximum(w, 0), np.minimum(w, 0)
        dims = (kernel, (oh, ow, oc), depthwise)
        positive = _conv_sum(xp, wp, *dims) + _conv_sum(xn, wn, *dims)
        negative = _conv_sum(xp, wn, *dims) + _conv_sum(xn, wp, *dims)
        acc = _saturated(op, acc, positive, negative, bits)
    if not _per_channel(op):
        raise _unsupported(op, "a convolution scaled by OFM_SCALE alone")
    _scaled_finish(state, op, acc)
    return oh * ow * oc * kernel.height * kernel.width * (1 if depthwise else ic)


def _matmul(state: NpuState, op: Operation) -> int:
    """CONV with weights_ifm2: OFM[h, w, n] = sum over k of IFM[h, w, k] * IFM2[h, n, k] (regor
    gives IFM2 transposed to (H, N, K); IFM2 shares IFM_DEPTH), zero points off both."""
    _ifm_storage(op, "IFM")
    _ifm_storage(op, "IFM2")
    kernel = _kernel(op)
    if (kernel.height, kernel.width, kernel.stride_y, kernel.stride_x) != (1, 1, 1, 1):
        raise _unsupported(op, "a matmul with a kernel other than 1x1")
    oh, ow, oc = _ofm_shape(op)
    zp = _ifm_zero_point(op)
    padded, _ = _padded_ifm(state, Batch([op]), kernel, zp)
    x = padded[:oh, :ow] - zp
    ic = x.shape[-1]
    w = _read(state, Batch([op]), "IFM2", (oh, oc, ic)) - _ifm_zero_point(op, "IFM2")
    acc = np.einsum("hwk,hnk->hwn", x, w)
    bits = _acc_bits(op)
    reach = np.abs(x).max(initial=0) * np.abs(w).sum(axis=-1).max(initial=0)
    if reach >= 1 << (bits - 1):
        raise _unsupported(op, f"a matmul that may pass the {bits}-bit accumulator")
    _scaled_finish(state, op, acc)
    return oh * ow * oc * ic


# ---------------------------------------------------------------- pooling

POOL_MODES = ENUMS["pooling_mode"]


def _pool(state: NpuState, op: Operation) -> None:
    mode = POOL_MODES.get(op.fields["pooling_mode"], "?")
    _ifm_storage(op, "IFM")
    kernel = _kernel(op)
    oh, ow, oc = _ofm_shape(op)
    zp = _ifm_zero_point(op)
    batch = Batch([op])
    if mode in ("MAX", "MIN"):  # padding never wins
        extreme = np.iinfo(np.int64).min // 4
        padded, _ = _padded_ifm(state, batch, kernel, extreme if mode == "MAX" else -extreme)
        pick = np.maximum if mode == "MAX" else np.minimum
        acc = None
        for _, _, view in _windows(padded, kernel, oh, ow):
            acc = view.copy() if acc is None else pick(acc, view)
        acc = acc - zp
    elif mode in ("SUM", "AVERAGE", "REDUCE_SUM"):  # sums of (x - zp); padding adds nothing
        padded, mask = _padded_ifm(state, batch, kernel, zp)
        terms = padded - zp
        acc = np.zeros((oh, ow, terms.shape[-1]), dtype=np.int64)
        for _, _, view in _windows(terms, kernel, oh, ow):
            acc += view
        if mode == "REDUCE_SUM":
            acc = acc.sum(axis=-1, keepdims=True)
        bits = _acc_bits(op)
        if np.abs(acc).max(initial=0) >= 1 << (bits - 1):
            raise _unsupported(op, f"a pooled sum past the {bits}-bit accumulator")
        if mode == "AVERAGE":
            acc = _average(acc, mask, kernel, oh, ow)
    else:
        raise _unsupported(op, f"pooling mode {mode}")
    if acc.shape[-1] < oc:
        raise ProgramError(f"NPU executor: operation {op.index}: IFM depth below the OFM's")
    _scaled_finish(state, op, acc[..., :oc])


def _average(acc: np.ndarray, mask: np.ndarray, kernel, oh: int, ow: int) -> np.ndarray:
    """AVERAGE divides each window's sum by its count of real (unpadded) elements itself, as
    TOSA's AVG_POOL2D does; OFM_SCALE is the rescale after it (regor sets the kernel's count
    into OFM_SCALE only for the SUM it uses past 8x8)."""
    counts = np.zeros((oh, ow, 1), dtype=np.int64)
    for _, _, view in _windows(mask, kernel, oh, ow):
        counts += view
    return arith.padded_average(acc, counts)


# ---------------------------------------------------------------- elementwise

# broadcast_mode bits: 1 H, 2 W, 4 C; 8 a scalar (OP_SCALAR)
SCALAR = 8


def _operand(state: NpuState, op: Operation, prefix: str, shape: tuple[int, int, int]):
    """IFM or IFM2, broadcast to the OFM shape, less its zero point."""
    mode = _val(op, f"{prefix}_BROADCAST", "broadcast_mode", 0)
    zp = _ifm_zero_point(op, prefix)
    if mode == SCALAR:
        dtype, _ = _precision(op, prefix)
        raw = _val(op, "OP_SCALAR", "scalar")
        value = as_signed(raw, 32) if dtype.kind == "i" else raw
        return np.full(shape, value - zp, dtype=np.int64)
    if mode > 7:
        raise _unsupported(op, f"{prefix} broadcast mode {mode}")
    extent = tuple(1 if mode & bit else n for bit, n in zip((1, 2, 4), shape))
    if _val(op, f"{prefix}_PRECISION", "activation_storage", 0) == 2:  # CHAINED
        values = state.chained.get(_val(op, f"{prefix}_REGION", "region"))
        if values is None or values.shape != extent:
            raise ProgramError(
                f"NPU executor: operation {op.index}: a chained {prefix} of {extent} that no "
                "earlier operation left in its chain buffer"
            )
    else:
        _ifm_storage(op, prefix)
        values = _read(state, Batch([op]), prefix, extent)  # type: ignore[arg-type]
    return np.broadcast_to(values, shape) - zp


def _operand_scale(op: Operation, register: str, values: np.ndarray) -> np.ndarray:
    if _val(op, register, "dbl_rnd", 0):
        raise _unsupported(op, f"{register} double rounding (dbl_rnd)")
    scale = _val(op, register, "scale", 1)
    shift = _val(op, register, "shift", 0)
    rounding = (
        arith.RoundMode.NATURAL if _val(op, register, "round_mode", 0) else arith.RoundMode.DBL
    )
    if (scale, shift) == (1, 0):
        return values
    return arith.scale_shift(values, scale, shift, rounding)


UNARY = ("ABS", "NOT", "CLZ")
COMPARE = {
    "CMP_EQ": np.equal,
    "CMP_NE": np.not_equal,
    "CMP_GE": np.greater_equal,
    "CMP_GT": np.greater,
}
BITWISE = {
    "AND": np.bitwise_and,
    "OR": np.bitwise_or,
    "XOR": np.bitwise_xor,
    "AND_NOT": lambda a, b: a & ~b,
}


def _shift_amount(b: np.ndarray) -> np.ndarray:
    return np.clip(b, 0, 31)


def _compute(op: Operation, mode: str, a: np.ndarray, b: np.ndarray | None, bits: int):
    """One elementwise mode over the operands (zero points off, IFM scales applied); the
    result goes through the output stage. Comparisons give all ones (-1) or 0: regor's bool8,
    which its SELECT lowering uses as a bit mask (AND, AND_NOT, OR)."""
    if mode in COMPARE:
        return -COMPARE[mode](a, b).astype(np.int64)
    if mode in BITWISE:
        return BITWISE[mode](a, b)
    simple = {
        "MUL": lambda: a * b,
        "ADD": lambda: a + b,
        "SUB": lambda: a - b,
        "MIN": lambda: np.minimum(a, b),
        "MAX": lambda: np.maximum(a, b),
        "ABS": lambda: np.abs(a),
        "NOT": lambda: ~a,
    }
    if mode in simple:
        return simple[mode]()
    if mode == "SHL":  # in the IFM's width, wrapping (TOSA LOGICAL_LEFT_SHIFT)
        out = (a << _shift_amount(b)) & ((1 << bits) - 1)
        return np.where(out >= 1 << (bits - 1), out - (1 << bits), out)
    if mode == "LSR":  # the IFM's bits as unsigned
        return (a & ((1 << bits) - 1)) >> _shift_amount(b)
    if mode == "SHR":  # arithmetic, rounded by the OFM rounding (TOSA's round flag)
        return arith.scale_shift(a, 1, _shift_amount(b), _round(op))
    if mode == "CLZ":
        unsigned = a & 0xFFFFFFFF
        width = np.zeros_like(unsigned)
        for k in range(32):
            width = np.where(unsigned >> k, k + 1, width)
        return 32 - width
    if mode == "DIV":  # TOSA INTDIV: truncating; a zero divisor is the device's own answer
        if np.any(b == 0):
            raise _unsupported(op, "DIV by zero (the device's result is not modelled)")
        quotient = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -quotient, quotient)
    raise _unsupported(op, f"elementwise mode {mode}")


# Written from TOSA's definitions, but no exported case reaches them yet: refused until one
# checks them against the reference (docs/ethosu-functional.md), never run unchecked.
UNCHECKED = ("ABS", "CLZ", "SHL", "SHR", "LSR", "DIV", "CMP_NE")
MODELLED = tuple(
    mode
    for mode in ("MUL", "ADD", "SUB", "MIN", "MAX", *UNARY, *COMPARE, *BITWISE, "SHL", "SHR",
                 "LSR", "DIV")
    if mode not in UNCHECKED
)  # fmt: skip


def _elementwise(state: NpuState, op: Operation) -> str:
    mode = ENUMS["elementwise_mode"].get(op.fields["elementwise_mode"], "?")
    if mode in UNCHECKED:
        raise _unsupported(op, f"elementwise mode {mode} (not yet checked against a case)")
    if mode not in MODELLED:
        raise _unsupported(op, f"elementwise mode {mode}")
    shape = _ofm_shape(op)
    a = _operand_scale(op, "IFM_SCALE", _operand(state, op, "IFM", shape))
    b = None
    if mode not in UNARY:
        b = _operand_scale(op, "IFM2_SCALE", _operand(state, op, "IFM2", shape))
    bits = 8 * _precision(op, "IFM")[0].itemsize
    acc = _compute(op, mode, a, b, bits)
    scale, shift = _global_scale(op)
    _finish(state, op, np.asarray(acc, dtype=np.int64), 0, scale, shift)
    return mode


# ---------------------------------------------------------------- the stream


def _dma_u85(state: NpuState, op: Operation) -> None:
    """A contiguous DMA between regions, or into LUTRAM (DST region_mode INTERNAL: a LUT);
    strided and indexed U85 DMAs are refused."""
    for side in ("SRC", "DST"):
        if _val(op, f"DMA0_{side}_REGION", "idx_mode", 0):
            raise _unsupported(op, "an indexed (gather/scatter) DMA")
    if _val(op, "DMA0_SRC_REGION", "stride_mode", 0):
        raise _unsupported(op, "a strided U85 DMA")
    if _val(op, "DMA0_SRC_REGION", "region_mode", 0):
        raise _unsupported(op, "a DMA from the U85's internal memory")
    length = _val(op, "DMA0_LEN", "addr")
    src = state.region(op, _val(op, "DMA0_SRC_REGION", "region"))
    src_at, dst_at = _val(op, "DMA0_SRC", "addr"), _val(op, "DMA0_DST", "addr")
    if _val(op, "DMA0_DST_REGION", "region_mode", 0):
        dst, what = state.shram[:LUTRAM_BYTES], "LUTRAM"
    else:
        dst, what = state.region(op, _val(op, "DMA0_DST_REGION", "region")), "its region"
    if src_at + length > src.size or dst_at + length > dst.size:
        raise ProgramError(f"NPU executor: DMA {op.index}: a copy past {what} or its source")
    dst[dst_at : dst_at + length] = src[src_at : src_at + length].copy()


def execute(decoded: DecodedCmdData, state: NpuState, progress: Progress | None = None) -> NpuState:
    """Run every operation of a U85 stream, in order, on `state` (modified in place)."""
    macs = macs_of(decoded)
    ops = decoded.operations
    for at, op in enumerate(ops):
        if progress is not None:
            progress(at, len(ops))
        kind = op.kind
        if kind in IGNORED:
            continue
        started = time.perf_counter()
        mode, shape, done = "", None, 0
        if kind == "DMA_START":
            _dma_u85(state, op)
        elif kind in ("CONV", "DEPTHWISE"):
            done = _conv(state, op, macs, depthwise=kind == "DEPTHWISE")
            shape = _ofm_shape(op)
        elif kind == "POOL":
            _pool(state, op)
            mode, shape = POOL_MODES.get(op.fields["pooling_mode"], "?"), _ofm_shape(op)
        elif kind == "ELEMENTWISE":
            mode, shape = _elementwise(state, op), _ofm_shape(op)
        else:
            raise _unsupported(op, f"operation {kind}")
        lut = _lut_of(op) if kind in ("CONV", "DEPTHWISE", "POOL", "ELEMENTWISE") else None
        mode = f"{mode}+{lut}" if lut else mode
        seconds = time.perf_counter() - started
        state.trace.append(TraceEntry(op.index, kind, mode, shape, seconds, done))
    if progress is not None:
        progress(len(ops), len(ops))
    return state
