"""The host side of the link's frames and payloads (docs/link.md): pure bytes, no firmware."""

from __future__ import annotations

import struct
import zlib

import pytest
from cobs import cobs

from sdk.link import protocol as p
from sdk.link.protocol import FrameError, Kind


def body_of(frame: bytes) -> bytes:
    assert frame[0] == 0 and frame[-1] == 0
    return cobs.decode(frame[1:-1])


def reencode(body: bytes) -> bytes:
    return cobs.encode(body)


def test_a_frame_round_trips_with_zero_bytes_in_the_payload():
    payload = bytes(range(256)) * 3 + b"\x00" * 300
    frame = p.encode_frame(Kind.LOAD_DATA, 7, 0xDEADBEEF, payload)
    assert b"\x00" not in frame[1:-1]  # delimiters only at the ends
    got = p.decode_frame(frame[1:-1])
    assert (got.kind, got.seq, got.session, got.payload, got.response) == (
        Kind.LOAD_DATA, 7, 0xDEADBEEF, payload, False,
    )  # fmt: skip


def test_the_body_layout_is_the_documented_one():
    frame = p.encode_frame(Kind.RUN, 0x1234, 0x01020304, b"\x05\x00\x00\x00", response=True)
    body = body_of(frame)
    assert body[:12] == bytes([1, 0x30, 0x34, 0x12, 4, 3, 2, 1, 4, 0, 1, 0])
    assert struct.unpack("<I", body[-4:])[0] == zlib.crc32(body[:-4])


def test_the_largest_payload_fits_and_one_more_byte_does_not():
    p.decode_frame(p.encode_frame(Kind.LOAD_DATA, 1, 1, b"\xff" * p.MAX_PAYLOAD)[1:-1])
    with pytest.raises(ValueError, match="at most 4096"):
        p.encode_frame(Kind.LOAD_DATA, 1, 1, b"\xff" * (p.MAX_PAYLOAD + 1))


def corrupt_cases():
    good = body_of(p.encode_frame(Kind.INFO, 3, 9, b"abc"))

    def with_crc(body: bytes) -> bytes:
        return body[:-4] + struct.pack("<I", zlib.crc32(body[:-4]))

    flipped = bytearray(good)
    flipped[13] ^= 0x40
    yield "crc", reencode(bytes(flipped)), "CRC mismatch"
    yield "short", reencode(good[:10]), "shorter than a frame"
    yield "version", reencode(with_crc(b"\x02" + good[1:])), "protocol version 2"
    longer = bytearray(good)
    longer[8] = 4  # length 4, 3 present
    yield "length", reencode(with_crc(bytes(longer))), "length field 4, 3 payload bytes"
    flags = bytearray(good)
    flags[10] = 0x80
    yield "flags", reencode(with_crc(bytes(flags))), "reserved bits set"
    reserved = bytearray(good)
    reserved[11] = 1
    yield "reserved", reencode(with_crc(bytes(reserved))), "reserved bits set"
    yield "cobs", b"\x05ab", "bad COBS"
    yield "huge", b"\x01" * (p.MAX_ENCODED + 1), "more than any frame"


@pytest.mark.parametrize("name,encoded,reason", list(corrupt_cases()), ids=lambda v: str(v)[:8])
def test_every_malformed_frame_is_refused_with_its_reason(name, encoded, reason):
    with pytest.raises(FrameError, match=reason):
        p.decode_frame(encoded)


def test_every_single_bit_flip_is_caught():
    frame = p.encode_frame(Kind.GET_OUTPUT, 9, 0x55AA55AA, bytes(range(40)))[1:-1]
    for i in range(len(frame)):
        for bit in range(8):
            damaged = bytearray(frame)
            damaged[i] ^= 1 << bit
            if 0 in damaged:
                continue  # a delimiter: the reader splits there, two short pieces
            with pytest.raises(FrameError):
                p.decode_frame(bytes(damaged))


def info_payload(kernels=("aten::add.out", "aten::mul.out"), listed=None) -> bytes:
    head = struct.pack(
        "<HHIIIIIIII", 1, 0, 4096, 32_000_000, 0, 0, 1 << 18, 1 << 26, 1 << 20, 1 << 25
    )
    head += struct.pack("<BBBB", 1, 0, 0, 0) + bytes(range(32))
    strings = b"".join(
        bytes([len(s)]) + s.encode() for s in ("0.1.0", "corstone300", "ethos-u55-128")
    )
    listed = len(kernels) if listed is None else listed
    names = b"".join(bytes([len(k)]) + k.encode() for k in kernels[:listed])
    return head + strings + struct.pack("<HH", len(kernels), listed) + names


def test_info_parses_every_field():
    info = p.parse_info(info_payload())
    assert info.protocol_version == 1 and info.max_payload == 4096 and info.tick_hz == 32_000_000
    assert not info.has_npu and info.program_loaded and info.program_sha256 == bytes(range(32))
    assert (info.firmware_version, info.board, info.npu_config) == (
        "0.1.0", "corstone300", "ethos-u55-128",
    )  # fmt: skip
    assert info.kernels == ("aten::add.out", "aten::mul.out") and info.kernels_total == 2


@pytest.mark.parametrize("cut", [1, 10, 60, 70])
def test_a_truncated_info_is_a_payload_error(cut):
    with pytest.raises(p.PayloadError, match="INFO"):
        p.parse_info(info_payload()[:-cut])


def test_trailing_bytes_are_a_payload_error():
    with pytest.raises(p.PayloadError, match="left over"):
        p.parse_run(struct.pack("<IIQQQQ", 1, 2, 3, 4, 5, 6) + b"x")


def test_tensor_header_round_trips_and_bad_shapes_are_refused():
    header = p.TensorHeader(2, 6, (1, 3, 4), 48, 16, 0xABCDEF01)
    got, data = p.parse_tensor(header.pack() + b"xyz", "GET_OUTPUT")
    assert got == header and data == b"xyz"
    bad = bytearray(header.pack())
    bad[3] = 9  # ndim 9
    with pytest.raises(p.PayloadError, match="bad shape"):
        p.parse_tensor(bytes(bad), "GET_OUTPUT")
    extra = p.TENSOR_HEADER.pack(0, 6, 1, 4, 0, 0, 1, 7, 0, 0, 0, 0, 0, 0)
    with pytest.raises(p.PayloadError, match="bad shape"):
        p.parse_tensor(extra, "GET_OUTPUT")


def test_error_reply_carries_code_name_and_reason():
    payload = struct.pack("<BBH", 7, 11, Kind.LOAD_BEGIN) + b"OutOfMemory" + b"too big: 9 > 8"
    reply = p.parse_error(payload)
    assert (reply.code, reply.name, reply.request_kind, reply.reason) == (
        7, "OutOfMemory", Kind.LOAD_BEGIN, "too big: 9 > 8",
    )  # fmt: skip
