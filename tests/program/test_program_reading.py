"""Reading programs: the Vela payload parser, the audit, and corrupt inputs."""

from __future__ import annotations

import struct

import pytest

from sdk.errors import ProgramError
from sdk.ethosu.payload import parse_vela_stream
from sdk.program.audit import audit_program, read_delegates
from sdk.program.pte import load_program
from tests.support.markers import SHARED_EXPORTS

pytestmark = SHARED_EXPORTS


@pytest.fixture(scope="module")
def int16_program(export_case):
    return export_case("shared_split", "int16", True, None).result.program_path


def test_vela_payload_is_parsed(int16_program):
    program = load_program(int16_program)
    delegates = read_delegates(program)
    assert delegates
    for info in delegates:
        stream = info.vela
        assert stream is not None, info.vela_error
        names = list(stream.blocks)
        assert names[0] == "vela_bin_stream" and names[-1] == "vela_end_stream"
        assert stream.macs_per_cycle == 128  # compiled for ethos-u55-128
        assert (stream.npu_config >> 28) & 0xF == 0  # product 0: Ethos-U55
        assert stream.inputs and stream.outputs
        assert all(len(t.shape) == 6 and t.elem_size == 2 for t in stream.inputs)
        assert stream.scratch_size >= max(t.offset + t.nbytes for t in stream.outputs)


def _blocks(payload: bytes) -> list[tuple[int, str, int]]:
    """(offset, name, size) of each block, to build corrupt variants from a real payload."""
    out, pos = [], 0
    while pos < len(payload):
        name, size = struct.unpack_from("<16sI", payload, pos)
        out.append((pos, name.rstrip(b"\0").decode(), size))
        pos += 32 + (size + 15) // 16 * 16
    return out


def _corruptions(payload: bytes) -> dict[str, bytes]:
    blocks = {name: (offset, size) for offset, name, size in _blocks(payload)}
    inputs_at = blocks["inputs"][0] + 32
    cmd_at = blocks["cmd_data"][0] + 32
    return {
        "truncated": payload[: len(payload) // 2],
        "header-only": payload[:20],
        "no-end-block": payload[: blocks["vela_end_stream"][0]],
        "trailing-bytes": payload + b"\0" * 16,
        "bad-first-block": b"x" + payload[1:],
        "huge-io-count": payload[:inputs_at] + struct.pack("<i", 10**6) + payload[inputs_at + 4 :],
        "negative-io-count": payload[:inputs_at] + struct.pack("<i", -1) + payload[inputs_at + 4 :],
        "bad-cop-magic": payload[:cmd_at] + b"XXXX" + payload[cmd_at + 4 :],
        "block-overrun": payload[: blocks["weight_data"][0] + 16]
        + struct.pack("<I", 1 << 30)
        + payload[blocks["weight_data"][0] + 20 :],
    }


def test_corrupt_vela_payloads_are_refused(int16_program):
    payload = read_delegates(load_program(int16_program))[0].payload
    parse_vela_stream(payload)  # the original is fine
    for name, corrupt in _corruptions(payload).items():
        with pytest.raises(ProgramError, match="Vela stream"):
            parse_vela_stream(corrupt)
            pytest.fail(f"{name} was accepted")


def test_truncated_program_is_a_program_error(int16_program, tmp_path):
    data = int16_program.read_bytes()
    for cut in (len(data) // 2, 200, 9):
        broken = tmp_path / f"cut{cut}.pte"
        broken.write_bytes(data[:cut])
        with pytest.raises(ProgramError, match=f"cut{cut}.pte"):
            load_program(broken)


def test_audit_flags_a_byte_size_mismatch(int16_program):
    """Same dtype, wrong shape: the audit compares byte sizes too."""
    program = load_program(int16_program)
    assert audit_program(program).ok
    _, call = next(program.delegate_calls())
    tensor = program.plan.values[call.args[0]].val
    tensor.sizes = [*tensor.sizes[:-1], tensor.sizes[-1] + 1]
    audit = audit_program(program)
    assert not audit.ok
    assert "bytes" in audit.problems[0] and f"value {call.args[0]}" in audit.problems[0]


def test_cpu_only_program_has_nothing_to_audit(tmp_path):
    import torch
    from executorch.exir import to_edge_transform_and_lower

    class Add(torch.nn.Module):
        def forward(self, x):
            return x + 1

    ep = torch.export.export(Add(), (torch.ones(2),))
    (tmp_path / "add.pte").write_bytes(to_edge_transform_and_lower(ep).to_executorch().buffer)
    program = load_program(tmp_path / "add.pte")
    audit = audit_program(program)
    assert audit.ok and audit.delegates == [] and audit.call_sites == []
    assert "aten::add.out" in program.operators()


@pytest.mark.parametrize(
    "case",
    [("shared_split", "int16", None), ("yolo_attention", "int8", ["aten.bmm"])],
    ids=["npu-only", "cpu-op-with-constants"],
)
def test_the_reader_gives_executorchs_program(export_case, case):
    """load_program decodes the flatbuffer with ExecuTorch's reader and puts the segments
    back itself (ExecuTorch's deserializer imports torch): the Program must be the same."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    model, quant, cpu_ops = case
    data = export_case(model, quant, True, cpu_ops).result.program_path.read_bytes()
    assert data[8:12] == b"eh00"  # the segments follow the flatbuffer: restored, not inline
    program = load_program(data).program
    assert program.backend_delegate_data and all(
        d.processed.location == 0 for p in program.execution_plan for d in p.delegates
    )  # INLINE
    assert program == deserialize_pte_binary(data).program


def test_the_reader_restores_constants_as_executorch_does():
    """A CPU program with weights: its constants live in the constant segment."""
    import torch
    from executorch.exir import to_edge
    from executorch.exir._serialize._program import deserialize_pte_binary

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
    exported = torch.export.export(model.eval(), (torch.randn(2, 8),))
    data = to_edge(exported).to_executorch().buffer
    program = load_program(data).program
    assert sum(len(b.storage) > 0 for b in program.constant_buffer) == 4  # 2 weights, 2 biases
    assert program == deserialize_pte_binary(data).program


def test_segments_past_the_end_are_refused(int16_program):
    data = int16_program.read_bytes()
    with pytest.raises(ProgramError, match=r"corrupt program: .*past the file"):
        load_program(data[: len(data) - 64])
    header = bytearray(data)
    struct.pack_into("<Q", header, 16, len(data) + 1)  # program size past the end
    with pytest.raises(ProgramError, match="corrupt program: extended header"):
        load_program(bytes(header))
