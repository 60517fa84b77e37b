"""The Ethos-U85 side (issue 31): exports for ethos-u85-256 and -128 (what ExecuTorch's tests
compile for), their command streams decoded field for field as Vela lists them, and run in the
functional U85 model (execute_u85) bit for bit against the TOSA reference model, INT8 and the
zoo block at INT16 (a16w8: 48-bit accumulators); what is not modelled is refused by name.
The wheel's own U85 cases: test_u85_peer_sample.py.

The exports are made once per module (each ~3-8 s: the tests are `slow`).
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
# (model, NPU, quantization) beyond every model on NPU at INT8: U85-128 is one core with its
# own micro-blocks (U1X2 / U1X1) and weight order; INT16 takes 48-bit accumulators and scales
MORE = [
    ("mobilenet_v2_block", NpuConfig.U85_128, QuantMode.INT8),
    ("conv", NpuConfig.U85_128, QuantMode.INT8),
    ("depthwise", NpuConfig.U85_128, QuantMode.INT8),
    ("mobilenet_v2_block", NpuConfig.U85_128, QuantMode.INT16),
    ("conv", NpuConfig.U85_256, QuantMode.INT16),
]


@pytest.fixture(scope="module")
def u85_program(tmp_path_factory):
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import lower, quantize

    cache: dict[tuple, Path] = {}

    def get(model: str, npu: NpuConfig = NPU, quant: QuantMode = QuantMode.INT8) -> Path:
        key = (model, npu, quant)
        if key not in cache:
            quantized = quantize(load_model(str(MODELS[model])), npu, quant)
            outdir = tmp_path_factory.mktemp(f"u85_{model}_{npu.value}_{quant.value}")
            cache[key] = lower(quantized, outdir).program_path
        return cache[key]

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


@pytest.mark.parametrize(
    "model,npu,quant",
    [(m, NPU, QuantMode.INT8) for m in sorted(MODELS)] + MORE,
    ids=lambda v: getattr(v, "value", v),
)
def test_u85_command_stream_equals_the_tosa_reference_model(u85_program, model, npu, quant):
    program = load_program(u85_program(model, npu, quant))
    for seed in (0, 1):
        found, ran = _differences(program, seed)
        assert found and all(f == (0, 0) for f in found), found
    assert EXPECTED_OPS[model] <= ran, f"ran {sorted(ran)}"


def test_int16_uses_the_48_bit_accumulator(u85_program):
    """The a16w8 zoo block's convolutions run with ACC_FORMAT I48 (48-bit bias records)."""
    program_path = u85_program("mobilenet_v2_block", NpuConfig.U85_128, QuantMode.INT16)
    _, stream = _payload(program_path)
    decoded = decode_cmd_data(stream.blocks["cmd_data"])
    formats = {
        op.value("ACC_FORMAT", "acc_format") for op in decoded.operations if op.kind == "CONV"
    }
    assert formats == {1}, formats


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
        ("add", "NPU_OP_ELEMENTWISE", 5, "elementwise mode LRELU"),
        ("conv", "NPU_OP_POOL", 6, "pooling mode ARGMAX_X"),
        ("conv", "NPU_SET_ACC_FORMAT", 1 << 4, "an accumulator kept or fed across"),
        ("conv", "NPU_SET_ACTIVATION", 11, "activation function LUT_SIGMOID"),
        ("add", "NPU_SET_OFM_PRECISION", 1 << 14 | 0x0101, "an OFM in 3x1 tiles"),
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


def test_program_timings_time_a_u85_program(u85_program):
    """sdk.ethosu.cycles times a U85 stream with the U85's model (sdk/ethosu/cycles_u85.py;
    against Vela: tests/ethosu/test_cycles_u85.py)."""
    from sdk.ethosu.cycles import program_timings

    program, _ = _payload(u85_program("conv", NpuConfig.U85_128))
    untimed: dict[int, str] = {}
    (timing,) = program_timings(program, untimed=untimed).values()
    assert untimed == {} and timing.cycles > 0 and timing.npu_config == "ethos-u85-128"


def test_sdk_estimate_times_a_u85_program(u85_program, capsys):
    """`sdk estimate` on a U85 program: the model's figure beside Vela's own."""
    import json

    from sdk.cli.main import main

    program = u85_program("conv", NpuConfig.U85_128)
    assert main(["estimate", str(program), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["untimed"] == [] and len(data["delegates"]) == 1
    assert data["npu_cycles_modelled"] > 0 and data["vela_estimate_cycles"] > 0
