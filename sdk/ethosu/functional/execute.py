"""A functional model of the Ethos-U55: runs a decoded command stream over memory regions.

The details (the formulas, what is and is not modelled): docs/ethosu-functional.md,
section execute.py.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from sdk.errors import ProgramError
from sdk.ethosu.functional import arith
from sdk.ethosu.functional.featuremap import FeatureMap, Layout, element_dtype
from sdk.ethosu.functional.weights import WeightOrder, decode_scales, decode_weights
from sdk.ethosu.stream.decode import DecodedCmdData, Operation
from sdk.ethosu.stream.registers import as_signed

SHRAM_BYTES = 48 * 1024  # the largest U55 SHRAM; LUTs sit in its top 2 KB on every config
LUT_SLOT_BYTES = 256  # TABLE_n: the LUT at LUT base + n * 256 (int16 LUTs take all 8 slots)
INT16_LUT_BYTES = 2048


def lut_base_for(npu_config: int | None) -> int | None:
    """LUT slot 0 in SHRAM: the top 2 KB of the SHRAM the CONFIG register reports (bits 8-15,
    in KB; 24 KB on U55-128, where Vela DMAs LUTs to 0x5800 + 256 * slot)."""
    if npu_config is None:
        return None
    return ((npu_config >> 8) & 0xFF) * 1024 - INT16_LUT_BYTES


def _unsupported(op: Operation, what: str) -> ProgramError:
    return ProgramError(
        f"NPU executor: operation {op.index} ({op.name}, cmd_data byte {op.offset}): "
        f"{what} is not supported by the command-stream executor"
    )


@dataclass
class TraceEntry:
    """One executed operation, for `--npu-trace`-style debugging."""

    index: int
    kind: str
    mode: str
    ofm_shape: tuple[int, int, int] | None
    seconds: float
    macs: int = 0  # CONV/DEPTHWISE: multiply-accumulates (OFM elements x kernel x IFM depth)


@dataclass
class NpuState:
    """Memory the NPU sees: regions by base-pointer index, and SHRAM."""

    regions: dict[int, np.ndarray]
    shram: np.ndarray = field(default_factory=lambda: np.zeros(SHRAM_BYTES, dtype=np.uint8))
    lut_base: int | None = None  # SHRAM address of LUT slot 0 (lut_base_for(CONFIG))
    # U85: OFMs kept in a chain buffer (OFM_PRECISION storage CHAINED) by buffer index, for the
    # next operation's chained IFM or IFM2; never in memory
    chained: dict[int, np.ndarray] = field(default_factory=dict)
    trace: list[TraceEntry] = field(default_factory=list)

    def region(self, op: Operation, index: int) -> np.ndarray:
        if index not in self.regions:
            raise ProgramError(
                f"NPU executor: operation {op.index} ({op.name}) uses region {index}, which "
                f"the payload does not provide (regions {sorted(self.regions)})"
            )
        return self.regions[index]


def _val(op: Operation, register: str, name: str, default: int | None = None) -> int:
    value = op.value(register, name, default)
    if value is None:
        raise ProgramError(
            f"NPU executor: operation {op.index} ({op.name}) needs {register}, never set"
        )
    return value


def _signed(op: Operation, register: str, name: str, bits: int, default: int = 0) -> int:
    return as_signed(_val(op, register, name, default), bits)


# ---------------------------------------------------------------- feature maps


def _precision(op: Operation, prefix: str) -> tuple[np.dtype, Layout]:
    reg = f"{prefix}_PRECISION"
    size = 1 << _val(op, reg, "activation_precision", 0)
    signed = bool(_val(op, reg, "activation_type", 1))
    layout = Layout(_val(op, reg, "activation_format", 0))
    return element_dtype(size, signed), layout


def _stride(op: Operation, register: str) -> int:
    """A feature-map stride, signed. Its @addr register holds 40 bits (the payload's 32 and the
    parameter's 8): Vela writes a negative stride (a reversed axis: flip) as a 40-bit two's
    complement, high byte 0xFF; a value with the high byte clear is a 32-bit one."""
    value = _val(op, register, "addr", 0)
    return as_signed(value, 40 if value >> 32 else 32)


def _feature_map(op: Operation, prefix: str, shape: tuple[int, int, int]) -> FeatureMap:
    """The registers' description of IFM, IFM2 or OFM over the given (H, W, C) extent."""
    dtype, layout = _precision(op, prefix)
    bases = tuple(_val(op, f"{prefix}_BASE{t}", "addr", 0) for t in range(4))
    return FeatureMap(
        height=shape[0],
        width=shape[1],
        depth=shape[2],
        bases=bases,  # type: ignore[arg-type]
        height0=_val(op, f"{prefix}_HEIGHT0_M1", "height_m1") + 1,
        height1=_val(op, f"{prefix}_HEIGHT1_M1", "height_m1", 0) + 1,
        width0=_val(op, f"{prefix}_WIDTH0_M1", "width_m1") + 1,
        stride_y=_stride(op, f"{prefix}_STRIDE_Y"),
        stride_x=_stride(op, f"{prefix}_STRIDE_X"),
        stride_c=_stride(op, f"{prefix}_STRIDE_C"),
        layout=layout,
        dtype=dtype,
        name=f"operation {op.index} {prefix}",
    )


def _ofm_shape(op: Operation) -> tuple[int, int, int]:
    return (
        _val(op, "OFM_HEIGHT_M1", "height_m1") + 1,
        _val(op, "OFM_WIDTH_M1", "width_m1") + 1,
        _val(op, "OFM_DEPTH_M1", "depth_m1") + 1,
    )


def _base(op: Operation, register: str) -> int:
    reg = op.state.get(register)
    return 0 if reg is None else reg.fields["addr"]


@dataclass
class Batch:
    """Operations computed as one: alike register for register but for their feature maps'
    base addresses (Vela tiles one big copy or transpose into up to 10^6 such operations).
    The arrays of a batch of several get a leading axis, an entry per operation; a batch of
    one is the operation alone, its arrays (H, W, C)."""

    ops: Sequence[Operation]
    _bases: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def op(self) -> Operation:
        """The operation whose registers (all but the bases) stand for every one's."""
        return self.ops[0]

    @property
    def lead(self) -> tuple[int, ...]:
        return () if len(self.ops) == 1 else (len(self.ops),)

    def bases(self, prefix: str, fm: FeatureMap) -> np.ndarray | None:
        """The tile bases of feature map `prefix` (IFM, IFM2, OFM), (N, 4), one row per
        operation; None for a batch of one (`fm`'s own bases)."""
        if len(self.ops) == 1:
            return None
        if prefix not in self._bases:
            bases = np.tile(np.asarray(fm.bases, dtype=np.int64), (len(self.ops), 1))
            for t in fm.used_tiles():
                register = f"{prefix}_BASE{t}"
                bases[:, t] = [_base(op, register) for op in self.ops]
            self._bases[prefix] = bases
        return self._bases[prefix]

    def head(self, count: int) -> Batch:
        """The first `count` operations, as a batch (the bases found so far kept)."""
        if count == len(self.ops):
            return self
        return Batch(self.ops[:count], {k: v[:count] for k, v in self._bases.items()})


def _read(state: NpuState, batch: Batch, prefix: str, shape: tuple[int, int, int]) -> np.ndarray:
    op = batch.op
    fm = _feature_map(op, prefix, shape)
    region = state.region(op, _val(op, f"{prefix}_REGION", "region"))
    return fm.read(region, batch.bases(prefix, fm)).astype(np.int64)


def _round_mode(op: Operation, register: str) -> arith.RoundMode:
    return arith.RoundMode(_val(op, register, "round_mode", 0))


# ---------------------------------------------------------------- output stage


def _clamp(op: Operation, dtype: np.dtype) -> tuple[int, int]:
    """The OFM clamp: ACTIVATION_MIN/MAX (16-bit) within the OFM type (32-bit OFMs: the type)."""
    clip = _val(op, "ACTIVATION", "activation_clip_range", 0)
    forced = {2: np.dtype(np.uint8), 3: np.dtype(np.int8), 5: np.dtype(np.int16)}
    if clip in forced:
        dtype = forced[clip]
    elif clip != 0:
        raise _unsupported(op, f"ACTIVATION clip range {clip}")
    if dtype.itemsize > 2:
        return arith.clamp_range(dtype)
    lo = op.value("ACTIVATION_MIN", "clip_boundary")
    hi = op.value("ACTIVATION_MAX", "clip_boundary")
    signed = dtype.kind == "i"
    lo = None if lo is None else (as_signed(lo, 16) if signed else lo)
    hi = None if hi is None else (as_signed(hi, 16) if signed else hi)
    return arith.clamp_range(dtype, lo, hi)


TANH, SIGMOID = 3, 4


def _activation(state: NpuState, op: Operation, values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The activation function after the clamp: none (RELU = clip only) or a LUT in SHRAM.

    The built-in TANH and SIGMOID functions are refused: what the U55 computes for them (its
    approximation and rounding) is in no public source; Vela only says their input is in units
    of 1/0x3000 (OFM_SCALE set for that). Regor emits them only for TFLite's int16 TANH and
    LOGISTIC (and LSTM gates); ExecuTorch's TOSA input cannot reach them (TOSA's integer
    profile has no SIGMOID/TANH: they arrive as TABLE, which becomes a LUT)."""
    function = _val(op, "ACTIVATION", "activation_function", 0)
    if function == 0:
        return values
    if function in (TANH, SIGMOID):
        name = "TANH" if function == TANH else "SIGMOID"
        raise _unsupported(op, f"the {name} activation function (its arithmetic is not public)")
    if not 16 <= function < 24:
        raise _unsupported(op, f"activation function {function} (undefined)")
    if state.lut_base is None:
        raise ProgramError(
            f"NPU executor: operation {op.index} uses LUT {function - 16} before any DMA into SHRAM"
        )
    start = state.lut_base + (function - 16) * LUT_SLOT_BYTES
    if dtype.itemsize == 1:
        table = state.shram[start : start + 256].view(np.int8 if dtype.kind == "i" else np.uint8)
        return arith.lut8(values, table.copy(), signed=dtype.kind == "i")
    if dtype.itemsize == 2 and dtype.kind == "i":
        words = state.shram[start : start + INT16_LUT_BYTES].view("<u4").astype(np.int64)
        return arith.lut16(values, words, _round_mode(op, "OFM_PRECISION"))
    raise _unsupported(op, f"a LUT on a {dtype} OFM")


def _finish(
    state: NpuState,
    batch: Batch,
    acc: np.ndarray,
    bias,
    scale,
    shift,
) -> None:
    """Output stage, clamp, activation LUT, and the write of the OFM."""
    op = batch.op
    shape = _ofm_shape(op)
    fm = _feature_map(op, "OFM", shape)
    bases = batch.bases("OFM", fm)
    _refuse_overlapping(op, fm, bases)
    zp = (
        _signed(op, "OFM_ZERO_POINT", "zero_point", 16)
        if fm.dtype.kind == "i"
        else _val(op, "OFM_ZERO_POINT", "zero_point", 0)
    )
    mode, clamp = _round_mode(op, "OFM_PRECISION"), _clamp(op, fm.dtype)
    out = arith.output_stage(acc, bias, scale, shift, mode, zp, clamp)
    out = _activation(state, op, out, fm.dtype)
    region = state.region(op, _val(op, "OFM_REGION", "region"))
    fm.write(region, out.reshape(batch.lead + shape), bases)


# What the device leaves in an OFM that overlaps itself is not the model's result; one known
# cause, said wherever such a stream is found (the executor, the export, `sdk inspect`).
MISCOMPILED_MATMUL = (
    "Vela 5.1.0 compiles an Ethos-U55 MatMul whose first operand is a slice into operations "
    "whose outputs overlap themselves (its MUL + REDUCE_SUM lowering covers the whole unsliced "
    "tensor): the device's result is not the model's matmul"
)
OVERLAP_CAUSE = f"{MISCOMPILED_MATMUL}; keep it on the CPU (--cpu-op aten.bmm)"
# Regor 5.1.0's EthosU55RCSGenerator::InsertMatMulCommand: with a temporary buffer smaller than
# the first operand ("low memory mode") it runs the batches one by one, advancing the second
# operand's and the output's start per batch but not the first operand's (computed once,
# before the batch loop). Attention's q @ k^T over a fused qkv gets such a buffer.
STUCK_OPERAND_MATMUL = (
    "Vela 5.1.0 compiles an Ethos-U55 batched MatMul whose temporary buffer holds one batch "
    "(attention's q @ k^T of a fused qkv) one batch at a time, its MUL + REDUCE_SUM operations "
    "reading every batch's first operand from batch 0's address: batch b computes "
    "q[0] @ k[b]^T, not q[b] @ k[b]^T"
)


@dataclass(frozen=True)
class OverlappingOutput:
    """An operation whose OFM elements share bytes: its result is the NPU's write order."""

    operation: int
    name: str
    offset: int  # cmd_data byte of the operation
    detail: str

    def describe(self) -> str:
        return (
            f"operation {self.operation} ({self.name}, cmd_data byte {self.offset}): its OFM "
            f"overlaps itself ({self.detail})"
        )


def _overlap(op: Operation, fm: FeatureMap) -> OverlappingOutput | None:
    clash = fm.overlap()
    if clash is None:
        return None
    (y0, x0, c0), (y1, x1, c1) = clash
    detail = (
        f"elements y={y0} x={x0} c={c0} and y={y1} x={x1} c={c1} share a byte; shape "
        f"{fm.shape}, bases {fm.bases}, WIDTH0 {fm.width0}, strides y/x/c "
        f"{fm.stride_y}/{fm.stride_x}/{fm.stride_c}"
    )
    return OverlappingOutput(op.index, op.name, op.offset, detail)


def overlapping_outputs(decoded: DecodedCmdData) -> list[OverlappingOutput]:
    """Every operation of a U55 stream whose OFM overlaps itself (none in a sound stream)."""
    found = []
    for op in decoded.operations:
        if op.kind in ("CONV", "DEPTHWISE", "POOL", "ELEMENTWISE"):
            hit = _overlap(op, _feature_map(op, "OFM", _ofm_shape(op)))
            if hit is not None:
                found.append(hit)
    return found


@dataclass(frozen=True)
class StuckMatmulOperand:
    """A MatMul lowered to MUL + REDUCE_SUM pairs over several batches whose MULs all read
    their first operand (IFM) at one address (STUCK_OPERAND_MATMUL)."""

    first: int  # the chain's first and last MUL (operation indices)
    last: int
    offset: int  # cmd_data byte of the first MUL
    ifm_base: int
    columns: int  # MUL + REDUCE_SUM pairs in the chain
    batches: int  # runs of evenly spaced REDUCE_SUM outputs: the batches it writes

    def describe(self) -> str:
        return (
            f"operations {self.first}-{self.last} (MUL + REDUCE_SUM, cmd_data byte "
            f"{self.offset}): a MatMul of {self.batches} batches ({self.columns} output "
            "columns in all) whose every MUL reads its first operand at IFM base "
            f"0x{self.ifm_base:x} (batch 0's): the other batches are multiplied by batch 0's rows"
        )


def _is_mul(op: Operation) -> bool:
    return (
        op.kind == "ELEMENTWISE"
        and op.fields["elementwise_mode"] == ELEMENTWISE.index("MUL")
        and not _val(op, "IFM2_BROADCAST", "broadcast_constant", 0)
    )


def _is_reduce_sum(op: Operation) -> bool:
    return op.kind == "POOL" and op.fields["pooling_mode"] == POOL_MODES.index("REDUCE_SUM")


def stuck_matmul_operands(decoded: DecodedCmdData) -> list[StuckMatmulOperand]:
    """Every MatMul of a U55 stream that Vela lowered batch by batch without moving its first
    operand (none in a sound stream). Vela's U55 MatMul is a MUL (the first operand times
    one column of the second, broadcast) and a REDUCE_SUM into one output column, per column;
    a chain of such pairs reads one IFM. A sound chain covers its batches in the MUL's
    height (one address serves them all) and writes its columns evenly spaced; a chain
    whose REDUCE_SUM outputs jump to another batch's block while the IFM stays put multiplies
    every batch by batch 0's rows."""
    ops = [op for op in decoded.operations if op.kind not in IGNORED]
    pairs = [
        (at, mul, red)
        for at, (mul, red) in enumerate(itertools.pairwise(ops))
        if _is_mul(mul)
        and _is_reduce_sum(red)
        and _base(red, "IFM_BASE0") == _base(mul, "OFM_BASE0")
    ]
    chains: list[list[tuple[Operation, Operation]]] = []
    previous = -2
    for at, mul, red in pairs:
        adjacent, previous = at == previous + 2, at
        if chains and adjacent:
            last_mul = chains[-1][-1][0]
            same = (
                _base(last_mul, "IFM_BASE0") == _base(mul, "IFM_BASE0")
                and _val(last_mul, "IFM_REGION", "region") == _val(mul, "IFM_REGION", "region")
                and _ofm_shape(last_mul) == _ofm_shape(mul)
            )
            if same:
                chains[-1].append((mul, red))
                continue
        chains.append([(mul, red)])
    found = []
    for chain in chains:
        outputs = [_base(red, "OFM_BASE0") for _, red in chain]
        steps = [b - a for a, b in itertools.pairwise(outputs)]
        if len(set(steps)) < 2:
            continue
        usual = max(set(steps), key=steps.count)
        batches = 1 + sum(step != usual for step in steps)
        first = chain[0][0]
        base = _base(first, "IFM_BASE0")
        last = chain[-1][0].index
        found.append(StuckMatmulOperand(first.index, last, first.offset, base, len(chain), batches))
    return found


def _refuse_overlapping(op: Operation, fm: FeatureMap, bases: np.ndarray | None = None) -> None:
    """An OFM whose elements share bytes has no one result: what stays there is the NPU's
    write order (its block order, and BLOCKDEP letting the next operation start early), not
    modelled. Vela 5.1.0 emits such OFMs (OVERLAP_CAUSE), wrapping into the sliced size
    through tile 1 on tile 0's base, or a stride below a row's size. With `bases` (a batch's),
    each placement of the tiles relative to each other is checked."""
    for placed in [fm] if bases is None else _placements(fm, bases):
        hit = _overlap(op, placed)
        if hit is not None:
            raise ProgramError(
                f"NPU executor: {hit.describe()}: the result is the NPU's write order, which "
                f"the command-stream executor does not model. {OVERLAP_CAUSE}"
            )


def _placements(fm: FeatureMap, bases: np.ndarray) -> list[FeatureMap]:
    """`fm` at each distinct placement of its tiles relative to tile 0 among `bases` (N, 4)
    (whether elements share a byte depends on nothing else)."""
    used = fm.used_tiles()
    if used == [0]:
        return [fm]
    placed = []
    for row in np.unique(bases[:, used] - bases[:, :1], axis=0):
        tiles = [0, 0, 0, 0]
        for t, offset in zip(used, row):
            tiles[t] = int(offset)
        placed.append(dataclasses.replace(fm, bases=tuple(tiles)))
    return placed


def _global_scale(op: Operation) -> tuple[int, int]:
    return _val(op, "OFM_SCALE", "scale", 1), _val(op, "OFM_SCALE", "shift", 0)


def _scale_stream(state: NpuState, op: Operation, channels: int):
    region = state.region(op, _val(op, "SCALE_REGION", "region"))
    base = _val(op, "SCALE_BASE", "addr")
    length = _val(op, "SCALE_LENGTH", "length")
    if base + length > region.size:
        raise ProgramError(f"NPU executor: operation {op.index}: scale stream outside its region")
    return decode_scales(region[base : base + length].tobytes(), channels)


# ---------------------------------------------------------------- kernels, padding


@dataclass(frozen=True)
class Kernel:
    height: int  # undilated
    width: int
    stride_y: int
    stride_x: int
    dilation_y: int
    dilation_x: int
    part_kernel: bool


def _kernel(op: Operation) -> Kernel:
    reg = "KERNEL_STRIDE"
    dil_y = 1 + _val(op, reg, "dilation_y", 0)
    dil_x = 1 + _val(op, reg, "dilation_x", 0)
    span_y = _val(op, "KERNEL_HEIGHT_M1", "height_m1", 0)
    span_x = _val(op, "KERNEL_WIDTH_M1", "width_m1", 0)
    if span_y % dil_y or span_x % dil_x:
        raise ProgramError(
            f"NPU executor: operation {op.index}: kernel span not a dilation multiple"
        )
    return Kernel(
        height=span_y // dil_y + 1,
        width=span_x // dil_x + 1,
        stride_y=((_val(op, reg, "stride_y_msb", 0) << 1) | _val(op, reg, "stride_y_lsb", 0)) + 1,
        stride_x=((_val(op, reg, "stride_x_msb", 0) << 1) | _val(op, reg, "stride_x_lsb", 0)) + 1,
        dilation_y=dil_y,
        dilation_x=dil_x,
        part_kernel=bool(_val(op, reg, "weight_order", 0)),
    )


def _padding(op: Operation) -> tuple[int, int, int, int]:
    """IFM_PAD_TOP, LEFT, BOTTOM, RIGHT."""
    top = _val(op, "IFM_PAD_TOP", "pad", 0)
    left = _val(op, "IFM_PAD_LEFT", "pad", 0)
    bottom = _val(op, "IFM_PAD_BOTTOM", "pad", 0)
    right = _val(op, "IFM_PAD_RIGHT", "pad", 0)
    return top, left, bottom, right


def _reach(op: Operation, kernel: Kernel) -> tuple[int, int]:
    """The rows and columns the kernel covers over the whole OFM, padding included."""
    oh, ow, _ = _ofm_shape(op)
    reach_y = (oh - 1) * kernel.stride_y + (kernel.height - 1) * kernel.dilation_y + 1
    reach_x = (ow - 1) * kernel.stride_x + (kernel.width - 1) * kernel.dilation_x + 1
    return reach_y, reach_x


def _ifm_extent(op: Operation, kernel: Kernel) -> tuple[int, int, int]:
    """The IFM's extent as read (before upscaling). It is not a register: it is what the OFM,
    kernel, stride and padding reach, less the padding (pad bottom/right cover what lies past
    the IFM's end)."""
    top, left, bottom, right = _padding(op)
    reach_y, reach_x = _reach(op, kernel)
    factor = 2 if _val(op, "IFM_UPSCALE", "mode", 0) else 1
    ih = max(1, -(-(reach_y - top - bottom) // factor))
    iw = max(1, -(-(reach_x - left - right) // factor))
    return ih, iw, _val(op, "IFM_DEPTH_M1", "depth_m1") + 1


def _padded_ifm(
    state: NpuState, batch: Batch, kernel: Kernel, fill: int
) -> tuple[np.ndarray, np.ndarray]:
    """The IFM the kernel slides over, padded with `fill`, and a mask of real (unpadded)
    elements, (H, W, 1): the same for every operation of a batch."""
    op = batch.op
    upscale = _val(op, "IFM_UPSCALE", "mode", 0)
    if upscale == 2 and op.kind not in ("CONV", "DEPTHWISE"):
        raise _unsupported(op, "IFM upscale ZEROS outside a convolution")
    if upscale == 3:
        raise _unsupported(op, "IFM upscale mode 3")
    ih, iw, depth = _ifm_extent(op, kernel)
    ifm = _read(state, batch, "IFM", (ih, iw, depth))
    if upscale == 1:  # NEAREST: each element twice in y and x
        ifm = ifm.repeat(2, axis=-3).repeat(2, axis=-2)
    elif upscale == 2:  # ZEROS: each element followed by a zero (the zero point) in y and x
        spread = np.full((*batch.lead, 2 * ih, 2 * iw, depth), fill, dtype=np.int64)
        spread[..., ::2, ::2, :] = ifm
        ifm = spread
    ih, iw = ifm.shape[-3], ifm.shape[-2]
    top, left, _, _ = _padding(op)
    reach_y, reach_x = _reach(op, kernel)
    height = max(reach_y, top + ih)
    width = max(reach_x, left + iw)
    mask = np.zeros((height, width, 1), dtype=bool)
    mask[top : top + ih, left : left + iw] = True
    if (height, width) == (ih, iw):  # no padding: the IFM itself
        return ifm, mask
    padded = np.full((*batch.lead, height, width, depth), fill, dtype=np.int64)
    padded[..., top : top + ih, left : left + iw, :] = ifm
    return padded, mask


def _windows(x: np.ndarray, kernel: Kernel, oh: int, ow: int):
    """(ky, kx, view of shape (..., oh, ow, C)) for every kernel element."""
    for ky in range(kernel.height):
        y0 = ky * kernel.dilation_y
        for kx in range(kernel.width):
            x0 = kx * kernel.dilation_x
            yield (
                ky,
                kx,
                x[
                    ...,
                    y0 : y0 + (oh - 1) * kernel.stride_y + 1 : kernel.stride_y,
                    x0 : x0 + (ow - 1) * kernel.stride_x + 1 : kernel.stride_x,
                    :,
                ],
            )


# ---------------------------------------------------------------- operations


def _ifm_zero_point(op: Operation, prefix: str = "IFM") -> int:
    dtype, _ = _precision(op, prefix)
    raw = _val(op, f"{prefix}_ZERO_POINT", "zero_point", 0)
    return as_signed(raw, 16) if dtype.kind == "i" else raw


@functools.lru_cache(maxsize=512)
def _decoded_weights(
    data: bytes, shape: tuple[int, int, int, int], order: WeightOrder
) -> np.ndarray:
    """Decoded once per stream content: every run of a delegate decodes the same streams."""
    weights = decode_weights(data, shape, order).astype(np.float64)
    weights.flags.writeable = False
    return weights


def _conv(state: NpuState, batch: Batch, depthwise: bool) -> None:
    """CONV or DEPTHWISE (never batched: a batch of one)."""
    op = batch.op
    kernel = _kernel(op)
    oh, ow, oc = _ofm_shape(op)
    zp = _ifm_zero_point(op)
    ifm_dtype, _ = _precision(op, "IFM")
    bits = _acc_bits(op)
    if op.value("WEIGHT1_LENGTH", "length", 0):
        raise _unsupported(op, "a second (dual-core) weight stream")
    padded, _ = _padded_ifm(state, batch, kernel, zp)
    x = padded - zp  # padding contributes zero
    ic = x.shape[2]
    shape = (oc, kernel.height, kernel.width, 1 if depthwise else ic)
    order = WeightOrder(
        ofm_block_depth=_val(op, "OFM_BLK_DEPTH_M1", "depth_m1") + 1,
        ifm_bits=8 * ifm_dtype.itemsize,
        part_kernel=kernel.part_kernel,
        depthwise=depthwise,
        dilation=(kernel.dilation_y, kernel.dilation_x),
    )
    region = state.region(op, _val(op, "WEIGHT_REGION", "region"))
    base = _val(op, "WEIGHT_BASE", "addr")
    length = _val(op, "WEIGHT_LENGTH", "length")
    if base + length > region.size:
        raise ProgramError(f"NPU executor: operation {op.index}: weight stream outside its region")
    w = _decoded_weights(region[base : base + length].tobytes(), shape, order)
    if depthwise and ic < oc:
        raise ProgramError(f"NPU executor: operation {op.index}: depthwise IFM depth {ic}")
    acc = _conv_sum(x, w, kernel, (oh, ow, oc), depthwise)
    reach = np.abs(x).max(initial=0) * np.abs(w).sum(axis=(1, 2, 3)).max(initial=0)
    if reach >= 1 << (bits - 1):  # the accumulator may saturate: split the terms by sign
        xp, xn, wp, wn = np.maximum(x, 0), np.minimum(x, 0), np.maximum(w, 0), np.minimum(w, 0)
        dims = (kernel, (oh, ow, oc), depthwise)
        positive = _conv_sum(xp, wp, *dims) + _conv_sum(xn, wn, *dims)
        negative = _conv_sum(xp, wn, *dims) + _conv_sum(xn, wp, *dims)
        acc = _saturated(op, acc, positive, negative, bits)
    scales = _scale_stream(state, op, oc)
    _finish(state, batch, acc, scales.bias, scales.scale.astype(np.int64), scales.shift)


def _conv_sum(
    x: np.ndarray, w: np.ndarray, kernel: Kernel, shape: tuple[int, int, int], depthwise: bool
) -> np.ndarray:
    """Sum over the kernel (and IFM depth) of x * w, exact in float64 here: |x| < 2^17,
    |w| < 2^9, far fewer than 2^27 terms."""
    oh, ow, oc = shape
    acc = np.zeros(shape, dtype=np.float64)
    for ky, kx, view in _windows(x, kernel, oh, ow):
        if depthwise:
            acc += view[..., :oc] * w[:, ky, kx, 0]
        else:
            acc += view.astype(np.float64) @ w[:, ky, kx, :].T
    return acc.astype(np.int64)


def _acc_bits(op: Operation) -> int:
    fmt = _val(op, "ACC_FORMAT", "acc_format", 0)
    if fmt not in arith.ACC_BITS:
        raise _unsupported(op, "the F16 accumulator" if fmt == 2 else f"ACC_FORMAT {fmt}")
    return arith.ACC_BITS[fmt]


def _saturated(op: Operation, acc, positive, negative, bits: int) -> np.ndarray:
    """The sum in the saturating accumulator (arith.saturate_accumulator), or a refusal where
    the hardware's accumulation order would decide."""
    out, ambiguous = arith.saturate_accumulator(acc, positive, negative, bits)
    if ambiguous.any():
        raise _unsupported(
            op,
            f"a sum that leaves the {bits}-bit accumulator only through mixed-sign partial "
            "sums (the hardware's accumulation order decides)",
        )
    return out


def _pool(state: NpuState, batch: Batch) -> None:
    op = batch.op
    mode = op.fields["pooling_mode"]
    kernel = _kernel(op)
    oh, ow, oc = _ofm_shape(op)
    zp = _ifm_zero_point(op)
    if mode == 0:  # MAX: padding never wins
        padded, mask = _padded_ifm(state, batch, kernel, np.iinfo(np.int64).min // 4)
        acc = None
        for _, _, view in _windows(padded, kernel, oh, ow):
            acc = view.copy() if acc is None else np.maximum(acc, view)
        acc = acc - zp
    elif mode in (1, 2):  # AVERAGE, REDUCE_SUM: sums of (x - zp); padding adds nothing
        padded, mask = _padded_ifm(state, batch, kernel, zp)
        if mode == 2 and oc != 1:
            raise _unsupported(op, f"REDUCE_SUM into {oc} OFM channels")
        terms, over_depth = padded - zp, mode == 2
        acc = _pool_sum(terms, kernel, oh, ow, over_depth)
        bits = _acc_bits(op)
        count = kernel.height * kernel.width * (terms.shape[-1] if over_depth else 1)
        if np.abs(terms).max(initial=0) * count >= 1 << (bits - 1):
            positive = _pool_sum(np.maximum(terms, 0), kernel, oh, ow, over_depth)
            negative = _pool_sum(np.minimum(terms, 0), kernel, oh, ow, over_depth)
            acc = _saturated(op, acc, positive, negative, bits)
        if mode == 1 and not mask.all():
            _hardware_scaled(op)
            counts = np.zeros((oh, ow, 1), dtype=np.int64)
            for _, _, view in _windows(mask, kernel, oh, ow):
                counts += view
            acc = arith.padded_average(acc, counts)
    else:
        raise _unsupported(op, f"pooling mode {mode}")
    if acc.shape[-1] < oc:
        raise ProgramError(f"NPU executor: operation {op.index}: IFM depth below the OFM's")
    acc = acc[..., :oc]
    if _scaled_per_channel(op):
        scales = _scale_stream(state, op, oc)
        _finish(state, batch, acc, scales.bias, scales.scale.astype(np.int64), scales.shift)
    else:
        scale, shift = _global_scale(op)
        _finish(state, batch, acc, 0, scale, shift)


def _scaled_per_channel(op: Operation) -> bool:
    """A POOL scaled by a scale stream (else by OFM_SCALE)."""
    return _val(op, "OFM_PRECISION", "scale_mode", 1) == 0 and bool(
        op.value("SCALE_LENGTH", "length")
    )


def _pool_sum(terms: np.ndarray, kernel: Kernel, oh: int, ow: int, over_depth: bool) -> np.ndarray:
    """Sum over the kernel; REDUCE_SUM also over the IFM's depth (Vela: a 1x1 kernel, OFM C=1)."""
    acc = np.zeros((*terms.shape[:-3], oh, ow, terms.shape[-1]), dtype=np.int64)
    for _, _, view in _windows(terms, kernel, oh, ow):
        acc += view
    return acc.sum(axis=-1, keepdims=True) if over_depth else acc


def _hardware_scaled(op: Operation) -> None:
    """A padded AVERAGE pool divides by its windows' valid element counts itself (arith's
    notes); Vela leaves OFM_SCALE at 1, shift 0, in GLOBAL mode there. Any other scale would
    act in a way no public source pins: refused."""
    per_channel = _val(op, "OFM_PRECISION", "scale_mode", 1) == 0
    scale = _global_scale(op)
    if per_channel or scale != (1, 0):
        what = "per-channel scaling" if per_channel else f"OFM_SCALE {scale[0]} shift {scale[1]}"
        raise _unsupported(op, f"a padded AVERAGE pool with {what} (Vela leaves it at 1, 0)")


ELEMENTWISE = ("MUL", "ADD", "SUB", "MIN", "MAX", "LRELU", "ABS", "CLZ", "SHR", "SHL")
UNARY = ("LRELU", "ABS", "CLZ")


def _elementwise_mode(op: Operation) -> str:
    code = op.fields["elementwise_mode"]
    if code >= len(ELEMENTWISE):
        raise _unsupported(op, f"elementwise mode {code}")
    return ELEMENTWISE[code]


def _elementwise(state: NpuState, batch: Batch) -> None:
    op = batch.op
    mode = _elementwise_mode(op)
    shape = _ofm_shape(op)
    ifm = _read(state, batch, "IFM", shape)
    zp_a = _ifm_zero_point(op)
    scale, shift = _global_scale(op)
    ifm_dtype, _ = _precision(op, "IFM")
    in_round = _round_mode(op, "IFM_PRECISION")
    if mode in UNARY:
        if mode == "LRELU":
            # alpha is OFM_SCALE; positive values pass unscaled
            x = ifm - zp_a
            acc = arith.leaky_relu(x, scale, shift, _round_mode(op, "OFM_PRECISION"))
            _finish(state, batch, acc, 0, 1, 0)
            return
        acc = arith.elementwise_acc(mode, ifm, zp_a=zp_a if mode == "ABS" else 0)
        _finish(state, batch, acc, 0, scale, shift)
        return
    b = _ifm2(state, batch, shape)
    zp_b = _ifm_zero_point(op, "IFM2")
    reversed_order = bool(_val(op, "IFM2_BROADCAST", "operand_order", 0))
    if mode in ("ADD", "SUB"):
        scale_mode = arith.ScaleMode(_val(op, "IFM_PRECISION", "scale_mode", 0))
        opa = (_val(op, "OPA_SCALE", "scale", 0), _val(op, "OPA_SCALE", "shift", 0))
        opb = _val(op, "OPB_SCALE", "scale", 0)
        # OPA/OPB name the computation's operands A and B, not the IFM/IFM2 ports: with
        # operand order A, IFM2 is A (Vela swaps which operand is scaled when it swaps them)
        a, bb, za, zb = (b, ifm, zp_b, zp_a) if reversed_order else (ifm, b, zp_a, zp_b)
        a2, b2 = arith.add_sub_operands(
            a, bb, za, zb, scale_mode, opa, opb, 8 * ifm_dtype.itemsize, in_round
        )
        acc = a2 + b2 if mode == "ADD" else a2 - b2
    else:
        a, bb, za, zb = (b, ifm, zp_b, zp_a) if reversed_order else (ifm, b, zp_a, zp_b)
        if mode in ("SHL", "SHR"):
            acc = arith.elementwise_acc(mode, a - za, bb, shift_mode=in_round)
        else:
            acc = arith.elementwise_acc(mode, a, bb, za, zb)
    _finish(state, batch, acc, 0, scale, shift)


def _ifm2_extent(op: Operation, shape: tuple[int, int, int]) -> tuple[int, int, int] | None:
    """The IFM2 map's extent: the OFM's, 1 along broadcast axes; None for a scalar."""
    reg = "IFM2_BROADCAST"
    if _val(op, reg, "broadcast_constant", 0):
        return None
    h, w, c = (1 if _val(op, reg, f"broadcast_{a}", 0) else n for a, n in zip("hwc", shape))
    return h, w, c


def _ifm2(state: NpuState, batch: Batch, shape: tuple[int, int, int]) -> np.ndarray:
    """IFM2 broadcast to the OFM shape: a scalar (its (H, W, C) broadcasts against a batch's
    arrays), or a map with broadcast H/W/C of extent 1."""
    op = batch.op
    extent = _ifm2_extent(op, shape)
    if extent is None:
        dtype, _ = _precision(op, "IFM2")
        raw = _val(op, "IFM2_SCALAR", "scalar")
        value = as_signed(raw, 16) if dtype.kind == "i" else raw
        return np.full(shape, value, dtype=np.int64)
    return np.broadcast_to(_read(state, batch, "IFM2", extent), batch.lead + shape)


@dataclass(frozen=True)
class DmaWalk:
    """A DMA's bytes as rows: `length` bytes each, `rows` of them per plane, `planes` planes.

    Facts from public code, not checked against Arm's TRM: regor's U65 generator writes
    2-D/3-D DMAs as LEN = one row, SIZE0 rows and SIZE1 planes, SKIP0 = the gap after a row,
    SKIP1 = the gap after a plane's rows (row stride LEN + SKIP0, plane stride
    (LEN + SKIP0) * SIZE0 + SKIP1); Linux's ethosu driver bounds a U55/U65 DMA by that same
    product, with one set of SKIP registers for both sides and the skips sign-extended from 40
    bits. A side in mode D1 is contiguous."""

    length: int
    rows: int
    planes: int
    skip0: int
    skip1: int

    def offsets(self, strided: bool) -> np.ndarray:
        """Start of every row, relative to the side's address, in transfer order."""
        row = np.arange(self.rows, dtype=np.int64)
        plane = np.arange(self.planes, dtype=np.int64)[:, None]
        if not strided:
            return ((plane * self.rows + row) * self.length).reshape(-1)
        row_stride = self.length + self.skip0
        return (plane * (row_stride * self.rows + self.skip1) + row * row_stride).reshape(-1)


def _dma_walk(op: Operation, mode: int) -> DmaWalk:
    length = _val(op, "DMA0_LEN", "addr")
    if mode == 0:
        return DmaWalk(length, 1, 1, 0, 0)
    rows = _val(op, "DMA0_SIZE0", "size")
    planes = _val(op, "DMA0_SIZE1", "size") if mode == 2 else 1
    if rows == 0 or planes == 0:
        raise ProgramError(f"NPU executor: DMA {op.index}: a {mode + 1}-D DMA of zero rows")
    skip0 = as_signed(_val(op, "DMA0_SKIP0", "addr"), 40)
    skip1 = as_signed(_val(op, "DMA0_SKIP1", "addr"), 40) if mode == 2 else 0
    return DmaWalk(length, rows, planes, skip0, skip1)


def _dma_bytes(
    op: Operation, memory: np.ndarray, address: int, starts: np.ndarray, length: int, side: str
) -> slice | np.ndarray:
    """Bytes of every row of one side (a slice for one row), each inside `memory` (else
    refused)."""
    first = address + starts
    if first.min() < 0 or first.max() + length > memory.size:
        raise ProgramError(f"NPU executor: DMA {op.index}: {side} outside its region")
    if first.size == 1:
        return slice(int(first[0]), int(first[0]) + length)
    return (first[:, None] + np.arange(length, dtype=np.int64)).reshape(-1)


def _dma(state: NpuState, op: Operation) -> None:
    src_reg, dst_reg = "DMA0_SRC_REGION", "DMA0_DST_REGION"
    if _val(op, src_reg, "region_mode", 0) != 0:
        raise _unsupported(op, "a DMA from SHRAM")
    modes = [_val(op, reg, "stride_mode", 0) for reg in (src_reg, dst_reg)]
    if 3 in modes:
        raise _unsupported(op, "DMA stride mode 3")
    if min(modes) and modes[0] != modes[1]:
        raise _unsupported(op, f"a DMA strided {modes[0] + 1}-D from and {modes[1] + 1}-D to")
    walk = _dma_walk(op, max(modes))
    src = state.region(op, _val(op, src_reg, "region"))
    dst_addr = _val(op, "DMA0_DST", "addr")
    if _val(op, dst_reg, "region_mode", 0) == 1:  # INTERNAL: into SHRAM (a LUT)
        dst = state.shram
        if state.lut_base is None:  # no CONFIG known: slot 0 is the 2 KB-aligned LUT address
            state.lut_base = dst_addr - dst_addr % INT16_LUT_BYTES
    else:
        dst = state.region(op, _val(op, dst_reg, "region"))
    read = _dma_bytes(
        op, src, _val(op, "DMA0_SRC", "addr"), walk.offsets(modes[0] > 0), walk.length, "source"
    )
    write = _dma_bytes(op, dst, dst_addr, walk.offsets(modes[1] > 0), walk.length, "destination")
    dst[write] = src[read]  # every byte read before any is written


IGNORED = ("DMA_WAIT", "KERNEL_WAIT", "PMU_MASK", "STOP", "IRQ")
POOL_MODES = ("MAX", "AVERAGE", "REDUCE_SUM")
# What may differ between the operations of a batch: where their feature maps are.
BASE_REGISTERS = frozenset(f"{fm}_BASE{t}" for fm in ("IFM", "IFM2", "OFM") for t in range(4))
BATCH_ELEMENTS = 1 << 20  # feature-map elements of one batch at most: bounds its arrays

# progress(done, total): operations done so far of the stream's total
Progress = Callable[[int, int], None]


def execute(decoded: DecodedCmdData, state: NpuState, progress: Progress | None = None) -> NpuState:
    """Run every operation of the stream, in order, on `state` (modified in place).

    Runs of POOL or ELEMENTWISE operations that differ only in their base addresses (Vela's
    tiling of a big copy or transpose) are computed in batches (`_run`), each as numpy's
    work over all its operations at once, where that gives what one by one would.
    `progress` is called between operations and batches (a host link kept alive by it).
    A U85 stream is execute_u85's."""
    if decoded.is_u85:
        raise ProgramError("NPU executor: an Ethos-U85 stream (sdk.ethosu.functional.execute_u85)")
    ops = decoded.operations
    at = 0
    while at < len(ops):
        if progress is not None:
            progress(at, len(ops))
        op = ops[at]
        end = _run_end(ops, at) if _batchable(op) else at + 1
        if end - at > 1:
            _run(state, ops, at, end, progress)
        else:
            _execute_one(state, op)
        at = end
    if progress is not None:
        progress(len(ops), len(ops))
    return state


def _execute_one(state: NpuState, op: Operation) -> None:
    kind = op.kind
    if kind in IGNORED:
        return
    started = time.perf_counter()
    macs = 0
    if kind == "DMA_START":
        _dma(state, op)
        mode, shape = "", None
    elif kind in ("CONV", "DEPTHWISE"):
        _conv(state, Batch([op]), depthwise=kind == "DEPTHWISE")
        mode, shape = "", _ofm_shape(op)
        kernel = _kernel(op)
        depth = 1 if kind == "DEPTHWISE" else _val(op, "IFM_DEPTH_M1", "depth_m1") + 1
        macs = int(np.prod(shape)) * kernel.height * kernel.width * depth
    elif kind == "POOL":
        _pool(state, Batch([op]))
        mode, shape = POOL_MODES[op.fields["pooling_mode"]], _ofm_shape(op)
    elif kind == "ELEMENTWISE":
        _elementwise(state, Batch([op]))
        mode, shape = ELEMENTWISE[op.fields["elementwise_mode"]], _ofm_shape(op)
    else:
        raise _unsupported(op, f"operation {kind}")
    seconds = time.perf_counter() - started
    state.trace.append(TraceEntry(op.index, kind, mode, shape, seconds, macs))


# ---------------------------------------------------------------- batches


def _batchable(op: Operation) -> bool:
    """POOL (scaled by OFM_SCALE: a scale stream is memory an operation could overwrite) and
    ELEMENTWISE: the operations that read feature maps and registers only."""
    if op.kind == "POOL":
        return op.fields["pooling_mode"] < len(POOL_MODES) and not _scaled_per_channel(op)
    return op.kind == "ELEMENTWISE" and op.fields["elementwise_mode"] < len(ELEMENTWISE)


def _run_end(ops: Sequence[Operation], start: int) -> int:
    """The end of the run of operations from `start` that differ only in base addresses: the
    same command, and no register but a base set between them."""
    first, end = ops[start], start + 1
    while end < len(ops):
        op = ops[end]
        changed = op.changed
        if op.command is not first.command or op.param != first.param or changed is None:
            break
        if not changed <= BASE_REGISTERS:
            break
        end += 1
    return end


def _run(
    state: NpuState, ops: Sequence[Operation], start: int, end: int, progress: Progress | None
) -> None:
    """The run ops[start:end] (`_run_end`) in batches: from each next operation, as many as
    do not depend on each other (`_independent`), up to BATCH_ELEMENTS."""
    first = ops[start]
    footprint = sum(math.prod(shape) for _, shape in _inputs(first))
    limit = max(1, BATCH_ELEMENTS // (footprint + math.prod(_ofm_shape(first))))
    at, size = start, limit
    while at < end:
        if progress is not None:
            progress(at, len(ops))
        window = Batch(ops[at : min(end, at + size)])
        try:
            count = _independent(state, window)
        except ProgramError:  # one of them is refused: one by one, up to the refusal
            for op in window.ops:
                _execute_one(state, op)
            at += len(window.ops)
            continue
        _execute_batch(state, window.head(count))
        at += count
        size = min(limit, 2 * count if count < len(window.ops) else 2 * size)


def _execute_batch(state: NpuState, batch: Batch) -> None:
    """Operations that do not depend on each other (`_independent`), as one computation."""
    if len(batch.ops) == 1:
        _execute_one(state, batch.op)
        return
    op = batch.op
    started = time.perf_counter()
    try:
        if op.kind == "POOL":
            _pool(state, batch)
            mode = POOL_MODES[op.fields["pooling_mode"]]
        else:
            _elementwise(state, batch)
            mode = ELEMENTWISE[op.fields["elementwise_mode"]]
    except ProgramError:  # nothing written: one by one, for the refusal of the right one
        for each in batch.ops:
            _execute_one(state, each)
        return
    seconds = (time.perf_counter() - started) / len(batch.ops)
    shape = _ofm_shape(op)
    kind = op.kind
    state.trace.extend(TraceEntry(o.index, kind, mode, shape, seconds) for o in batch.ops)


def _inputs(op: Operation) -> list[tuple[str, tuple[int, int, int]]]:
    """The feature maps a POOL or ELEMENTWISE operation reads, with their extents."""
    if op.kind == "POOL":
        return [("IFM", _ifm_extent(op, _kernel(op)))]
    shape = _ofm_shape(op)
    reads = [("IFM", shape)]
    extent = None if _elementwise_mode(op) in UNARY else _ifm2_extent(op, shape)
    if extent is not None:
        reads.append(("IFM2", extent))
    return reads


def _independent(state: NpuState, batch: Batch) -> int:
    """How many of the batch's operations, from the first, give together what they give one
    by one: none of them reads a byte an earlier one writes, and no two write the same byte
    (a batch reads all its inputs before it writes). At least 1."""
    op, n = batch.op, len(batch.ops)
    if n == 1:
        return 1
    memory = state.region(op, _val(op, "OFM_REGION", "region"))
    ofm = _feature_map(op, "OFM", _ofm_shape(op))
    written = ofm._byte_index(memory.size, batch.bases("OFM", ofm)).reshape(n, -1)
    order = np.argsort(written, axis=None, kind="stable")  # equal bytes: the earlier op first
    addresses, writers = written.reshape(-1)[order], order // written.shape[1]
    first = n
    again = (addresses[1:] == addresses[:-1]) & (writers[1:] != writers[:-1])
    if again.any():
        first = int(writers[1:][again].min())
    for prefix, extent in _inputs(op):
        region = state.region(op, _val(op, f"{prefix}_REGION", "region"))
        if region is not memory:
            if np.may_share_memory(region, memory):  # views of one memory: no telling
                return 1
            continue
        fm = _feature_map(op, prefix, extent)
        read = fm._byte_index(region.size, batch.bases(prefix, fm)).reshape(n, -1)
        at = np.minimum(np.searchsorted(addresses, read), addresses.size - 1)
        earlier = (addresses[at] == read) & (writers[at] < np.arange(n)[:, None])
        readers = np.flatnonzero(earlier.any(axis=1))
        if readers.size:
            first = min(first, int(readers[0]))
    return max(first, 1)
