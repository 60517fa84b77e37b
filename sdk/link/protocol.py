"""The host link's frames and messages (docs/link.md): encoding, decoding, payload layouts.

Pure functions over bytes, no I/O: `sdk.link.session` does the talking. COBS comes from the
`cobs` package and the CRC from zlib; every layout below is the one docs/link.md specifies.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from cobs import cobs

from sdk import contract
from sdk.errors import FrameError, PayloadError

# The contract's facts (firmware/contract.yaml, shared with the firmware's generated contract.h).
PROTOCOL_VERSION = contract.data()["link"]["protocol_version"]
MAX_PAYLOAD = contract.data()["link"]["max_payload"]
FLAG_RESPONSE = contract.data()["link"]["flag_response"]
GET_OUTPUT_AFTER_FAILURE = contract.data()["link"]["get_output_after_failure"]
MAX_DIMS = contract.data()["max_dims"]
HEADER = contract.struct_of("frame_header")  # version, kind, seq, session, length, flags, 0
TENSOR_HEADER = contract.struct_of("tensor_header")
Kind = contract.kinds()
DELIMITER = b"\x00"
CRC = struct.Struct("<I")
MIN_BODY = HEADER.size + CRC.size
MAX_BODY = MIN_BODY + MAX_PAYLOAD
# COBS adds one byte per 254 and one more; anything longer between delimiters is not a frame.
MAX_ENCODED = MAX_BODY + MAX_BODY // 254 + 2


@dataclass(frozen=True)
class Frame:
    kind: int
    seq: int
    session: int
    payload: bytes
    response: bool

    def describe(self) -> str:
        name = (
            Kind(self.kind).name if self.kind in Kind._value2member_map_ else f"0x{self.kind:02x}"
        )
        direction = "response" if self.response else "request"
        return f"{name} {direction} seq={self.seq} session={self.session:08x} {len(self.payload)} B"


def encode_frame(
    kind: int, seq: int, session: int, payload: bytes = b"", *, response: bool = False
) -> bytes:
    """The frame on the wire: delimiter, COBS(header + payload + CRC), delimiter."""
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"payload of {len(payload)} bytes, at most {MAX_PAYLOAD}")
    flags = FLAG_RESPONSE if response else 0
    body = HEADER.pack(PROTOCOL_VERSION, kind, seq, session, len(payload), flags, 0) + payload
    body += CRC.pack(zlib.crc32(body))
    return DELIMITER + cobs.encode(body) + DELIMITER


def decode_frame(encoded: bytes) -> Frame:
    """One frame from the bytes between two delimiters; FrameError says why it is not one."""
    if len(encoded) > MAX_ENCODED:
        raise FrameError(f"{len(encoded)} bytes between delimiters, more than any frame")
    try:
        body = cobs.decode(encoded)
    except cobs.DecodeError as exc:
        raise FrameError(f"bad COBS ({exc})") from None
    if len(body) < MIN_BODY:
        raise FrameError(f"{len(body)} bytes, shorter than a frame ({MIN_BODY})")
    version, kind, seq, session, length, flags, reserved = HEADER.unpack_from(body)
    if version != PROTOCOL_VERSION:
        raise FrameError(f"protocol version {version}, this host speaks {PROTOCOL_VERSION}")
    if length != len(body) - MIN_BODY:
        raise FrameError(f"length field {length}, {len(body) - MIN_BODY} payload bytes present")
    if flags & ~FLAG_RESPONSE or reserved:
        raise FrameError(f"reserved bits set (flags 0x{flags:02x}, reserved 0x{reserved:02x})")
    (crc,) = CRC.unpack_from(body, len(body) - CRC.size)
    if zlib.crc32(body[: -CRC.size]) != crc:
        raise FrameError("CRC mismatch")
    payload = bytes(body[HEADER.size : -CRC.size])
    return Frame(kind, seq, session, payload, bool(flags & FLAG_RESPONSE))


# ---- Payloads ---------------------------------------------------------------------------------


class _Reader:
    """Bounds-checked little-endian reads from a payload."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize("<" + fmt)
        if self.pos + size > len(self.data):
            raise PayloadError(f"{self.what}: {len(self.data)} bytes, too short")
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += size
        return values

    def string(self) -> str:
        (length,) = self.take("B")
        (raw,) = self.take(f"{length}s")
        return raw.decode("ascii", errors="replace")

    def rest(self) -> bytes:
        rest = self.data[self.pos :]
        self.pos = len(self.data)
        return rest

    def end(self) -> None:
        if self.pos != len(self.data):
            raise PayloadError(f"{self.what}: {len(self.data) - self.pos} bytes left over")


@dataclass(frozen=True)
class Info:
    protocol_version: int
    max_payload: int
    tick_hz: int
    npu_id: int
    npu_config_register: int
    metadata_bytes: int
    planned_bytes: int
    scratch_bytes: int
    program_slot_bytes: int
    program_loaded: bool
    program_sha256: bytes
    firmware_version: str
    board: str
    npu_config: str
    kernels_total: int
    kernels: tuple[str, ...]

    @property
    def has_npu(self) -> bool:
        return self.npu_id != 0


def parse_info(payload: bytes) -> Info:
    r = _Reader(payload, "INFO")
    version, _, max_payload, tick_hz, npu_id, npu_cfg = r.take("HHIIII")
    metadata, planned, scratch, slot = r.take("IIII")
    loaded, _, _, _ = r.take("BBBB")
    (sha,) = r.take("32s")
    firmware, board, npu_config = r.string(), r.string(), r.string()
    total, listed = r.take("HH")
    kernels = tuple(r.string() for _ in range(listed))
    r.end()
    return Info(
        version, max_payload, tick_hz, npu_id, npu_cfg, metadata, planned, scratch, slot,
        bool(loaded), sha, firmware, board, npu_config, total, kernels,
    )  # fmt: skip


@dataclass(frozen=True)
class Loaded:
    init_ticks: int
    metadata_used: int
    metadata_size: int
    planned_used: int
    planned_size: int
    num_inputs: int
    num_outputs: int


def parse_loaded(payload: bytes) -> Loaded:
    r = _Reader(payload, "LOADED")
    values = r.take("QIIIIHH")
    r.end()
    return Loaded(*values)


@dataclass(frozen=True)
class RunTiming:
    iterations: int
    tick_hz: int
    total_ticks: int
    min_ticks: int
    max_ticks: int
    virtual_npu_ticks: int = 0  # of total_ticks: waiting for the host's virtual-NPU jobs


def parse_run(payload: bytes) -> RunTiming:
    r = _Reader(payload, "RUN")
    values = r.take("IIQQQ")
    # Firmware without the virtual NPU sends the 32-byte form.
    extra = r.take("Q") if len(payload) > r.pos else (0,)
    r.end()
    return RunTiming(*values, *extra)


@dataclass(frozen=True)
class Stats:
    tick_hz: int
    runs: int
    load_ticks: int
    input_ticks: int
    run_ticks: int
    last_run_ticks: int
    output_ticks: int
    npu_counters: bool
    npu_cycles: int


def parse_stats(payload: bytes) -> Stats:
    r = _Reader(payload, "STATS")
    tick_hz, runs, load, inputs, run, last, output, npu, _, cycles = r.take("IIQQQQQIIQ")
    r.end()
    return Stats(tick_hz, runs, load, inputs, run, last, output, bool(npu), cycles)


@dataclass(frozen=True)
class TensorHeader:
    index: int
    dtype: int
    shape: tuple[int, ...]
    nbytes: int
    offset: int
    crc: int

    def pack(self) -> bytes:
        sizes = list(self.shape) + [0] * (MAX_DIMS - len(self.shape))
        return TENSOR_HEADER.pack(
            self.index, self.dtype, len(self.shape), self.nbytes, self.offset, self.crc, *sizes
        )


def parse_tensor(payload: bytes, what: str) -> tuple[TensorHeader, bytes]:
    if len(payload) < TENSOR_HEADER.size:
        raise PayloadError(f"{what}: {len(payload)} bytes, shorter than a tensor header")
    index, dtype, ndim, nbytes, offset, crc, *sizes = TENSOR_HEADER.unpack_from(payload)
    if ndim > MAX_DIMS or any(s < 0 for s in sizes) or any(sizes[ndim:]):
        raise PayloadError(f"{what}: bad shape (ndim {ndim}, sizes {sizes})")
    header = TensorHeader(index, dtype, tuple(sizes[:ndim]), nbytes, offset, crc)
    return header, payload[TENSOR_HEADER.size :]


@dataclass(frozen=True)
class ErrorReply:
    code: int
    name: str
    request_kind: int
    reason: str


def parse_error(payload: bytes) -> ErrorReply:
    r = _Reader(payload, "ERROR")
    code, name_length, kind = r.take("BBH")
    (name,) = r.take(f"{name_length}s")
    reason = r.rest()
    return ErrorReply(code, _printable(name), kind, _printable(reason))


def _printable(text: bytes) -> str:
    """Firmware text that quotes the program (operator, backend, method names) as printable
    ASCII: any other byte, a line break or a terminal escape among them, becomes '?'."""
    return "".join(chr(b) if 0x20 <= b < 0x7F else "?" for b in text)


NO_NPU_READ = 0xFFFFFFFF  # NPU_REGS without a read


@dataclass(frozen=True)
class NpuRegs:
    """One register exchange of the virtual U55: the driver's writes in order, then a read
    (its register offset) or none."""

    exchange: int  # numbered from 0 within the request being served
    writes: tuple[tuple[int, int], ...]  # (register offset, value)
    read: int | None


def parse_npu_regs(payload: bytes) -> NpuRegs:
    r = _Reader(payload, "NPU_REGS")
    exchange, count, read = r.take("HHI")
    writes = tuple(r.take("II") for _ in range(count))
    r.end()
    return NpuRegs(exchange, writes, None if read == NO_NPU_READ else read)


def npu_memory(address: int, length: int) -> bytes:
    """NPU_READ and NPU_HASH: `u64 address`, `u32 length`."""
    return struct.pack("<QI", address, length)


def npu_write(address: int, data: bytes) -> bytes:
    return struct.pack("<Q", address) + data


def npu_done(value: int, irq: bool) -> bytes:
    return struct.pack("<IB3x", value, 1 if irq else 0)


def load_begin(size: int, sha256: bytes) -> bytes:
    return struct.pack("<I32s", size, sha256)


def u32(value: int) -> bytes:
    return struct.pack("<I", value)


def get_output(index: int, offset: int, max_bytes: int, after_failure: bool = False) -> bytes:
    flags = GET_OUTPUT_AFTER_FAILURE if after_failure else 0
    return struct.pack("<HHII", index, flags, offset, max_bytes)


def link_test(mode: int, count: int) -> bytes:
    return struct.pack("<B3xI", mode, count)


def parse_u32(payload: bytes, what: str) -> int:
    r = _Reader(payload, what)
    (value,) = r.take("I")
    r.end()
    return value
