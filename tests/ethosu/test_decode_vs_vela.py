"""The decoder against Vela's own disassembly, field for field, on every delegate of the set.

Vela recompiles each delegate's saved TOSA with the flags the program records; its cmd_data
must be the program's byte for byte (else the listing would describe another stream), then
every command must agree: offset, name, opcode and control bits, parameter, payload, and each
field's name, order and value as Vela prints it.
"""

from __future__ import annotations

from collections import Counter

import pytest

from sdk.ethosu.stream.decode import Operation, decode_cmd_data
from sdk.ethosu.stream.disasm import field_texts
from tests.support.markers import SHARED_EXPORTS
from tests.support.npu_cases import CASE_IDS, CASES
from tests.support.vela_oracle import parse_listing

pytestmark = SHARED_EXPORTS


@pytest.mark.parametrize(("model", "quant"), CASES, ids=CASE_IDS)
def test_decoder_matches_vela_listing(delegate_streams, model, quant):
    streams = delegate_streams(model, quant)
    assert streams
    for stream in streams:
        assert stream.vela.cmd_data == stream.cmd_data, f"{stream.case}: recompiled stream differs"
        decoded = decode_cmd_data(stream.cmd_data)
        assert decoded.stream_words == stream.vela.header_words, stream.case
        ours, theirs = decoded.commands, stream.vela.commands
        assert len(ours) == len(theirs), f"{stream.case}: {len(ours)} vs {len(theirs)} commands"
        for cmd, ref in zip(ours, theirs, strict=True):
            where = f"{stream.case} @0x{ref.offset:06x} {ref.name}"
            assert cmd.stream_offset == ref.offset, where
            assert cmd.name == ref.name, where
            assert cmd.word & 0xFFFF == ref.code, where
            assert cmd.param == ref.param, where
            assert cmd.payload == ref.payload, where
            assert tuple(field_texts(cmd)) == ref.fields, where


def _coverage(delegate_streams) -> tuple[Counter, set[str]]:
    """What the set exercises: operation kinds and mode texts, and register field values."""
    ops: Counter = Counter()
    values: set[str] = set()
    for case in CASES:
        for stream in delegate_streams(*case):
            for cmd in decode_cmd_data(stream.cmd_data).commands:
                if isinstance(cmd, Operation):
                    ops[cmd.kind] += 1
                values.update(f"{name}={text}" for name, text in field_texts(cmd))
    return ops, values


def test_regression_set_covers_the_operations(delegate_streams):
    """The oracle test is only as good as its set: hold it to what issue 11 asks for."""
    ops, values = _coverage(delegate_streams)
    for kind in ("CONV", "DEPTHWISE", "POOL", "ELEMENTWISE", "DMA_START", "DMA_WAIT", "STOP"):
        assert ops[kind], f"no {kind} in the regression set: {dict(ops)}"
    for value in (
        "pooling_mode=POOLING_MODE_MAX",
        "pooling_mode=POOLING_MODE_AVERAGE",
        "elementwise_mode=ELEMENTWISE_MODE_ADD",
        "elementwise_mode=ELEMENTWISE_MODE_MUL",
        "activation_function=ACTIVATION_FUNCTION_TABLE_0",
        "activation_precision=ACTIVATION_PRECISION_B8",
        "activation_precision=ACTIVATION_PRECISION_B16",
        "activation_format=ACTIVATION_FORMAT_NHCWB16",
        "weight_order=WEIGHT_ORDER_PART_KERNEL_FIRST",
        "acc_format=ACC_FORMAT_I40",
        "region_mode=DMA_REGION_MODE_INTERNAL",
    ):
        assert value in values, f"{value} never occurs in the regression set"


def test_listing_parser_reads_both_command_kinds():
    """The oracle's own parser (a broken one would make the comparison vacuous)."""
    text = (
        "Register command stream: 3 words\n"
        "0x000000:          0001 010f - NPU_SET_IFM_REGION                 1, region = 1\n"
        "0x000004: 80000001 001f 4024 - NPU_SET_OFM_SCALE                 31, shift = 31, "
        "scale = 2147483649\n"
        "0x00000c:          0000 0002 - NPU_OP_CONV                        0\n"
    )
    commands, words = parse_listing(text)
    assert words == 3
    assert [c.name for c in commands] == ["NPU_SET_IFM_REGION", "NPU_SET_OFM_SCALE", "NPU_OP_CONV"]
    assert commands[1].payload == 0x80000001 and commands[1].param == 31
    assert commands[1].fields == (("shift", "31"), ("scale", "2147483649"))
    assert commands[2].fields == () and commands[0].payload is None
    with pytest.raises(AssertionError, match="unparsed"):
        parse_listing("0x000000: garbage\n")
