"""Parse the Ethos-U delegate payload: the Vela binary stream ExecuTorch's Arm backend writes.

Layout (as ExecuTorch's `executorch/backends/arm/arm_vela.py` writes it): a sequence of
16-byte-aligned blocks, each a 32-byte header (name[16] NUL-padded, u32 unpadded size, u8
external, 11 reserved) then the data zero-padded to 16 bytes. `vela_bin_stream` (empty) comes
first and `vela_end_stream` (empty) ends exactly at the end. `inputs`/`outputs`: i32 count,
then count records of 9 i32: shape[6], elem_size, offset (in the scratch region), region.
`cmd_data` starts with `COP1`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from sdk.errors import ProgramError

_HEADER = struct.Struct("<16sIB11s")
_IO_RECORD = struct.Struct("<9i")
STREAM_START = "vela_bin_stream"
STREAM_END = "vela_end_stream"
REQUIRED_BLOCKS = ("cmd_data", "weight_data", "scratch_size", "inputs", "outputs")


@dataclass(frozen=True)
class NpuTensor:
    """An NPU input/output record: the NPU's view of one boundary tensor."""

    shape: tuple[int, ...]  # 6-D, leading 1s
    elem_size: int
    offset: int
    region: int

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * self.elem_size

    @property
    def dtype(self) -> str:
        """The integer dtype an element size implies (the NPU only moves integers)."""
        return {1: "Char", 2: "Short", 4: "Int"}.get(self.elem_size, f"{self.elem_size}-byte")

    def to_json(self) -> dict:
        return {
            "shape": list(self.shape),
            "elem_size": self.elem_size,
            "dtype": self.dtype,
            "nbytes": self.nbytes,
            "offset": self.offset,
            "region": self.region,
        }


@dataclass
class VelaStream:
    blocks: dict[str, bytes] = field(default_factory=dict)
    external: set[str] = field(default_factory=set)
    inputs: list[NpuTensor] = field(default_factory=list)
    outputs: list[NpuTensor] = field(default_factory=list)
    scratch_size: int = 0
    npu_config: int | None = None  # the CONFIG register value the command stream targets
    npu_id: int | None = None  # the ID register value

    @property
    def macs_per_cycle(self) -> int | None:
        return None if self.npu_config is None else 1 << (self.npu_config & 0xF)

    def to_json(self) -> dict:
        return {
            "blocks": {name: len(data) for name, data in self.blocks.items()},
            "external_blocks": sorted(self.external),
            "scratch_size": self.scratch_size,
            "npu_config": None if self.npu_config is None else f"0x{self.npu_config:08x}",
            "npu_id": None if self.npu_id is None else f"0x{self.npu_id:08x}",
            "macs_per_cycle": self.macs_per_cycle,
            "inputs": [t.to_json() for t in self.inputs],
            "outputs": [t.to_json() for t in self.outputs],
        }


def _parse_io(data: bytes, what: str, least: int) -> list[NpuTensor]:
    """`least`: 0 for inputs (a delegate whose data is all constant has none, as the firmware
    accepts), 1 for outputs (a delegate nobody reads is not something Vela writes)."""
    if len(data) < 4:
        raise ProgramError(f"Vela stream: {what} block is shorter than its count")
    (n,) = struct.unpack_from("<i", data, 0)
    if n < least:
        raise ProgramError(f"Vela stream: {what} block has {n} records ({least} or more)")
    if 4 + n * _IO_RECORD.size > len(data):
        raise ProgramError(f"Vela stream: {what} block claims {n} records in {len(data)} bytes")
    records = []
    for i in range(n):
        *shape, elem_size, offset, region = _IO_RECORD.unpack_from(data, 4 + i * _IO_RECORD.size)
        if elem_size not in (1, 2, 4) or any(s < 0 for s in shape) or offset < 0:
            raise ProgramError(f"Vela stream: {what}[{i}] record is malformed")
        records.append(NpuTensor(tuple(shape), elem_size, offset, region))
    return records


def _parse_cmd_config(cmd: bytes) -> tuple[int | None, int | None]:
    """Find OPTIMIZER_CONFIG (driver action 1) and return (cfg, id)."""
    if len(cmd) < 4 or cmd[:4] != b"COP1":
        raise ProgramError("Vela stream: cmd_data does not start with COP1")
    pos = 4
    while pos + 4 <= len(cmd):
        (word,) = struct.unpack_from("<I", cmd, pos)
        action = word & 0xFF
        if action == 1 and pos + 12 <= len(cmd):  # OPTIMIZER_CONFIG, cfg, id
            return struct.unpack_from("<II", cmd, pos + 4)
        if action == 2:  # COMMAND_STREAM: length in words, bits 15:8 high, 31:16 low
            pos += 4 + ((((word >> 8) & 0xFF) << 16) | (word >> 16)) * 4
        elif action == 5:  # NOP
            pos += 4
        else:
            break
    return None, None


def parse_vela_stream(payload: bytes) -> VelaStream:
    """Parse and validate a Vela binary stream; ProgramError names what is wrong."""
    stream = VelaStream()
    pos = 0
    order: list[str] = []
    while pos < len(payload):
        if pos + _HEADER.size > len(payload):
            raise ProgramError(f"Vela stream: truncated block header at byte {pos}")
        raw_name, size, external, _ = _HEADER.unpack_from(payload, pos)
        name = raw_name.split(b"\0", 1)[0].decode("ascii", "replace")
        start = pos + _HEADER.size
        padded = (size + 15) // 16 * 16
        if start + padded > len(payload):
            raise ProgramError(f"Vela stream: block {name!r} overruns the payload")
        order.append(name)
        stream.blocks[name] = payload[start : start + size]
        if external:
            stream.external.add(name)
        pos = start + padded
        if name == STREAM_END:
            break
    if not order or order[0] != STREAM_START:
        raise ProgramError("Vela stream: does not start with vela_bin_stream")
    if order[-1] != STREAM_END or pos != len(payload):
        raise ProgramError("Vela stream: vela_end_stream missing or not at the end")
    missing = [b for b in REQUIRED_BLOCKS if b not in stream.blocks]
    if missing:
        raise ProgramError(f"Vela stream: missing blocks {', '.join(missing)}")
    stream.inputs = _parse_io(stream.blocks["inputs"], "inputs", 0)
    stream.outputs = _parse_io(stream.blocks["outputs"], "outputs", 1)
    scratch = stream.blocks["scratch_size"]
    if len(scratch) != 4:
        raise ProgramError("Vela stream: scratch_size block is not one u32")
    (stream.scratch_size,) = struct.unpack("<I", scratch)
    if "cmd_data" not in stream.external:
        stream.npu_config, stream.npu_id = _parse_cmd_config(stream.blocks["cmd_data"])
    return stream
