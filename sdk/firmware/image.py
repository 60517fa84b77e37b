"""The program blob a host preloads into an emulator's program slot for LOAD_SLOT
(docs/link.md): the contract's `program_blob_header` (magic, version, payload size, CRC-32 of
the payload, reserved zeros), then the program."""

from __future__ import annotations

import zlib

from sdk.errors import ProgramError
from sdk.link import contract

_LINK = contract.data()["link"]
PROGRAM_MAGIC = _LINK["program_blob_magic"]
BLOB_VERSION = _LINK["program_blob_version"]
HEADER = contract.struct_of("program_blob_header")
_RESERVED = next(f.count for f in contract.layout("program_blob_header") if f.name == "reserved")


def pack_program(pte: bytes) -> bytes:
    header = HEADER.pack(PROGRAM_MAGIC, BLOB_VERSION, len(pte), zlib.crc32(pte), *[0] * _RESERVED)
    return header + pte


def unpack_program(blob: bytes) -> bytes:
    """The program in a blob, after checking its header and CRC (tests, tools)."""
    if len(blob) < HEADER.size:
        raise ProgramError(f"blob of {len(blob)} bytes is shorter than its header")
    magic, version, size, crc, *_ = HEADER.unpack_from(blob)
    payload = blob[HEADER.size : HEADER.size + size]
    if magic != PROGRAM_MAGIC or version != BLOB_VERSION or len(payload) != size:
        raise ProgramError(f"not a version-{BLOB_VERSION} program blob")
    if zlib.crc32(payload) != crc:
        raise ProgramError("program blob: CRC mismatch")
    return payload
