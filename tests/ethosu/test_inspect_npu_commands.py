"""`sdk inspect --npu-commands`: the disassembly per delegate, its JSON, and a refused stream."""

from __future__ import annotations

import json

from sdk.cli.main import main
from sdk.ethosu.stream.decode import decode_cmd_data
from sdk.program.audit import read_delegates
from sdk.program.pte import load_program


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _cmd_data(program) -> bytes:
    return read_delegates(load_program(program))[0].vela.blocks["cmd_data"]


def test_text_listing(npu_program, capsys):
    program = npu_program("conv_act", "int8")
    decoded = decode_cmd_data(_cmd_data(program))
    code, out, err = _cli(capsys, "inspect", "--npu-commands", program)
    assert code == 0, err
    listed = [line for line in out.splitlines() if line.startswith("    0x")]
    assert len(listed) == len(decoded.commands)
    assert "NPU_OP_CONV" in out and "NPU_OP_DEPTHWISE" in out
    assert listed[-1].split()[2] == "NPU_OP_STOP"
    assert "OPTIMIZER_CONFIG config 0x00001807 (Ethos-U55, 128 MACs/cycle" in out
    assert "activation_function=ACTIVATION_FUNCTION_TABLE_0" in out
    assert "CONV ifm tile0 8x8x4 -> ofm 4x4x8, kernel 3x3" in out
    code, plain, _ = _cli(capsys, "inspect", program)
    assert code == 0 and "NPU_OP_" not in plain and "npu_commands" not in plain


def test_json_listing(npu_program, capsys):
    program = npu_program("eltwise", "int16")
    decoded = decode_cmd_data(_cmd_data(program))
    code, out, err = _cli(capsys, "inspect", "--json", "--npu-commands", program)
    assert code == 0, err
    delegate = json.loads(out)["delegates"][0]
    assert delegate["npu_commands_error"] is None
    listing = delegate["npu_commands"]
    assert listing["npu_config"] == "0x00001807" and listing["stream_words"] == decoded.stream_words
    assert listing["operations"] == len(decoded.operations)
    assert [c["name"] for c in listing["commands"]] == [c.name for c in decoded.commands]
    elementwise = [c for c in listing["commands"] if c["name"] == "NPU_OP_ELEMENTWISE"]
    assert {c["enums"]["elementwise_mode"] for c in elementwise} >= {
        "ELEMENTWISE_MODE_MUL",
        "ELEMENTWISE_MODE_ADD",
    }
    base = next(c for c in listing["commands"] if c["name"] == "NPU_SET_IFM_BASE0")
    assert base["fields"] == {"addr": base["payload"]} and "enums" not in base
    code, out, _ = _cli(capsys, "inspect", "--json", program)
    assert code == 0 and "npu_commands" not in json.loads(out)["delegates"][0]


def test_a_malformed_stream_is_refused_with_its_offset(npu_program, capsys, tmp_path):
    program = npu_program("conv_act", "int8")
    data, cmd = program.read_bytes(), _cmd_data(program)
    at = data.find(cmd)
    assert at > 0 and data.find(cmd, at + 1) < 0
    first = at + 32  # the first command word: after COP1, config, 3 NOPs, COMMAND_STREAM
    assert decode_cmd_data(cmd).commands[0].offset == 32
    broken = tmp_path / "broken.pte"
    broken.write_bytes(data[:first] + (0x3FF).to_bytes(4, "little") + data[first + 4 :])
    code, out, err = _cli(capsys, "inspect", "--npu-commands", broken)
    assert code == 1
    assert err.strip() == (
        "error: delegate 0: NPU command stream: cmd_data byte 32 (0x20): "
        "unknown cmd0 opcode 0x3ff (word 0x000003ff)"
    )
    assert "NPU commands: refused: NPU command stream: cmd_data byte 32" in out
    code, _, _ = _cli(capsys, "inspect", broken)
    assert code == 0  # only --npu-commands decodes the stream
