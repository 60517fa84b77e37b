"""Vela 5.1.0 miscompiles an Ethos-U55 MatMul whose first operand is a slice (shared_split's
bmm at INT8): its operations' outputs overlap themselves, and the device's result is not the
model's. The SDK never writes such a program: it lowers again with the bmm on the CPU and says
so; the stock partitioner's program is flagged by the export report and by `sdk inspect`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sdk.export.pipeline as pipeline
from sdk.cli.main import main
from sdk.errors import ExportError
from sdk.targets.host import host_runner
from tests.support.markers import SHARED_EXPORTS
from tests.support.quantref import assert_matches_quantized_model

pytestmark = [pytest.mark.slow, SHARED_EXPORTS]
TINY_CONV = str(Path(__file__).parents[1] / "ethosu" / "models" / "conv.py")


def test_the_sdk_moves_a_miscompiled_bmm_to_the_cpu(export_case):
    case = export_case("shared_split", "int8", True, None)
    report = case.result.report
    (workaround,) = report["vela_workarounds"]
    assert workaround["cpu_op"] == "aten.bmm.default" and "slice" in workaround["why"]
    assert workaround["found"] and all("overlaps itself" in f for f in workaround["found"])
    assert report["npu_output_overlaps"] == []
    assert "aten::bmm.out" in report["program"]["cpu_operators"]
    assert report["cpu_ops_forced"] == []  # the user forced nothing
    bmm = [n for n in report["cpu_nodes"] if n["target"] == "aten.bmm.default"]
    assert bmm and all(n["reason"].startswith("moved onto the CPU by the SDK") for n in bmm)
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    runs = {
        kind: host_runner(case.result.program_path, npu_executor=kind).run(inputs)
        for kind in ("tosa", "command-stream")
    }
    for a, b in zip(runs["tosa"], runs["command-stream"], strict=True):
        np.testing.assert_array_equal(a, b)
    assert_matches_quantized_model(case, runs["command-stream"])


def test_the_stock_program_is_flagged(export_case, capsys):
    case = export_case("shared_split", "int8", False, None)
    overlaps = case.result.report["npu_output_overlaps"]
    assert overlaps and all(o.startswith("delegate 0: operation ") for o in overlaps)
    assert case.result.report["vela_workarounds"] == []
    assert main(["inspect", str(case.result.program_path)]) == 3
    out, err = capsys.readouterr()
    assert "NPU outputs overlapping themselves" in out and "slice" in out
    assert "overlaps itself" in err and "boundary audit: ok" in out


def _always_overlapping(program):
    return ["delegate 0: operation 1 (NPU_OP_ELEMENTWISE, cmd_data byte 4): its OFM overlaps"]


def test_an_overlap_with_no_bmm_to_move_fails_the_export(quantized_model, tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "npu_output_overlaps", _always_overlapping)
    match = r"outputs overlap themselves \(.*\): delegate 0: operation 1 "
    with pytest.raises(ExportError, match=match):
        pipeline.lower(quantized_model(TINY_CONV, "int8"), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_an_overlap_the_workaround_leaves_fails_the_export(quantized_model, tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "npu_output_overlaps", _always_overlapping)
    with pytest.raises(ExportError, match=r"even with aten\.bmm\.default on the CPU"):
        pipeline.lower(quantized_model("shared_split", "int8"), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_graph_that_needed_the_workaround_is_lowered_once_next_time(
    quantized_model, tmp_path, monkeypatch
):
    """The process remembers a graph Vela miscompiled: its next lowering goes straight to the
    bmm on the CPU, the same program and workaround; a different graph is not affected."""
    quantized = quantized_model("shared_split", "int8")
    first = pipeline.lower(quantized, tmp_path / "a")  # the session may have lowered it already
    calls = []
    lower_once = pipeline._lower_once
    monkeypatch.setattr(pipeline, "_lower_once", lambda *a: calls.append(a[-1]) or lower_once(*a))
    again = pipeline.lower(quantized, tmp_path / "b")
    assert len(calls) == 1 and calls[0] == first.report["vela_workarounds"]
    assert again.program_path.read_bytes() == first.program_path.read_bytes()
    assert again.report["vela_workarounds"] == first.report["vela_workarounds"]
    calls.clear()
    pipeline.lower(quantized_model(TINY_CONV, "int8"), tmp_path / "c")
    assert calls == [[]]  # no workaround remembered for it
