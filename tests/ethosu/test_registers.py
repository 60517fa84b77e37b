"""The register table against the Vela wheel it is derived from, and the register state each
decoded operation carries."""

from __future__ import annotations

import pytest
from ethosu.vela.ethos_u55_regs import ethos_u55_regs as wheel

from sdk.ethosu.stream import registers
from sdk.ethosu.stream.decode import Operation, RegisterSet, decode_cmd_data


def test_every_wheel_opcode_is_in_the_table():
    assert {c.name for c in registers.CMD0.values()} == {e.name for e in wheel.cmd0}
    assert {c.name for c in registers.CMD1.values()} == {e.name for e in wheel.cmd1}
    assert len(registers.BY_NAME) == len(wheel.cmd0) + len(wheel.cmd1) == 97
    for e in wheel.cmd1:
        assert registers.lookup(e.value, True).name == e.name


def test_fields_fit_their_words_and_do_not_overlap():
    for command in registers.BY_NAME.values():
        used = {0: 0, 1: 0}
        for f in command.fields:
            if f.address:
                continue
            mask = ((1 << f.width) - 1) << f.lsb
            assert mask < (1 << (16 if f.word == 0 else 32)), (command.name, f.name)
            assert not used[f.word] & mask, (command.name, f.name)
            used[f.word] |= mask
            assert f.word == 0 or command.cmd1, (command.name, f.name)
            assert f.enum is None or f.enum in registers.ENUMS, (command.name, f.name)


def test_enums_agree_with_the_wheel_where_it_has_them():
    assert {v: n for v, n in registers.ENUMS["elementwise_mode"].items()} == {
        e.value: e.name for e in wheel.elementwise_mode
    }
    assert registers.ENUMS["pooling_mode"] == {e.value: e.name for e in wheel.pooling_mode}
    assert set(registers.ENUMS["acc_format"]) == {e.value for e in wheel.acc_format}
    assert set(registers.ENUMS["activation_clip_range"]) == {e.value for e in wheel.clip_range}
    assert set(registers.ENUMS["round_mode"]) == {e.value for e in wheel.rounding}


def test_field_extraction_and_text():
    stride = registers.BY_NAME["NPU_SET_KERNEL_STRIDE"]
    fields = {f.name: f.extract(0b1_00_0_1_0_0_1_0_1, 0) for f in stride.fields}
    assert fields["stride_x_lsb"] == 1 and fields["stride_y_lsb"] == 0
    assert fields["weight_order"] == 1 and fields["dilation_x"] == fields["dilation_y"] == 0
    assert fields["decomposition"] == 1 and fields["stride_x_msb"] == 0
    assert fields["stride_y_msb"] == 1
    scale = registers.BY_NAME["NPU_SET_OFM_SCALE"]
    assert {f.name: f.extract(0x1F, 0x80000001) for f in scale.fields} == {
        "shift": 31,
        "scale": 0x80000001,
    }
    act = registers.BY_NAME["NPU_SET_ACTIVATION"].fields[0]
    assert act.text(17) == "ACTIVATION_FUNCTION_TABLE_1" and act.text(5) == "****"
    assert registers.as_signed(0xFF80, 16) == -128 and registers.as_signed(0x7F, 16) == 127


@pytest.mark.parametrize(("model", "quant"), [("conv_act", "int8"), ("eltwise", "int16")])
def test_each_operation_carries_the_register_state_before_it(delegate_streams, model, quant):
    for stream in delegate_streams(model, quant):
        decoded = decode_cmd_data(stream.cmd_data)
        last: dict[str, RegisterSet] = {}
        since: set[str] = set()  # set since the previous operation
        for cmd in decoded.commands:
            if isinstance(cmd, Operation):
                assert dict(cmd.state) == last, f"{stream.case} op {cmd.index}"
                assert len(cmd.state) == len(last) and list(cmd.state) == list(last)
                assert cmd.changed == since, f"{stream.case} op {cmd.index}"
                with pytest.raises(TypeError):
                    cmd.state["IFM_BASE0"] = cmd  # a snapshot, not a live view
                since = set()
            else:
                last[cmd.register] = cmd
                since.add(cmd.register)
        ops = decoded.operations
        assert [op.index for op in ops] == list(range(len(ops)))
        assert ops[-1].kind == "STOP"
        compute = [op for op in ops if op.kind in ("CONV", "DEPTHWISE", "POOL", "ELEMENTWISE")]
        assert compute and all(op.value("OFM_DEPTH_M1", "depth_m1") is not None for op in compute)
