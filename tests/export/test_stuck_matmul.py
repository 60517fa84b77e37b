"""Vela 5.1.0 lowers attention's batched q @ k^T (q a slice of a fused qkv) at INT8 into one
MUL + REDUCE_SUM chain per head whose MULs all read head 0's q: the command stream is sound as
a stream (the functional U55 runs it as the NPU would) but computes q[0] @ k[h]^T. The SDK
finds such chains in the stream, never writes the program, and lowers again with the bmm on
the CPU; `sdk inspect` flags the stock partitioner's program."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main
from sdk.ethosu.functional.execute import STUCK_OPERAND_MATMUL, stuck_matmul_operands
from sdk.ethosu.stream.decode import decode_cmd_data
from sdk.program.audit import npu_stuck_matmul_operands, read_delegates
from sdk.program.pte import load_program
from sdk.targets.host import host_runner
from tests.support.markers import SHARED_EXPORTS
from tests.support.quantref import assert_matches_quantized_model

pytestmark = [pytest.mark.slow, SHARED_EXPORTS]
MODELS = Path(__file__).parents[1]
QK = str(MODELS / "export" / "models" / "attention_qk.py")
PLAIN_BMM = str(MODELS / "ethosu" / "models" / "matmul.py")


def _runs(case) -> dict[str, list[np.ndarray]]:
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    return {
        kind: host_runner(case.result.program_path, npu_executor=kind).run(inputs)
        for kind in ("tosa", "command-stream")
    }


def test_the_stock_program_multiplies_every_head_by_head_0s_q(export_case, capsys):
    """The finding on the stock partitioner's program: one chain of 4 heads x 65 columns
    reading one IFM address; and it is a real mismatch: Vela's stream on the functional U55
    is not the TOSA graph's result (were Vela fixed, this test would say so)."""
    case = export_case(QK, "int8", False, None)
    (hit,) = case.result.report["npu_stuck_matmul_operands"]
    assert hit.startswith("delegate 0: operations ") and "a MatMul of 4 batches" in hit
    (info,) = read_delegates(load_program(case.result.program_path))
    (chain,) = stuck_matmul_operands(decode_cmd_data(info.vela.blocks["cmd_data"]))
    assert (chain.batches, chain.columns) == (4, 4 * 65)
    runs = _runs(case)
    (tosa,), (stream,) = runs["tosa"], runs["command-stream"]
    heads = [not np.array_equal(tosa[0, h], stream[0, h]) for h in range(4)]
    assert heads == [False, True, True, True]  # head 0 right, every other one wrong
    assert main(["inspect", str(case.result.program_path)]) == 3
    out, err = capsys.readouterr()
    assert "reading batch 0's operand for every batch" in out and "--cpu-op aten.bmm" in out
    assert "IFM base 0x" in err


def test_the_sdk_moves_the_bmm_to_the_cpu(export_case):
    case = export_case(QK, "int8", True, None)
    report = case.result.report
    (workaround,) = report["vela_workarounds"]
    assert workaround["cpu_op"] == "aten.bmm.default"
    assert workaround["why"] == STUCK_OPERAND_MATMUL
    assert workaround["found"] and all("batch 0's" in f for f in workaround["found"])
    assert report["npu_stuck_matmul_operands"] == [] and report["npu_output_overlaps"] == []
    assert "aten::bmm.out" in report["program"]["cpu_operators"]
    runs = _runs(case)
    for a, b in zip(runs["tosa"], runs["command-stream"], strict=True):
        np.testing.assert_array_equal(a, b)
    assert_matches_quantized_model(case, runs["command-stream"])


def test_a_batched_matmul_vela_lowers_whole_is_not_flagged(export_case):
    """A plain bmm of two batches: Vela covers the batches in the MUL's height, one IFM
    address for all of them, the outputs evenly spaced: nothing to find."""
    case = export_case(PLAIN_BMM, "int8", True, None)
    program = load_program(case.result.program_path)
    (info,) = read_delegates(program)
    decoded = decode_cmd_data(info.vela.blocks["cmd_data"])
    assert any(op.kind == "ELEMENTWISE" for op in decoded.operations)  # the bmm is on the NPU
    assert npu_stuck_matmul_operands(program) == []
    assert case.result.report["vela_workarounds"] == []
