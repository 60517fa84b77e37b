"""The command-stream executor (sdk/ethosu/functional/execute.py,
sdk/reference/command_stream.py) against the
TOSA reference model: every delegate of the regression set (the single-operation models, the
decoder's tiny models and the examples, INT8 and INT16), the same random inputs over each
input's whole range, outputs compared bit for bit.

A difference that remains is pinned in PINNED with what it is (operation, element count, max
LSB), so it can neither hide nor grow; none remains on this set. A delegate whose stream has
no one result (REFUSED: Vela's miscompiled matmul of a slice) must be refused by name.
"""

from __future__ import annotations

import numpy as np
import pytest

from sdk.errors import ProgramError
from sdk.ethosu.functional.execute import NpuState, execute
from sdk.ethosu.stream.decode import decode_cmd_data
from sdk.program.pte import load_program
from sdk.program.tosa_file import find_tosa
from sdk.reference.command_stream import CommandStreamExecutor
from sdk.reference.executor import TosaExecutor
from tests.support.markers import SHARED_EXPORTS
from tests.support.npu_cases import EXAMPLES, MODELS, NPU_BMM, TINY, export_key

pytestmark = SHARED_EXPORTS

SINGLE_OP = (
    *("add", "mul", "conv", "depthwise", "sigmoid", "avgpool", "avgpool_pad", "conv_wide"),
    *("unary", "order", "flip"),
)
MODELS_ALL = (*SINGLE_OP, *TINY, *EXAMPLES)
# unary INT16: Vela 5.1.0 refuses its transposed convolution (a 48-bit Conv2D output)
CASES = [(m, q) for m in MODELS_ALL for q in ("int8", "int16") if (m, q) != ("unary", "int16")]
CASES.append((NPU_BMM, "int8"))

# (kind, mode) of NPU operations each model's delegates must run: the per-op-kind coverage
EXPECTED_OPS = {
    "add": {("ELEMENTWISE", "ADD")},
    "mul": {("ELEMENTWISE", "MUL")},
    "conv": {("CONV", "")},
    "depthwise": {("DEPTHWISE", "")},
    "sigmoid": {("DMA_START", "")},  # the LUT's DMA into SHRAM
    "avgpool": {("POOL", "AVERAGE")},
    "avgpool_pad": {("POOL", "AVERAGE")},  # padded: the hardware's divisor
    "conv_act": {("CONV", ""), ("DEPTHWISE", ""), ("DMA_START", "")},
    "pools": {("POOL", "MAX"), ("POOL", "AVERAGE")},
    "eltwise": {("ELEMENTWISE", "ADD"), ("ELEMENTWISE", "MUL"), ("DMA_START", "")},
    "order": {("ELEMENTWISE", "SUB")},  # IFM2 operand order A, scalar and W-broadcast
    "unary": {("ELEMENTWISE", "ABS"), ("POOL", "MAX"), ("CONV", "")},  # CONV: upscale ZEROS
    "misc": {
        ("ELEMENTWISE", "MAX"),
        ("ELEMENTWISE", "MIN"),
        ("ELEMENTWISE", "SUB"),
        ("POOL", "REDUCE_SUM"),
        ("CONV", ""),
    },
    ("matmul", "int8"): {("ELEMENTWISE", "MUL"), ("POOL", "REDUCE_SUM")},  # INT16: bmm on the CPU
}

# (model, quant, delegate, output) -> (operation, differing elements, max LSB): differences
# known and explained. Empty: every delegate of the set is bit-exact.
PINNED: dict[tuple[str, str, int, int], tuple[str, int, int]] = {}

# (model, quant, delegate) -> the refusal: Vela 5.1.0 lowers shared_split's bmm (its first
# operand a slice of the conv's output) to a MUL and a REDUCE_SUM over the whole unsliced
# tensor, wrapping into the slice-sized buffers (tile 1 on tile 0's base): OFMs that overlap
# themselves, whose result is the NPU's write order (not the model's matmul: run in order,
# it computes the other half's rows times the slice's).
REFUSED = {(NPU_BMM, "int8", 0): r"operation 29 \(NPU_OP_ELEMENTWISE.*OFM overlaps itself"}


@pytest.fixture(scope="module")
def program_path(export_case):
    def get(model: str, quant: str):
        if model in SINGLE_OP:
            return export_case(str(MODELS / f"{model}.py"), quant, True, None).result.program_path
        return export_case(*export_key(model, quant)).result.program_path

    return get


def _random_inputs(io, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.integers(
            np.iinfo(t.dtype).min, np.iinfo(t.dtype).max, size=t.shape, dtype=t.dtype, endpoint=True
        )
        for t in io.inputs
    ]


@pytest.mark.parametrize("model,quant", CASES, ids=[f"{m}-{q}" for m, q in CASES])
def test_command_stream_equals_the_tosa_reference_model(program_path, model, quant):
    program = load_program(program_path(model, quant))
    tosa = TosaExecutor(find_tosa(program))
    ours = CommandStreamExecutor(program)
    ran: set[tuple[str, str]] = set()
    for index in range(len(program.plan.delegates)):
        io = tosa.io(index)
        assert [t.dtype for t in ours.io(index).inputs] == [t.dtype for t in io.inputs]
        for seed in (0, 1):
            feeds = _random_inputs(io, seed + 17 * index)
            expected = tosa.run(index, feeds)
            refused = REFUSED.get((model, quant, index))
            if refused is not None:
                with pytest.raises(ProgramError, match=refused):
                    ours.run(index, feeds)
                continue
            got = ours.run(index, feeds)
            ran |= {(t.kind, t.mode) for t in ours.trace}
            assert len(got) == len(expected)
            for k, (want, have) in enumerate(zip(expected, got)):
                assert have.dtype == want.dtype and have.size == want.size
                diff = np.abs(want.astype(np.int64) - have.reshape(want.shape).astype(np.int64))
                found = (int((diff > 0).sum()), int(diff.max(initial=0)))
                pinned = PINNED.get((model, quant, index, k))
                if pinned is None:
                    assert found == (0, 0), (
                        f"delegate {index} output {k}: {found[0]} of {diff.size} elements "
                        f"differ, by up to {found[1]} LSB"
                    )
                else:
                    assert found == pinned[1:], f"pinned {pinned}, found {found}"
    expected_ops = EXPECTED_OPS.get((model, quant), EXPECTED_OPS.get(model, set()))
    assert expected_ops <= ran, f"ran {sorted(ran)}"


def _patched(cmd_data: bytes, name: str, param: int) -> bytes:
    """cmd_data with the first command called `name` given another 16-bit parameter."""
    decoded = decode_cmd_data(cmd_data)
    command = next(c for c in decoded.commands if c.name == name)
    data = bytearray(cmd_data)
    data[command.offset + 2 : command.offset + 4] = param.to_bytes(2, "little")
    return bytes(data)


def _state(stream) -> NpuState:
    scratch = np.zeros(max(stream.scratch_size, 4096), dtype=np.uint8)
    weights = np.frombuffer(stream.blocks["weight_data"], dtype=np.uint8).copy()
    return NpuState({0: weights, 1: scratch, 2: scratch})


@pytest.mark.parametrize(
    "model,register,param,message",
    [
        ("add", "NPU_OP_ELEMENTWISE", 12, "elementwise mode 12"),
        ("avgpool", "NPU_OP_POOL", 3, "pooling mode 3"),
        ("avgpool", "NPU_SET_IFM_UPSCALE", 2, "IFM upscale ZEROS outside a convolution"),
        ("sigmoid", "NPU_SET_DMA0_SRC_REGION", 3 << 9, "DMA stride mode 3"),
        ("conv", "NPU_SET_ACC_FORMAT", 2, "F16 accumulator"),
    ],
)
def test_what_is_not_modelled_is_refused_by_name(program_path, model, register, param, message):
    from sdk.ethosu.payload import parse_vela_stream

    program = load_program(program_path(model, "int8"))
    stream = parse_vela_stream(bytes(program.delegate_payload(program.plan.delegates[0])))
    decoded = decode_cmd_data(_patched(stream.blocks["cmd_data"], register, param))
    with pytest.raises(ProgramError, match=message):
        execute(decoded, _state(stream))


def test_a_lut_before_any_dma_is_refused(program_path):
    from sdk.ethosu.payload import parse_vela_stream

    program = load_program(program_path("sigmoid", "int8"))
    stream = parse_vela_stream(bytes(program.delegate_payload(program.plan.delegates[0])))
    cmd = stream.blocks["cmd_data"]
    dma = next(  # the LUT's DMA (into SHRAM), not a weight stream's
        op
        for op in decode_cmd_data(cmd).operations
        if op.kind == "DMA_START" and op.value("DMA0_DST_REGION", "region_mode") == 1
    )
    data = bytearray(cmd)
    data[dma.offset : dma.offset + 4] = (0x11).to_bytes(4, "little")  # DMA_WAIT k=0 instead
    with pytest.raises(ProgramError, match="before any DMA into SHRAM"):
        execute(decode_cmd_data(bytes(data)), _state(stream))
