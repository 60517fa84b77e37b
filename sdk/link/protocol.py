"""The host link's frames and messages (docs/link.md): encoding, decoding, payload layouts.

Pure functions over bytes, no I/O: `sdk.link.session` does the talking. COBS comes from the
`cobs` package and the CRC from zlib; every layout below is the one docs/link.md specifies.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from cobs import cobs

from sdk.errors import FrameError, PayloadError
from sdk.link import contract

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
CRC = contract.struct_of("frame_trailer")
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

    def fixed(self, name: str) -> dict:
        """A contract payload layout's fields (sdk.link.contract), where the reader stands."""
        size = contract.struct_of(name).size
        if self.pos + size > len(self.data):
            raise PayloadError(f"{self.what}: {len(self.data)} bytes, too short")
        values = contract.unpack(name, self.data, self.pos)
        self.pos += size
        return values

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
    f = r.fixed("info")
    firmware, board, npu_config = r.string(), r.string(), r.string()
    counts = r.fixed("kernel_counts")
    kernels = tuple(r.string() for _ in range(counts["listed"]))
    r.end()
    return Info(
        f["protocol_version"], f["max_payload"], f["tick_hz"], f["npu_id"], f["npu_config"],
        f["metadata_bytes"], f["planned_bytes"], f["scratch_bytes"], f["program_slot_bytes"],
        bool(f["program_loaded"]), f["program_sha256"], firmware, board, npu_config,
        counts["total"], kernels,
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
    values = r.fixed("loaded")
    r.end()
    return Loaded(**values)


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
    values = r.fixed("run_reply")
    r.end()
    return RunTiming(**values)


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
    f = r.fixed("stats_reply")
    r.end()
    f.pop("reserved")
    return Stats(**{**f, "npu_counters": bool(f["npu_counters"])})


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
    f = r.fixed("error")
    (name,) = r.take(f"{f['name_length']}s")
    reason = r.rest()
    return ErrorReply(f["code"], _printable(name), f["request_kind"], _printable(reason))


def _printable(text: bytes) -> str:
    """Firmware text that quotes the program (operator, backend, method names) as printable
    ASCII: any other byte, a line break or a terminal escape among them, becomes '?'."""
    return "".join(chr(b) if 0x20 <= b < 0x7F else "?" for b in text)


NO_NPU_READ = contract.data()["link"]["npu_no_read"]  # NPU_REGS without a read
LINK_TEST_MODES = contract.data()["link"]["link_test_modes"]


@dataclass(frozen=True)
class NpuRegs:
    """One register exchange of the virtual U55: the driver's writes in order, then a read
    (its register offset) or none."""

    exchange: int  # numbered from 0 within the request being served
    writes: tuple[tuple[int, int], ...]  # (register offset, value)
    read: int | None


def parse_npu_regs(payload: bytes) -> NpuRegs:
    r = _Reader(payload, "NPU_REGS")
    f = r.fixed("npu_regs")
    entries = [r.fixed("npu_write_entry") for _ in range(f["count"])]
    r.end()
    writes = tuple((e["offset"], e["value"]) for e in entries)
    return NpuRegs(f["exchange"], writes, None if f["read"] == NO_NPU_READ else f["read"])


def npu_memory(address: int, length: int) -> bytes:
    """NPU_READ and NPU_HASH: `u64 address`, `u32 length`."""
    return contract.pack("npu_memory", address=address, length=length)


def npu_write(address: int, data: bytes) -> bytes:
    return contract.pack("npu_write", address=address) + data


def npu_done(value: int, irq: bool) -> bytes:
    return contract.pack("npu_done", value=value, irq=1 if irq else 0)


def load_begin(size: int, sha256: bytes) -> bytes:
    return contract.pack("load_begin", program_size=size, sha256=sha256)


def connect(session: int) -> bytes:
    return contract.pack("connect", session=session)


LOAD_DATA_HEADER = contract.struct_of("load_data").size  # before the chunk
NPU_WRITE_HEADER = contract.struct_of("npu_write").size  # before the bytes


def load_data(offset: int) -> bytes:
    """LOAD_DATA's fixed part; the chunk follows."""
    return contract.pack("load_data", offset=offset)


def run(iterations: int) -> bytes:
    return contract.pack("run", iterations=iterations)


def get_output(index: int, offset: int, max_bytes: int, after_failure: bool = False) -> bytes:
    flags = GET_OUTPUT_AFTER_FAILURE if after_failure else 0
    return contract.pack("get_output", index=index, flags=flags, offset=offset, max_bytes=max_bytes)


MAX_FILE_NAME = contract.data()["link"]["max_file_name"]


def set_input_file(header: TensorHeader, name: str) -> bytes:
    """SET_INPUT_FILE: the input `header` describes, from the host file `name`."""
    raw = name.encode("ascii")
    return header.pack() + contract.pack("set_input_file", name_length=len(raw)) + raw


def get_output_file(index: int, name: str) -> bytes:
    """GET_OUTPUT_FILE: output `index` written by the firmware to the host file `name`."""
    raw = name.encode("ascii")
    return contract.pack("get_output_file", index=index, name_length=len(raw)) + raw


def npu_write_file(address: int, length: int, name: str) -> bytes:
    """NPU_WRITE_FILE: `length` bytes at `address` from the host file `name`."""
    raw = name.encode("ascii")
    fixed = contract.pack("npu_write_file", address=address, length=length, name_length=len(raw))
    return fixed + raw


def link_test(mode: str, count: int) -> bytes:
    """`mode`: a name of the contract's link_test_modes (SINK, SOURCE)."""
    return contract.pack("link_test", mode=LINK_TEST_MODES[mode], count=count)


def parse_u32(payload: bytes, what: str) -> int:
    r = _Reader(payload, what)
    value = r.fixed("u32_reply")["value"]
    r.end()
    return value


def profile(first: int) -> bytes:
    return contract.pack("profile", first=first)


def parse_profile(payload: bytes) -> tuple[dict, list[dict]]:
    """PROFILE's reply: its header fields and its events (pc, start, npu_wait)."""
    r = _Reader(payload, "PROFILE")
    header = r.fixed("profile_reply")
    events = [r.fixed("profile_event") for _ in range(header["count"])]
    r.end()
    return header, events


def parse_fixed(payload: bytes, name: str, what: str) -> dict:
    """A reply that is one contract layout, whole (SET_INPUT's, LINK_TEST's)."""
    r = _Reader(payload, what)
    values = r.fixed(name)
    r.end()
    return values
