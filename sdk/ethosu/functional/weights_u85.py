"""The U85's weight and scale streams, decoded into arrays the executor can compute with.

Weights: each WEIGHT_BASE/LENGTH stream is compressed in one of two formats (WEIGHT_FORMAT):
SWD, the mlw codec the U55 uses too (the wheel's `ethosu.mlw_codec`, weights.decode_streams),
or FWD, the "fast weight decoder" format, decoded here: a 256-bit header (bit 0 raw mode,
bit 1 a 4-entry palette, bits 104-111 a signed zero adjust, 16 palette entries of 9 bits each
from bit 112, folded: magnitude << 1 | sign), then the weights, least significant bit first:
2-bit palette indices (small palette), 8-bit raw values (value + zero adjust, mod 256) or 4-bit
indices, padded to 256 bits. Stated from regor's `mlw_encode_fwd.cpp` (Vela 5.1.0; read, not
copied).

The order the weights come in (regor's `EthosU85WeightOrdering`, read, not copied), outermost
first, for one core (U85-128/256; multi-core streams interleave and are refused):

    OFM blocks of OFM_BLK_DEPTH channels
      IFM blocks (forwards in even OFM blocks, backwards in odd ones; depthwise: one)
        sub-kernels of at most 8x8 (4x4 in a dilated direction), x outer, y inner
          IFM micro-blocks of the IFM micro-block depth (depthwise: one)
            OFM micro-blocks of the OFM micro-block depth
              [part-kernel-first and depthwise: the stride phases y, x]
                kernel rows, each row serpentine (odd rows right to left)
                  IFM channels in steps of 8 (depthwise: 1)
                    OFM channels of the micro-block
                      8 IFM channels (depthwise: 1)
              zeros up to the sub-kernel's element count rounded to 5 (8-bit part-kernel) or
              10 (16-bit part-kernel, depthwise); depth-first rounds to 1

With 2:4 sparse weights (WEIGHT_FORMAT weight_sparsity) the stream holds the same values in
the same nesting, IFM channels in steps of 16, part-kernel-first rounding to 10, and a 128-deep
IFM block for 8-bit depth-first (regor's `ChooseKernelFirst` / block config).

The IFM block depth and the OFM micro-block depth are not registers: they follow from the MAC
count (CONFIG), the OFM micro-block (ACC_FORMAT microblock) and the weight order (regor's
`ethos_u85.cpp`: 64 depth-first, 16 part-kernel-first, 32 on U85-128/256 with a 16-deep OFM
micro-block).

Scales: 10 bytes per OFM channel (padded to the micro-block depth rounded to 16): with the I32
accumulator a signed 32-bit bias, a 31-bit scale and a 6-bit shift (byte 8); with I48 a signed
48-bit bias, a 15-bit scale and the shift (byte 8) (regor's `EncodeBias32/48`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from sdk.errors import ProgramError
from sdk.ethosu.functional.weights import SCALE_ENTRY_BYTES, ScaleStream

FWD_HEADER_BITS = 256


class Traversal(Enum):
    DEPTH_FIRST = "depth-first"
    PART_KERNEL = "part-kernel-first"
    DEPTHWISE = "depthwise"


# OFM micro-blocks (ACC_FORMAT microblock: H x W) -> their depth, per MAC count (regor's
# s_EthosU85Configs)
_UBLOCK_DEPTH = {
    128: {"U1X2": 8, "U1X1": 16},
    256: {"U1X2": 16, "U1X4": 8, "U2X2": 8},
    512: {"U2X2": 16, "U1X4": 16},
    1024: {"U2X2": 32, "U1X4": 32, "U2X4": 16},
    2048: {"U2X2": 64, "U1X4": 64, "U4X4": 16},
}
CORES = {128: 1, 256: 1, 512: 2, 1024: 4, 2048: 4}


def ofm_ublock_depth(macs: int, microblock: str) -> int:
    depths = _UBLOCK_DEPTH.get(macs, {})
    if microblock not in depths:
        raise ProgramError(f"weight stream: no {microblock} OFM micro-block on a U85-{macs}")
    return depths[microblock]


@dataclass(frozen=True)
class U85WeightOrder:
    """What fixes a U85 weight stream's order (see the module notes)."""

    ofm_block_depth: int
    ofm_ublock: int
    traversal: Traversal
    ifm_bits: int = 8
    macs: int = 256
    stride: tuple[int, int] = (1, 1)  # (y, x)
    dilation: tuple[int, int] = (1, 1)
    sparse: bool = False  # WEIGHT_FORMAT 2:4 sparsity: the same values, ordered in 16s

    def __post_init__(self) -> None:
        if CORES.get(self.macs, 0) != 1:
            raise ProgramError(
                f"weight stream: a U85-{self.macs} splits weights over several cores, which "
                "the command-stream executor does not model"
            )
        if any(d not in (1, 2) for d in self.dilation):
            raise ProgramError(f"weight stream: dilation {self.dilation} (only 1 or 2 encodable)")

    @property
    def ifm_block_depth(self) -> int:
        if self.traversal is Traversal.PART_KERNEL:
            return 16
        if self.ifm_bits == 32 or (
            self.macs in (128, 256) and self.ofm_ublock == 16 and not self.sparse
        ):
            return 32
        return 128 if self.sparse and self.ifm_bits == 8 else 64


def stream_order(shape: tuple[int, int, int, int], order: U85WeightOrder) -> np.ndarray:
    """Flat indices into an (O, KH, KW, I) array (depthwise: (C, KH, KW, 1)) in stream order;
    -1 marks a zero the stream carries in between."""
    ofm_depth, kh, kw, ifm_depth = shape
    depthwise = order.traversal is Traversal.DEPTHWISE
    part_kernel = order.traversal is Traversal.PART_KERNEL
    ifm16 = order.ifm_bits == 16
    ifm_block = order.ifm_block_depth
    sparse = order.sparse
    if part_kernel:
        element_round = 10 if ifm16 or sparse else 5
        ifm_ublock = 8 if ifm16 and not sparse else ifm_block
    elif depthwise:
        element_round, ifm_ublock = 10, 1
    else:
        element_round, ifm_ublock = 1, ifm_block
    stride_y, stride_x = (1, 1) if order.traversal is Traversal.DEPTH_FIRST else order.stride
    dw_padding = 0 if (not ifm16 and order.macs <= 256) else (2 if order.macs <= 512 else 6)
    inner_step = 1 if depthwise else (16 if sparse else 8)
    oub = order.ofm_ublock
    decomp_y, decomp_x = 8 // order.dilation[0], 8 // order.dilation[1]
    pieces: list[np.ndarray] = []
    o_in = np.arange(oub)[:, None]
    i_in = np.arange(inner_step)[None, :]
    ifm_blocks = [0] if depthwise else list(range(0, ifm_depth, ifm_block))
    for n_block, ofm_z0 in enumerate(range(0, ofm_depth, order.ofm_block_depth)):
        clipped_ofm = min(order.ofm_block_depth, ofm_depth - ofm_z0)
        for ifm_z0 in ifm_blocks if n_block % 2 == 0 else ifm_blocks[::-1]:
            clipped_ifm = min(ifm_block, ifm_depth - ifm_z0)
            for skx in range(0, kw, decomp_x):
                sub_w = min(kw - skx, decomp_x)
                for sky in range(0, kh, decomp_y):
                    sub_h = min(kh - sky, decomp_y)
                    outer_depth = 1 if depthwise else clipped_ifm
                    for ifm_outer in range(0, outer_depth, ifm_ublock):
                        for ofm_outer in range(0, clipped_ofm, oub):
                            elements = -(-(sub_w * sub_h) // element_round) * element_round
                            for sy in range(stride_y):
                                strided_h = (sub_h + stride_y - 1 - sy) // stride_y
                                for sx in range(stride_x):
                                    strided_w = (sub_w + stride_x - 1 - sx) // stride_x
                                    for ky in range(strided_h):
                                        for kx in range(strided_w):
                                            x = kx if ky % 2 == 0 else strided_w - 1 - kx
                                            elements -= 1
                                            wx = skx + sx + x * stride_x
                                            wy = sky + sy + ky * stride_y
                                            for inner in range(0, ifm_ublock, inner_step):
                                                o = ofm_z0 + ofm_outer + o_in
                                                i = ifm_z0 + ifm_outer + inner + i_in
                                                valid = (o < ofm_depth) & (i < ifm_depth)
                                                flat = ((o * kh + wy) * kw + wx) * ifm_depth + i
                                                if depthwise:
                                                    flat = (o * kh + wy) * kw + wx + 0 * i
                                                pieces.append(np.where(valid, flat, -1).ravel())
                                            if depthwise and elements % element_round == 0:
                                                pieces.append(np.full(dw_padding * oub, -1))
                            if elements > 0:
                                pad = elements + (dw_padding if depthwise else 0)
                                pieces.append(np.full(pad * ifm_ublock * oub, -1))
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)


def decode_fwd(data: bytes) -> np.ndarray:
    """An FWD stream's values (every slot to the stream's end: the caller takes the count its
    order needs)."""
    if len(data) < FWD_HEADER_BITS // 8 or len(data) % 32:
        raise ProgramError(f"weight stream: {len(data)} bytes is no FWD stream (32-byte units)")
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little")

    def field(start: int, width: int) -> np.ndarray:
        return bits[start : start + width]

    def value(start: int, width: int) -> int:
        return int(np.dot(field(start, width), 1 << np.arange(width)))

    raw, small = bool(bits[0]), bool(bits[1])
    if raw and small:
        raise ProgramError("weight stream: an FWD header with both raw and small-palette set")
    adjust = value(104, 8)
    adjust = adjust - 256 if adjust >= 128 else adjust
    folded = np.array([value(112 + 9 * k, 9) for k in range(16)], dtype=np.int64)
    palette = np.where(folded & 1, -(folded >> 1), folded >> 1)
    body = bits[FWD_HEADER_BITS:]
    width = 8 if raw else (2 if small else 4)
    slots = body[: body.size - body.size % width].reshape(-1, width)
    codes = slots.astype(np.int64) @ (1 << np.arange(width))
    if raw:
        signed = np.where(codes >= 128, codes - 256, codes)
        return (signed - adjust).astype(np.int16)
    return palette[codes].astype(np.int16)


def unorder(values: np.ndarray, shape: tuple[int, int, int, int], index: np.ndarray) -> np.ndarray:
    """Stream values in `index` order (stream_order) -> the (O, KH, KW, I) array."""
    if len(values) < len(index):
        raise ProgramError(f"weight stream: {len(values)} values, the order needs {len(index)}")
    values = values[: len(index)]
    valid = index >= 0
    if np.any(values[~valid]):
        raise ProgramError("weight stream: a padding position holds a non-zero weight")
    out = np.zeros(int(np.prod(shape)), dtype=np.int16)
    out[index[valid]] = values[valid]
    return out.reshape(shape)


def decode_scales(data: bytes, channels: int, acc48: bool) -> ScaleStream:
    """A U85 SCALE_BASE/LENGTH stream -> per-channel bias/scale/shift (module notes)."""
    if channels * SCALE_ENTRY_BYTES > len(data):
        raise ProgramError(
            f"scale stream: {len(data)} bytes hold fewer than {channels} entries of 10 bytes"
        )
    raw = np.frombuffer(bytes(data[: channels * SCALE_ENTRY_BYTES]), dtype=np.uint8)
    raw = raw.reshape(channels, SCALE_ENTRY_BYTES).astype(np.int64)
    weights = np.int64(1) << (np.arange(6, dtype=np.int64) * 8)
    bias_bytes, scale_bits = (6, 15) if acc48 else (4, 31)
    bias = raw[:, :bias_bytes] @ weights[:bias_bytes]
    top = 1 << (8 * bias_bytes - 1)
    bias = np.where(bias >= top, bias - 2 * top, bias)
    scale_bytes = raw[:, bias_bytes:8]
    scale = (scale_bytes @ weights[: scale_bytes.shape[1]]) & ((1 << scale_bits) - 1)
    if np.any(raw[:, 8] & 0xC0) or np.any(raw[:, 9]):
        raise ProgramError("scale stream: reserved bits set in a U85 scale record")
    return ScaleStream(bias, scale.astype(np.uint32), raw[:, 8] & 0x3F)
