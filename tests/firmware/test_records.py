"""Reading the `@sdk` record and packing the blobs: pure host code, no build."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from sdk.errors import ProgramError, TargetError
from sdk.firmware.image import (
    INPUTS_MAGIC,
    PROGRAM_MAGIC,
    pack_inputs,
    pack_program,
    unpack_blob,
)
from sdk.firmware.records import check_record, parse_record

DATA = np.arange(6, dtype=np.float32).reshape(2, 3)


def record_text(data: bytes = DATA.tobytes(), crc: int | None = None, result: str = "ok") -> str:
    crc = zlib.crc32(data) if crc is None else crc
    lines = [
        "@sdk begin v=1 board=corstone300",
        "executor_runner: some log text",
        "@sdk memory planned_used=32 planned_size=1024 meta_used=80 meta_size=4096",
        f"@sdk output index=0 dtype=6 sizes=2,3 nbytes=24 crc={crc:08x}",
        f"@sdk data index=0 offset=0 hex={data[:16].hex()}",
        f"@sdk data index=0 offset={len(data[:16])} hex={data[16:].hex()}",
    ]
    if result == "ok":
        lines.append("@sdk result status=ok outputs=1 init_ticks=10 run_ticks=20 tick_hz=1000")
    elif result:
        lines.append(result)
    return "\r\n".join(lines) + "\r\n"


def test_a_good_record_gives_the_outputs():
    record = parse_record(record_text())
    outputs = check_record(record, 0)
    np.testing.assert_array_equal(outputs[0], DATA)
    assert outputs[0].dtype == np.float32
    assert record.memory.planned_used == 32
    assert record.ticks() == (10, 20, 1000)
    assert record.log_lines == ["executor_runner: some log text"]


def test_crc_mismatch_is_an_error():
    with pytest.raises(TargetError, match="output 0: CRC mismatch"):
        check_record(parse_record(record_text(crc=0x12345678)), 0)


def test_missing_result_line_is_an_error():
    with pytest.raises(TargetError, match="without a result line"):
        check_record(parse_record(record_text(result="")), 0)


def test_missing_data_line_is_an_error():
    text = "\n".join(line for line in record_text().splitlines() if "offset=16" not in line)
    with pytest.raises(TargetError, match="output 0: 16 of 24 bytes arrived"):
        check_record(parse_record(text), 0)


def test_lost_line_in_the_middle_is_an_error():
    text = record_text().replace("offset=0 hex=", "offset=4 hex=")
    with pytest.raises(TargetError, match="data at offset 4, expected 0"):
        check_record(parse_record(text), 0)


def test_no_begin_line_means_the_firmware_did_not_start():
    with pytest.raises(TargetError, match="did not start"):
        check_record(parse_record("garbage\n"), 0)


def test_error_result_carries_name_code_and_reason():
    line = '@sdk result status=error code=5 name=OperatorMissing reason="aten::foo.out: no kernel"'
    with pytest.raises(TargetError, match=r"OperatorMissing \(code 5\): aten::foo.out: no kernel"):
        check_record(parse_record(record_text(result=line)), 5)


def test_fault_record_is_reported():
    text = record_text(result="@sdk fault cfsr=0x00010000 hfsr=0x00000000 pc=0x10000100")
    with pytest.raises(TargetError, match="faulted: cfsr=0x00010000 hfsr=0x00000000 pc="):
        check_record(parse_record(text), 100)


def test_ok_record_with_a_nonzero_exit_is_an_error():
    with pytest.raises(TargetError, match="exited with 3"):
        check_record(parse_record(record_text()), 3)


def test_output_count_must_match_the_result():
    text = record_text().replace("outputs=1", "outputs=2")
    with pytest.raises(TargetError, match="announces 2 outputs, 1 arrived"):
        check_record(parse_record(text), 0)


def test_blobs_round_trip_and_check_their_crc():
    blob = pack_program(b"0123ET12rest")
    assert blob[:4] == PROGRAM_MAGIC and len(blob) == 32 + 12
    assert unpack_blob(blob, PROGRAM_MAGIC) == b"0123ET12rest"
    corrupt = bytearray(blob)
    corrupt[-1] ^= 1
    with pytest.raises(ProgramError, match="CRC"):
        unpack_blob(bytes(corrupt), PROGRAM_MAGIC)


def test_inputs_blob_layout_follows_the_doc():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    b = np.ones((4,), dtype=np.float32)
    payload = unpack_blob(pack_inputs([a, b]), INPUTS_MAGIC)
    count, reserved = struct.unpack_from("<II", payload)
    assert (count, reserved) == (2, 0)
    records = [struct.unpack_from("<BBHIII8i", payload, 8 + 48 * i) for i in range(2)]
    dtype, ndim, _, nbytes, offset, _, *sizes = records[0]
    assert (dtype, ndim, nbytes, sizes[:3]) == (2, 2, 12, [2, 3, 0])
    assert offset % 16 == 0 and offset >= 8 + 2 * 48
    assert payload[offset : offset + nbytes] == a.tobytes()
    dtype, ndim, _, nbytes, offset, _, *sizes = records[1]
    assert (dtype, ndim, nbytes, sizes[0]) == (6, 1, 16, 4)
    assert payload[offset : offset + nbytes] == b.tobytes()


def test_a_zero_dim_input_keeps_zero_dims():
    payload = unpack_blob(pack_inputs([np.array(2.5, np.float32)]), INPUTS_MAGIC)
    dtype, ndim, _, nbytes, offset, _, *sizes = struct.unpack_from("<BBHIII8i", payload, 8)
    assert (dtype, ndim, nbytes, sizes) == (6, 0, 4, [0] * 8)
    assert payload[offset : offset + 4] == np.float32(2.5).tobytes()


# ---- The console is untrusted text ------------------------------------------------------------

OK_RESULT = "@sdk result status=ok outputs=1 init_ticks=10 run_ticks=20 tick_hz=1000"


def test_lines_end_only_at_newline():
    """U+2028 and U+0085 are line breaks to str.splitlines(), not to the record."""
    fake = f"x\u2028{OK_RESULT}\u0085"
    text = record_text(result=f'@sdk result status=error code=5 name=X reason="{fake}"')
    with pytest.raises(TargetError, match=r"firmware error X \(code 5\)"):
        check_record(parse_record(text), 0)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (OK_RESULT, "a record line after the result line"),
        ("@sdk memory planned_used=1 planned_size=1 meta_used=1 meta_size=1", "after the result"),
        ("some text", "text after the result line"),
    ],
)
def test_nothing_may_follow_the_result(extra: str, message: str):
    with pytest.raises(TargetError, match=message):
        check_record(parse_record(record_text() + extra + "\n"), 0)


def test_a_second_begin_memory_or_output_header_is_refused():
    lines = record_text().split("\r\n")
    for duplicate in (lines[0], lines[2], lines[3]):
        text = "\r\n".join([*lines[:4], duplicate, *lines[4:]])
        with pytest.raises(TargetError, match="a second"):
            check_record(parse_record(text), 0)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("tick_hz=1000", "tick_hz=fast", "tick_hz='fast' is not an unsigned number"),
        ("run_ticks=20", "run_ticks=-5", "run_ticks='-5' is not an unsigned number"),
        ("meta_size=4096", "meta_size=" + "9" * 5000, "is not an unsigned number"),
        ("@sdk memory", "@sdk _eq__", "unknown record kind '_eq__'"),
        ("@sdk memory", "@sdk _init__", "unknown record kind '_init__'"),
        (" run_ticks=20", "", "no run_ticks="),
        ("sizes=2,3", "sizes=2,,3", "is not a list of sizes"),
        ("crc=", "crc=0x", "is not 8 hex digits"),
        ("nbytes=24", "nbytes=24 nbytes=24", "nbytes= given twice"),
        ("begin v=1", "begin v=2", "record version 2"),
        ("@sdk memory", "@sdk memoir", "unknown record kind 'memoir'"),
    ],
)
def test_malformed_lines_fail_with_the_line(old: str, new: str, message: str):
    text = record_text().replace(old, new, 1)
    with pytest.raises(TargetError, match=message):
        check_record(parse_record(text), 0)


def test_ticks_of_a_record_without_a_good_result_are_an_error():
    with pytest.raises(TargetError, match="no 'result status=ok' line"):
        parse_record(record_text(result="")).ticks()


def test_header_bytes_must_match_dtype_and_sizes():
    data = DATA.tobytes() + bytes(4)
    text = record_text(data=data).replace("nbytes=24", "nbytes=28")
    with pytest.raises(TargetError, match=r"nbytes=28 but Float \[2, 3\] takes 24"):
        check_record(parse_record(text), 0)


def test_quantized_dtype_codes_arrive_as_their_storage():
    data = np.arange(-3, 3, dtype=np.int8)
    text = record_text(data=data.tobytes()).replace("dtype=6", "dtype=12").replace("=24", "=6")
    (out,) = check_record(parse_record(text), 0)
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, data.reshape(2, 3))


def test_a_fault_after_a_cut_line_is_still_the_news():
    """The fault handler interrupts a record line half-way; the fault is what gets reported."""
    text = record_text(result="@sdk data index=0 offs")
    text += "@sdk fault cfsr=0x00100000 hfsr=0x00000000 pc=0x10000100 frame=stale\n"
    with pytest.raises(TargetError, match=r"faulted: cfsr=0x00100000 .*may be stale"):
        check_record(parse_record(text), 100)
