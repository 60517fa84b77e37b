"""A delegate with no inputs (all its data constant: an arange, an attention mask) is valid
Vela output: the host reads it, the host reference and the virtual NPU run it, and the
firmware runs it on QEMU (its parser's unit test: firmware/ethosu/vela_payload_test.cpp)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main
from sdk.errors import ProgramError
from sdk.ethosu.payload import parse_vela_stream
from sdk.program.audit import audit_program, read_delegates
from sdk.program.pte import load_program
from sdk.targets.host import run_host
from tests.support.quantref import assert_matches_quantized_model

MODELS = Path(__file__).parent / "models"
ARANGE = str(MODELS / "arange_add.py")  # delegate 0: arange, no inputs; delegate 1: the add
SDPA = str(MODELS / "sdpa_bool_mask.py")

pytestmark = pytest.mark.slow  # each exports with Vela


def _with_block(payload: bytes, name: str, data: bytes) -> bytes:
    """The payload with one block's data replaced (headers and padding rewritten)."""
    out, pos = b"", 0
    while pos < len(payload):
        raw, size, external, reserved = struct.unpack_from("<16sIB11s", payload, pos)
        body = payload[pos + 32 : pos + 32 + size]
        if raw.rstrip(b"\0").decode() == name:
            body = data
        out += struct.pack("<16sIB11s", raw, len(body), external, reserved)
        out += body + b"\0" * (-len(body) % 16)
        pos += 32 + (size + 15) // 16 * 16
    return out


def test_the_host_reads_a_delegate_without_inputs(export_case):
    case = export_case(ARANGE, "int8", True, None)
    program = load_program(case.result.program_path)
    streams = [d.vela for d in read_delegates(program)]
    assert [len(s.inputs) for s in streams] == [0, 2]
    assert streams[0].outputs and audit_program(program).ok
    assert case.result.report["delegates"][0]["inputs"] == []
    # Outputs still need a record: a payload without any is refused, naming the block.
    payload = read_delegates(program)[0].payload
    outputs = parse_vela_stream(payload).blocks["outputs"]
    assert _with_block(payload, "outputs", outputs) == payload  # the rewrite alone: no change
    with pytest.raises(ProgramError, match="outputs block has 0 records"):
        parse_vela_stream(_with_block(payload, "outputs", struct.pack("<i", 0)))


def test_the_host_reference_runs_a_delegate_without_inputs(export_case):
    case = export_case(ARANGE, "int8", True, None)
    x = case.quantized.loaded.example_inputs[0].numpy()
    outputs = run_host(case.result.program_path, [x])
    assert_matches_quantized_model(case, outputs)
    want = x + np.arange(8, dtype=np.float32)
    assert np.abs(outputs[0] - want).max() < 0.1  # int8 steps of a range of about 10
    with pytest.raises(AssertionError):  # a wrong answer (no arange added) is told apart
        np.testing.assert_allclose(outputs[0], x, atol=0.1)


def test_attention_with_a_bool_mask_runs_on_the_host_reference(export_case):
    """The mask's delegate has no inputs and rank-0 outputs, which a CPU segment then reads
    (a 0-d array must stay 0-d for ExecuTorch's runtime)."""
    case = export_case(SDPA, "int8", True, None)
    program = load_program(case.result.program_path)
    mask = read_delegates(program)[0].vela
    assert mask.inputs == [] and audit_program(program).ok
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    assert_matches_quantized_model(case, run_host(program, inputs))


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    """One cache for both deploys: the second reuses the program and the firmware."""
    root = tmp_path_factory.mktemp("no_inputs_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SDK_CACHE_DIR", str(root))
        mp.setenv("SDK_FVP", str(root / "no-fvp-here"))  # QEMU, where an FVP is installed
        yield root


@pytest.mark.parametrize("executor", ["tosa", "command-stream"])
def test_a_delegate_without_inputs_deploys_on_qemu(executor, cache_root, tmp_path, capsys):
    code = main(["deploy", "--board", "corstone300", "--target", "qemu", "--quiet",
                 "--npu-executor", executor, ARANGE, "-o", str(tmp_path / "deploy")])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    report = json.loads((tmp_path / "deploy" / "deploy.json").read_text())
    assert report["passed"] and len(report["placement"]["npu"]) == 2
