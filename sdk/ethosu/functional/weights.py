"""The U55's weight and scale streams, decoded into arrays the executor can compute with.

A convolution's weights arrive as one or more compressed streams (one per WEIGHT_BASE/LENGTH
pair: each covers the OFM channels of one "brick" of the operation's OFM depth). Each stream is
the wheel's mlw codec (`ethosu.mlw_codec`) over the weights in the U55's traversal order, which
Vela chooses per operation: (outermost first)

    OFM blocks of OFM_BLK_DEPTH channels
      IFM blocks of 32 channels (16 for a 16-bit IFM or part-kernel-first)
        sub-kernels of at most 8x8 (4x4 in a dilated direction)
          [part-kernel-first: IFM micro-blocks]
            OFM micro-blocks
              kernel elements (padded to 4 for depthwise / part-kernel, 2 for 16-bit part-kernel)
                [depth-first: IFM micro-blocks]
                  OFM channels of the micro-block
                    IFM channels of the micro-block (one for depthwise)

Positions outside the kernel or the channel counts are zeros in the stream. The order here is
stated from regor's U55 weight encoder (read, not copied) and checked against real exports and
the codec's own `reorder_encode`. Depthwise weights are (C, KH, KW, 1): OFM channel = IFM channel.

The scale stream: 10 bytes per OFM channel, little-endian: bias (signed 40 bits), scale
(unsigned 32 bits), shift (6 bits, the two top bits zero).
"""

from __future__ import annotations

import sys
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

import numpy as np

from sdk.errors import ProgramError

SCALE_ENTRY_BYTES = 10


@dataclass(frozen=True)
class WeightOrder:
    """What fixes the stream order: registers of the operation plus the MAC configuration.

    `ofm_block_depth` is OFM_BLK_DEPTH_M1 + 1, `part_kernel` the KERNEL_STRIDE weight_order bit,
    `dilation` (y, x) from KERNEL_STRIDE, `ifm_bits` from IFM_PRECISION; the micro-block depths
    are the accelerator's (8 and 8 on U55-64/128/256; OFM 4 on U55-32)."""

    ofm_block_depth: int
    ifm_bits: int = 8
    part_kernel: bool = False
    depthwise: bool = False
    dilation: tuple[int, int] = (1, 1)
    ofm_ublock: int = 8
    ifm_ublock: int = 8

    def __post_init__(self) -> None:
        if self.part_kernel and self.depthwise:
            raise ProgramError("weight stream: part-kernel-first and depthwise exclude each other")
        if self.ofm_block_depth < 1 or any(d not in (1, 2) for d in self.dilation):
            raise ProgramError(
                f"weight stream: OFM block depth {self.ofm_block_depth}, dilation "
                f"{self.dilation} (only 1 or 2 are encodable)"
            )


def stream_order(shape: tuple[int, int, int, int], order: WeightOrder) -> np.ndarray:
    """Flat indices into an (O, KH, KW, I) array, in stream order; -1 marks a zero pad.

    Vectorised over the innermost four loops (kernel elements and micro-blocks), which hold
    nearly all the entries; the outer block loops are few."""
    ofm_depth, kh, kw, ifm_depth = shape
    ifm_block = 16 if (order.part_kernel or order.ifm_bits == 16) else 32
    if order.depthwise:
        element_round = 4
        ifm_blocks = [0]
    else:
        element_round = (2 if order.ifm_bits == 16 else 4) if order.part_kernel else 1
        ifm_blocks = list(range(0, ifm_depth, ifm_block))
    decomp_y, decomp_x = 8 // order.dilation[0], 8 // order.dilation[1]
    oub, iub = order.ofm_ublock, order.ifm_ublock
    pieces: list[np.ndarray] = []
    for ofm_z0 in range(0, ofm_depth, order.ofm_block_depth):
        clipped_ofm = min(order.ofm_block_depth, ofm_depth - ofm_z0)
        for ifm_z0 in ifm_blocks:
            if order.depthwise:
                ifm_span = iub
            elif order.part_kernel:
                ifm_span = min(ifm_block, ifm_depth - ifm_z0)
            else:
                ifm_span = ifm_block  # depth-first pads the last IFM block to its full depth
            for sky in range(0, kh, decomp_y):
                sub_h = min(kh - sky, decomp_y)
                for skx in range(0, kw, decomp_x):
                    sub_w = min(kw - skx, decomp_x)
                    elements = -(-(sub_w * sub_h) // element_round) * element_round
                    outer = range(0, ifm_span, iub) if order.part_kernel else range(1)
                    inner = np.arange(0, 1 if order.part_kernel else ifm_span, iub)
                    e = np.arange(elements)
                    ky, kx = e // sub_w, e % sub_w
                    iz = np.arange(1 if order.depthwise else iub)
                    oz = np.arange(oub)
                    for ifm_outer in outer:
                        for ofm_u in range(0, clipped_ofm, oub):
                            # axes: element, IFM micro-block, OFM channel, IFM channel
                            o = np.broadcast_to(
                                ofm_z0 + ofm_u + oz[None, None, :, None],
                                (elements, len(inner), oub, len(iz)),
                            )
                            i = ifm_z0 + ifm_outer + inner[None, :, None, None] + iz
                            y = (sky + ky)[:, None, None, None]
                            x = (skx + kx)[:, None, None, None]
                            if order.depthwise:
                                i = np.zeros_like(i)
                            valid = (
                                (i < ifm_depth)
                                & (o < ofm_depth)
                                & (ky < sub_h)[:, None, None, None]
                            )
                            flat = ((o * kh + y) * kw + x) * ifm_depth + i
                            pieces.append(np.where(valid, flat, -1).reshape(-1))
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)


def decode_streams(streams: list[bytes]) -> list[np.ndarray]:
    """The mlw codec's values of each stream (int16: weights after zero-point subtraction).

    The wheel's decoder calls exit(1) (after printing "bitbuf_getbit: underrun ...") on a
    truncated or corrupt stream, so it runs in a forked child: a bad stream becomes a
    ProgramError with the decoder's message, never the end of the caller's process. One child
    decodes all the streams given, so a delegate pays for one fork. A process with gRPC in it
    (labgrid's client, its pytest plugin) forks from a clean worker instead: gRPC's fork
    handlers can crash a child forked beside its threads."""
    if not streams:
        return []
    if any(len(s) == 0 for s in streams):
        raise ProgramError("weight stream: empty (WEIGHT_LENGTH 0)")
    if "grpc" not in sys.modules:
        return _decode_forked(streams)
    global _CLEAN_WORKER
    if _CLEAN_WORKER is None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # forkserver: the worker comes from a fresh interpreter, not from this process
        context = multiprocessing.get_context("forkserver")
        _CLEAN_WORKER = ProcessPoolExecutor(max_workers=1, mp_context=context)
    try:
        return _CLEAN_WORKER.submit(_decode_forked, [bytes(s) for s in streams]).result()
    except BrokenProcessPool as exc:
        _CLEAN_WORKER = None
        raise ProgramError(f"weight stream: the decoder's worker died ({exc})") from None


# The worker decode_streams forks its decoding children from in a process with gRPC.
_CLEAN_WORKER = None


def _decode_forked(streams: list[bytes]) -> list[np.ndarray]:
    """decode_streams' work, in a child forked from this process."""
    import contextlib
    import os
    import struct

    # Imported here, before the fork: a child of a process with other threads (a labgrid
    # session's gRPC) must not take the import lock one of them may hold.
    from ethosu import mlw_codec

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: decode, send (count, values...) per stream, exit without cleanup
        code = 0
        try:
            os.close(read_fd)
            os.dup2(write_fd, 1)  # the decoder's messages go to the parent too
            out = bytearray()
            for data in streams:
                values = np.asarray(mlw_codec.decode(bytearray(data)), dtype="<i2")
                out += struct.pack("<Q", values.size) + values.tobytes()
            os.write(1, b"MLW0")
            view = memoryview(bytes(out))
            while view:
                view = view[os.write(1, view) :]
        except BaseException as exc:
            code = 2
            with contextlib.suppress(BaseException):
                os.write(1, f"{type(exc).__name__}: {exc}".encode(errors="replace"))
        finally:
            os._exit(code)
    os.close(write_fd)
    chunks = []
    with os.fdopen(read_fd, "rb") as pipe:
        while chunk := pipe.read(1 << 20):
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    raw = b"".join(chunks)
    marker = raw.find(b"MLW0")
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and marker >= 0:
        raw, results, pos = raw[marker + 4 :], [], 0
        for _ in streams:
            (count,) = struct.unpack_from("<Q", raw, pos)
            pos += 8
            results.append(
                np.frombuffer(raw, dtype="<i2", count=count, offset=pos).astype(np.int16)
            )
            pos += 2 * count
        return results
    message = raw[: marker if marker >= 0 else len(raw)].decode("ascii", "replace").strip()
    if not message and os.WIFSIGNALED(status):
        message = f"its process died of signal {os.WTERMSIG(status)}"
    raise ProgramError(f"weight stream: the mlw decoder refuses it ({message or 'no message'})")


def decode_stream(data: bytes) -> np.ndarray:
    """One stream's values (see decode_streams)."""
    return decode_streams([bytes(data)])[0]


def unorder(values: np.ndarray, shape: tuple[int, int, int, int], order: WeightOrder) -> np.ndarray:
    """Undo the stream order: stream values -> the (O, KH, KW, I) array."""
    index = stream_order(shape, order)
    if len(values) < len(index):
        raise ProgramError(
            f"weight stream: {len(values)} values, the order {shape} needs {len(index)}"
        )
    extra = values[len(index) :]
    if np.any(extra):
        raise ProgramError(
            f"weight stream: {len(extra)} values past the {len(index)} the shape {shape} takes "
            "are not zero"
        )
    values = values[: len(index)]
    valid = index >= 0
    if np.any(values[~valid]):
        raise ProgramError("weight stream: a padding position holds a non-zero weight")
    out = np.zeros(int(np.prod(shape)), dtype=np.int16)
    out[index[valid]] = values[valid]
    return out.reshape(shape)


def decode_weights(data: bytes, shape: tuple[int, int, int, int], order: WeightOrder) -> np.ndarray:
    """One WEIGHT_BASE/LENGTH stream -> (O, KH, KW, I) int16 (depthwise: (C, KH, KW, 1))."""
    if order.depthwise and shape[3] != 1:
        raise ProgramError(f"weight stream: depthwise shape {shape} must have one IFM channel")
    return unorder(decode_stream(data), shape, order)


@dataclass(frozen=True)
class ScaleStream:
    """Per OFM channel: bias (int64 holding 40 bits), scale (uint32), shift (0-63)."""

    bias: np.ndarray
    scale: np.ndarray
    shift: np.ndarray

    def __len__(self) -> int:
        return len(self.bias)


def decode_scales(data: bytes, channels: int | None = None) -> ScaleStream:
    """A SCALE_BASE/LENGTH stream -> per-channel bias/scale/shift.

    `channels` limits the entries read (the stream's length is padded to 16 bytes); without it
    every whole entry is read."""
    count = len(data) // SCALE_ENTRY_BYTES if channels is None else channels
    if count * SCALE_ENTRY_BYTES > len(data):
        raise ProgramError(
            f"scale stream: {len(data)} bytes hold fewer than {count} entries of 10 bytes"
        )
    raw = np.frombuffer(bytes(data[: count * SCALE_ENTRY_BYTES]), dtype=np.uint8).reshape(
        count, SCALE_ENTRY_BYTES
    )
    weights = np.uint64(1) << (np.arange(5, dtype=np.uint64) * np.uint64(8))
    unsigned = (raw[:, :5].astype(np.uint64) * weights).sum(axis=1)
    bias = unsigned.astype(np.int64)
    bias = np.where(bias >= 1 << 39, bias - (1 << 40), bias)
    scale = (raw[:, 5:9].astype(np.uint64) * weights[:4]).sum(axis=1).astype(np.uint32)
    if np.any(raw[:, 9] & 0xC0):
        raise ProgramError("scale stream: a shift byte has its reserved top bits set")
    shift = (raw[:, 9] & 0x3F).astype(np.int64)
    return ScaleStream(bias, scale, shift)


def encode_scales(bias: np.ndarray, scale: np.ndarray, shift: np.ndarray) -> bytes:
    """The inverse of decode_scales (for tests and hand-made streams)."""
    bias = np.asarray(bias, dtype=np.int64)
    if np.any(bias < -(1 << 39)) or np.any(bias >= 1 << 39):
        raise ProgramError("scale stream: a bias outside 40 bits")
    shift = np.asarray(shift, dtype=np.int64)
    if np.any((shift < 0) | (shift > 63)):
        raise ProgramError("scale stream: a shift outside 0-63")
    out = bytearray()
    for b, s, sh in zip(bias.tolist(), np.asarray(scale, dtype=np.uint64).tolist(), shift.tolist()):
        out += (b & ((1 << 40) - 1)).to_bytes(5, "little") + int(s).to_bytes(4, "little")
        out.append(sh)
    return bytes(out)
