"""The Ethos-U85 side (issue 31): exports for ethos-u85-256, their command streams decoded
field for field as Vela lists them, and run in the functional U85 model (execute_u85) bit for
bit against the TOSA reference model; what is not modelled is refused by name.

The exports are made once per module (each ~8 s: the tests are `slow`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sdk.errors import ProgramError
from sdk.ethosu.config import NpuConfig, QuantMode
from sdk.ethosu.functional import execute_u85
from sdk.ethosu.functional.execute import NpuState
from sdk.ethosu.payload import parse_vela_stream
from sdk.ethosu.stream.decode import decode_cmd_data
from sdk.ethosu.stream.disasm import field_texts
from sdk.program.audit import read_delegates
from sdk.program.pte import load_program
from sdk.program.tosa_file import find_tosa
from sdk.reference.command_stream import CommandStreamExecutor
from sdk.reference.executor import TosaExecutor
from tests.support.vela_oracle import vela_compile

pytestmark = pytest.mark.slow

TESTS = Path(__file__).parents[1]
MODELS = {
    "conv": TESTS / "ethosu" / "models" / "conv.py",  # FWD part-kernel weights, transposes
    "depthwise": TESTS / "ethosu" / "models" / "depthwise.py",  # SWD depthwise weights
    "add": TESTS / "ethosu" / "models" / "add.py",
    "mobilenet_v2_block": TESTS / "export" / "models" / "mobilenet_v2_block.py",  # the zoo's
}
EXPECTED_OPS = {
    "conv": {("CONV", ""), ("POOL", "SUM")},
    "depthwise": {("DEPTHWISE", ""), ("POOL", "SUM")},
    "add": {("ELEMENTWISE", "ADD")},
    "mobilenet_v2_block": {("CONV", ""), ("DEPTHWISE", ""), ("ELEMENTWISE", "ADD")},
}
NPU = NpuConfig.U85_256


@pytest.fixture(scope="module")
def u85_program(tmp_path_factory):
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import lower, quantize

    cache: dict[str, Path] = {}

    def get(model: str) -> Path:
        if model not in cache:
            quantized = quantize(load_model(str(MODELS[model])), NPU, QuantMode.INT8)
            outdir = tmp_path_factory.mktemp(f"u85_{model}")
            cache[model] = lower(quantized, outdir).program_path
        return cache[model]

    return get


def _random_inputs(io, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.integers(
            np.iinfo(t.dtype).min, np.iinfo(t.dtype).max, size=t.shape, dtype=t.dtype, endpoint=True
        )
        for t in io.inputs
    ]


def _differences(program, seed: int = 0) -> tuple[list[tuple[int, int]], set]:
    """(differing elements, max LSB) per output of every delegate, and the ops that ran."""
    tosa, ours = TosaExecutor(find_tosa(program)), CommandStreamExecutor(program)
    found, ran = [], set()
    for index in range(len(program.plan.delegates)):
        feeds = _random_inputs(tosa.io(index), seed + 17 * index)
        expected, got = tosa.run(index, feeds), ours.run(index, feeds)
        ran |= {(t.kind, t.mode) for t in ours.trace}
        for want, have in zip(expected, got, strict=True):
            diff = np.abs(want.astype(np.int64) - have.reshape(want.shape).astype(np.int64))
            found.append((int((diff > 0).sum()), int(diff.max(initial=0))))
    return found, ran


@pytest.mark.parametrize("model", sorted(MODELS))
def test_u85_command_stream_equals_the_tosa_reference_model(u85_program, model):
    program = load_program(u85_program(model))
    for seed in (0, 1):
        found, ran = _differences(program, seed)
        assert found and all(f == (0, 0) for f in found), found
    assert EXPECTED_OPS[model] <= ran, f"ran {sorted(ran)}"


def _payload(program_path: Path):
    program = load_program(program_path)
    return program, parse_vela_stream(bytes(program.delegate_payload(program.plan.delegates[0])))


def test_a_wrong_register_shows_in_the_comparison(u85_program, monkeypatch):
    """The comparison can fail: the conv's OFM zero point off by one must differ from TOSA."""
    program, stream = _payload(u85_program("conv"))
    cmd = stream.blocks["cmd_data"]
    decoded = decode_cmd_data(cmd)
    reg = [c for c in decoded.commands if c.name == "NPU_SET_OFM_ZERO_POINT"][-1]
    data = bytearray(cmd)
    data[reg.offset + 2 : reg.offset + 4] = ((reg.param + 1) & 0xFFFF).to_bytes(2, "little")
    wrong = decode_cmd_data(bytes(data))
    monkeypatch.setattr("sdk.reference.command_stream.decode_cmd_data", lambda _: wrong)
    found, _ = _differences(program)
    assert found[0][0] > 0 and found[0][1] == 1, found


@pytest.mark.parametrize(
    "model,register,param,message",
    [
        ("add", "NPU_OP_ELEMENTWISE", 11, "elementwise mode DIV"),
        ("conv", "NPU_OP_POOL", 1, "AVERAGE pool"),
        ("conv", "NPU_SET_WEIGHT_FORMAT", 1 << 4 | 1, "2:4 sparse weights"),
        ("conv", "NPU_OP_CONV", 1, "matmul"),
    ],
)
def test_what_the_u85_model_does_not_model_is_refused_by_name(
    u85_program, model, register, param, message
):
    _, stream = _payload(u85_program(model))
    decoded = decode_cmd_data(stream.blocks["cmd_data"])
    command = next(c for c in decoded.commands if c.name == register)
    data = bytearray(stream.blocks["cmd_data"])
    data[command.offset + 2 : command.offset + 4] = param.to_bytes(2, "little")
    scratch = np.zeros(max(stream.scratch_size, 4096), dtype=np.uint8)
    weights = np.frombuffer(stream.blocks["weight_data"], dtype=np.uint8).copy()
    state = NpuState({0: weights, 1: scratch, 2: scratch})
    with pytest.raises(ProgramError, match=message):
        execute_u85.execute(decode_cmd_data(bytes(data)), state)


@pytest.mark.parametrize("model", ["conv", "mobilenet_v2_block"])
def test_u85_decoder_matches_vela_listing(u85_program, tmp_path, model):
    """Vela recompiles the saved TOSA to the program's stream; every command then agrees with
    its `--verbose-register-command-stream` listing: offset, name, words, fields."""
    program_path = u85_program(model)
    for info in read_delegates(load_program(program_path)):
        tosa = program_path.parent / "tosa" / f"delegate_{info.index}.tosa"
        flags = info.compile_specs["compile_flags"].split()
        assert f"--accelerator-config={NPU.value}" in flags
        vela = vela_compile(tosa, flags, tmp_path / f"vela_{info.index}")
        assert vela.cmd_data == info.vela.blocks["cmd_data"]
        decoded = decode_cmd_data(vela.cmd_data)
        assert decoded.is_u85 and decoded.stream_words == vela.header_words
        assert len(decoded.commands) == len(vela.commands)
        for cmd, ref in zip(decoded.commands, vela.commands, strict=True):
            where = f"{model} @0x{ref.offset:06x} {ref.name}"
            assert (cmd.stream_offset, cmd.name, cmd.word & 0xFFFF) == (
                ref.offset,
                ref.name,
                ref.code,
            ), where
            assert (cmd.param, cmd.payload) == (ref.param, ref.payload), where
            assert tuple(field_texts(cmd)) == ref.fields, where
