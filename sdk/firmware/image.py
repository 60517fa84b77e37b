"""The blobs the host preloads into the board's slots (docs/firmware.md, "Preloaded blobs").

`SDKP` wraps a program, `SDKI` the inputs: a 32-byte header (magic, version, payload size,
CRC-32 of the payload, 16 reserved bytes) and the payload. The inputs payload holds one 48-byte
record per input, in the program's input order, then the data, each 16-byte aligned.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from sdk.errors import ProgramError, ResourceError
from sdk.link.protocol import MAX_DIMS
from sdk.program.pte import LoadedProgram, scalar_type_of

PROGRAM_MAGIC = b"SDKP"
INPUTS_MAGIC = b"SDKI"
BLOB_VERSION = 1
HEADER = struct.Struct("<4sIII16s")
INPUTS_HEADER = struct.Struct("<II")
INPUT_RECORD = struct.Struct("<BBHIII8i")
DATA_ALIGNMENT = 16


def pack_blob(magic: bytes, payload: bytes) -> bytes:
    header = HEADER.pack(magic, BLOB_VERSION, len(payload), zlib.crc32(payload), bytes(16))
    return header + payload


def unpack_blob(blob: bytes, magic: bytes) -> bytes:
    """The payload of a blob, after checking its header and CRC (tests, tools)."""
    if len(blob) < HEADER.size:
        raise ProgramError(f"blob of {len(blob)} bytes is shorter than its header")
    found, version, size, crc, _ = HEADER.unpack_from(blob)
    payload = blob[HEADER.size : HEADER.size + size]
    if found != magic or version != BLOB_VERSION or len(payload) != size:
        raise ProgramError(f"not a version-{BLOB_VERSION} {magic.decode()} blob")
    if zlib.crc32(payload) != crc:
        raise ProgramError(f"{magic.decode()} blob: CRC mismatch")
    return payload


def pack_program(pte: bytes) -> bytes:
    return pack_blob(PROGRAM_MAGIC, pte)


def pack_inputs(inputs: list[np.ndarray]) -> bytes:
    """The SDKI blob for these arrays, in the order given (the program's input order)."""
    records = []
    chunks = []
    offset = _align(INPUTS_HEADER.size + INPUT_RECORD.size * len(inputs))
    for i, array in enumerate(inputs):
        array = np.asarray(array, order="C")  # (ascontiguousarray makes 0-d arrays 1-d)
        if array.ndim > MAX_DIMS:
            raise ResourceError(f"input {i} has {array.ndim} dimensions, at most {MAX_DIMS}")
        data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        sizes = [*array.shape, *([0] * (MAX_DIMS - array.ndim))]
        code = int(scalar_type_of(array.dtype))
        records.append(INPUT_RECORD.pack(code, array.ndim, 0, len(data), offset, 0, *sizes))
        chunks.append((offset, data))
        offset = _align(offset + len(data))
    payload = bytearray(offset)
    INPUTS_HEADER.pack_into(payload, 0, len(inputs), 0)
    for i, record in enumerate(records):
        start = INPUTS_HEADER.size + i * INPUT_RECORD.size
        payload[start : start + INPUT_RECORD.size] = record
    for start, data in chunks:
        payload[start : start + len(data)] = data
    return pack_blob(INPUTS_MAGIC, bytes(payload))


def write_blobs(
    program: LoadedProgram, inputs: list[np.ndarray], outdir: Path
) -> tuple[Path, Path]:
    """Check the inputs against the program and write program.sdkp / inputs.sdki into outdir."""
    program.check_inputs(inputs)
    outdir.mkdir(parents=True, exist_ok=True)
    program_path = outdir / "program.sdkp"
    inputs_path = outdir / "inputs.sdki"
    program_path.write_bytes(pack_program(program.data))
    inputs_path.write_bytes(pack_inputs(inputs))
    return program_path, inputs_path


def _align(value: int) -> int:
    return (value + DATA_ALIGNMENT - 1) // DATA_ALIGNMENT * DATA_ALIGNMENT
