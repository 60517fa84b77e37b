"""The U55's integer arithmetic, exact and vectorised: output stage, elementwise operand
scaling, average-pool scaling and activation LUTs.

The details (the formulas, what is and is not modelled): docs/ethosu-functional.md,
section arith.py.
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from sdk.errors import ProgramError

MAX_VALUE_BITS = 46  # |acc + bias| below 2^46 keeps every limb product inside int64


class RoundMode(Enum):
    DBL = 0
    TRUNCATE = 1
    NATURAL = 2


class ScaleMode(Enum):
    """IFM_PRECISION scale_mode: which operand of an ADD/SUB gets the 32-bit scale."""

    OPA_OPB_16 = 0
    OPA_32 = 1
    OPB_32 = 2


def _pow2_limbs(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2^k as (hi, lo) with value = hi * 2^16 + lo, for 0 <= k <= 63."""
    hi = np.where(k >= 16, np.left_shift(1, np.maximum(k - 16, 0)), 0)
    lo = np.where(k < 16, np.left_shift(1, np.minimum(k, 15)), 0)
    return hi.astype(np.int64), lo.astype(np.int64)


def _rounding_limbs(
    value: np.ndarray, shift: np.ndarray, mode: RoundMode
) -> tuple[np.ndarray, np.ndarray]:
    """The rounding addend r of each element as (hi, lo) limbs."""
    zero = np.zeros(np.broadcast(value, shift).shape, dtype=np.int64)
    if mode is RoundMode.TRUNCATE:  # 2^shift - 1 on negative values
        hi = np.where(shift >= 16, np.left_shift(1, np.maximum(shift - 16, 0)) - 1, 0)
        lo = np.where(shift >= 16, 0xFFFF, np.left_shift(1, np.minimum(shift, 16)) - 1)
        negative = value < 0
        return zero + np.where(negative, hi, 0), zero + np.where(negative, lo, 0)
    half_hi, half_lo = _pow2_limbs(np.maximum(shift - 1, 0))
    hi = zero + np.where(shift > 0, half_hi, 0)
    lo = zero + np.where(shift > 0, half_lo, 0)
    if mode is RoundMode.DBL:
        hi = hi + np.where(shift > 31, np.where(value >= 0, 1 << 14, -(1 << 14)), 0)
    return hi, lo


def scale_shift(value, scale, shift, mode: RoundMode = RoundMode.NATURAL) -> np.ndarray:
    """floor((value * scale + r) / 2^shift), exact, elementwise (arguments broadcast).

    `value` any int64 (40-bit accumulators, or the 62-bit products of 32-bit MULs), `scale`
    0..2^32-1, `shift` 0..63. Values below 2^46 take the int64 limb path; the rare larger ones
    are done in Python integers (an object array over just those elements). Results are exact
    up to 2^46 in magnitude and saturate beyond (far outside any OFM range, so clamps agree)."""
    value, scale, shift = np.broadcast_arrays(
        np.asarray(value, dtype=np.int64),
        np.asarray(scale, dtype=np.int64),
        np.asarray(shift, dtype=np.int64),
    )
    if np.any((scale < 0) | (scale >= 1 << 32)) or np.any((shift < 0) | (shift > 63)):
        raise ProgramError("output stage: scale outside 32 bits or shift outside 0-63")
    wide = np.abs(value) >= 1 << MAX_VALUE_BITS
    small = np.where(wide, 0, value)
    out = _scale_shift_limbs(small, scale, shift, mode)
    if np.any(wide):
        out = out.copy()
        out[wide] = _scale_shift_python(value[wide], scale[wide], shift[wide], mode)
    return out


def _scale_shift_python(value, scale, shift, mode: RoundMode) -> np.ndarray:
    """The same in Python integers, for values of 46 bits and more."""
    v, s, sh = (a.astype(object) for a in (value, scale, shift))
    one = np.ones_like(sh)
    if mode is RoundMode.TRUNCATE:
        r = np.where(v < 0, (one << sh) - 1, 0)
    else:
        r = np.where(sh > 0, one << np.maximum(sh - 1, 0), 0)
        if mode is RoundMode.DBL:
            r = r + np.where(sh > 31, np.where(v >= 0, 1 << 30, -(1 << 30)), 0)
    result = (v * s + r) >> sh
    bound = 1 << MAX_VALUE_BITS
    return np.array([min(max(int(x), -bound), bound) for x in result], dtype=np.int64)


def _scale_shift_limbs(value, scale, shift, mode: RoundMode) -> np.ndarray:
    low = value * (scale & 0xFFFF)  # |.| < 2^62
    high = value * (scale >> 16)  # |.| < 2^62
    upper = high + (low >> 16)  # the product = upper * 2^16 + lower
    lower = low & 0xFFFF
    r_hi, r_lo = _rounding_limbs(value, shift, mode)
    lower = lower + r_lo
    upper = upper + r_hi + (lower >> 16)
    lower = lower & 0xFFFF
    big = shift >= 16
    down = np.right_shift(upper, np.where(big, shift - 16, 0))
    bound = 1 << 46  # saturate before shifting left: results stay inside int64
    clipped = np.clip(upper, -bound, bound)
    up = np.left_shift(clipped, np.where(big, 0, 16 - shift)) + np.right_shift(
        lower, np.where(big, 0, shift)
    )
    return np.where(big, down, up)


ACC_BITS = {0: 32, 1: 40}  # ACC_FORMAT I32, I40 (F16 is not an integer accumulator)


def saturate_accumulator(acc, positive, negative, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """A convolution's or pool's sum in a saturating `bits`-bit accumulator.

    `positive` and `negative` are the sums of the positive and of the negative terms. Where
    neither leaves the range no partial sum can, and the sum is exact; where all terms share a
    sign the partial sums are monotone, and the result is the sum clamped, in any order. Else
    the hardware's (unpublished) accumulation order decides: the second result marks those
    elements, the clamped sum standing in for them."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    acc = np.asarray(acc, dtype=np.int64)
    safe = (np.asarray(positive) <= hi) & (np.asarray(negative) >= lo)
    one_sign = (np.asarray(positive) == 0) | (np.asarray(negative) == 0)
    return np.clip(acc, lo, hi), ~(safe | one_sign)


def clamp_range(
    dtype: np.dtype, act_min: int | None = None, act_max: int | None = None
) -> tuple[int, int]:
    """The OFM clamp: the element type's range, narrowed by ACTIVATION_MIN/MAX for 8/16-bit
    OFMs. A 32-bit OFM keeps the int32 range: regor writes 32-bit intermediates with MIN/MAX
    at the int16 limits, and only an unclamped result matches TOSA (tests/npu/test_arith.py)."""
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    if np.dtype(dtype).itemsize <= 2:
        if act_min is not None:
            lo = max(lo, act_min)
        if act_max is not None:
            hi = min(hi, act_max)
    return lo, hi


def output_stage(
    acc,
    bias,
    scale,
    shift,
    mode: RoundMode,
    zero_point: int,
    clamp: tuple[int, int],
) -> np.ndarray:
    """((acc + bias) * scale) >> shift, rounded, + OFM zero point, clamped (int64 result).

    Per-channel scale streams broadcast along the last (channel) axis."""
    value = np.asarray(acc, dtype=np.int64) + np.asarray(bias, dtype=np.int64)
    out = scale_shift(value, scale, shift, mode) + zero_point
    return np.clip(out, clamp[0], clamp[1])


def unscaled_operand_shift(ifm_bits: int) -> int:
    """The left shift of the operand OPA_32/OPB_32 does not scale (see the module notes)."""
    return 19 if ifm_bits == 8 else 14


def add_sub_operands(
    a,
    b,
    zp_a: int,
    zp_b: int,
    scale_mode: ScaleMode,
    opa: tuple[int, int],
    opb_scale: int,
    ifm_bits: int,
    mode: RoundMode,
) -> tuple[np.ndarray, np.ndarray]:
    """ADD/SUB inputs after zero points and operand scaling. `opa` = (OPA_SCALE, OPA_SHIFT)."""
    a = np.asarray(a, dtype=np.int64) - zp_a
    b = np.asarray(b, dtype=np.int64) - zp_b
    if scale_mode is ScaleMode.OPA_OPB_16:
        return a * (opa[0] & 0xFFFF), b * (opb_scale & 0xFFFF)
    unscaled = unscaled_operand_shift(ifm_bits)
    if scale_mode is ScaleMode.OPA_32:
        return scale_shift(a, opa[0], opa[1], mode), b << unscaled
    return a << unscaled, scale_shift(b, opa[0], opa[1], mode)


def elementwise_acc(
    op: str, a, b=None, zp_a: int = 0, zp_b: int = 0, shift_mode=RoundMode.NATURAL
) -> np.ndarray:
    """The accumulator of MUL, MIN, MAX, ABS, LRELU (positive part), CLZ, SHL, SHR.

    ADD/SUB take `add_sub_operands` first (then acc = a' +- b')."""
    x = np.asarray(a, dtype=np.int64) - zp_a
    y = None if b is None else np.asarray(b, dtype=np.int64) - zp_b
    if op == "MUL":
        return x * y
    if op == "MIN":
        return np.minimum(x, y)
    if op == "MAX":
        return np.maximum(x, y)
    if op in ("ABS", "LRELU"):
        return np.abs(x) if op == "ABS" else x
    if op == "CLZ":
        u = np.asarray(a, dtype=np.int64) & 0xFFFFFFFF
        bits = np.zeros_like(u)
        for step in (16, 8, 4, 2, 1):  # binary search of the highest set bit
            big = u >= (1 << step)
            bits = bits + np.where(big, step, 0)
            u = np.where(big, u >> step, u)
        return np.where(np.asarray(a, dtype=np.int64) & 0xFFFFFFFF, 31 - bits, 32)
    if op in ("SHL", "SHR"):
        amount = np.clip(np.asarray(b, dtype=np.int64), 0, 31)
        if op == "SHL":
            wrapped = (np.asarray(a, dtype=np.int64) << amount) & 0xFFFFFFFF
            return np.where(wrapped >= 1 << 31, wrapped - (1 << 32), wrapped)
        return scale_shift(np.asarray(a, dtype=np.int64), 1, amount, shift_mode)
    raise ProgramError(f"elementwise: unknown operation {op}")


def leaky_relu(x, scale: int, shift: int, mode: RoundMode) -> np.ndarray:
    """LRELU: negative inputs scaled by alpha (OFM_SCALE), others unchanged."""
    x = np.asarray(x, dtype=np.int64)
    return np.where(x >= 0, x, scale_shift(x, scale, shift, mode))


def reciprocal_scale(count) -> tuple[np.ndarray, np.ndarray]:
    """(multiplier, shift) dividing by `count` (>= 1): TOSA's reciprocal_scale, k = bits of
    count - 1, multiplier = ((2^30 + 1) << k) // count, shift = 30 + k. The + 1 makes halves
    round away from zero through NATURAL rounding, as TFLite's average pool does."""
    count = np.asarray(count, dtype=np.int64)
    if np.any(count < 1) or np.any(count > 1 << 24):
        raise ProgramError("average pool: a divisor outside 1..2^24")
    k = np.zeros_like(count)
    rest = count - 1
    while np.any(rest):
        k = k + (rest > 0)
        rest = rest >> 1
    return ((((1 << 30) + 1) << k) // count), 30 + k


def padded_average(acc, count) -> np.ndarray:
    """A padded AVERAGE pool's division by each window's valid (unpadded) element count."""
    multiplier, shift = reciprocal_scale(count)
    return scale_shift(acc, multiplier, shift, RoundMode.NATURAL)


def lut8(values, table: bytes | np.ndarray, signed: bool = True) -> np.ndarray:
    """An int8/uint8 LUT: 256 entries indexed by the OFM value (+128 when signed)."""
    table = (
        np.frombuffer(bytes(table), dtype=np.int8 if signed else np.uint8)
        if not isinstance(table, np.ndarray)
        else table
    )
    if table.size != 256:
        raise ProgramError(f"LUT: an 8-bit table has 256 entries, not {table.size}")
    index = np.asarray(values, dtype=np.int64) + (128 if signed else 0)
    if np.any((index < 0) | (index > 255)):
        raise ProgramError("LUT: an index outside the table (the OFM value was not clamped)")
    return table[index].astype(np.int64)


def lut16(values, table, mode: RoundMode = RoundMode.NATURAL) -> np.ndarray:
    """An int16 LUT: 512 words of (slope << 16) | base, interpolated over the low 7 bits."""
    words = np.asarray(table, dtype=np.int64) & 0xFFFFFFFF
    if words.size != 512:
        raise ProgramError(f"LUT: a 16-bit table has 512 words, not {words.size}")
    base = words & 0xFFFF
    base = np.where(base >= 1 << 15, base - (1 << 16), base)
    slope = words >> 16
    slope = np.where(slope >= 1 << 15, slope - (1 << 16), slope)
    x = np.asarray(values, dtype=np.int64) + 32768
    if np.any((x < 0) | (x > 0xFFFF)):
        raise ProgramError("LUT: an int16 LUT input outside 16 bits")
    index, fraction = x >> 7, x & 0x7F
    return base[index] + scale_shift(slope[index] * fraction, 1, 7, mode)


def table16_to_lut(table: np.ndarray) -> np.ndarray:
    """A 513-entry TOSA int16 TABLE as the U55's 512 (slope << 16) | base words (Vela's form)."""
    t = np.asarray(table, dtype=np.int64)
    if t.size != 513:
        raise ProgramError(f"TABLE: an int16 table has 513 entries, not {t.size}")
    slope = (t[1:] - t[:-1]) & 0xFFFF
    return (slope << 16) | (t[:-1] & 0xFFFF)
