"""A delegate output that an operator inside the same delegate also reads: Vela drops it from
its record, so the partitioner cuts the partition there (two delegates), never a corrupt call."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sdk.ethosu.config import NpuConfig, QuantMode
from sdk.export.model_loader import load_model
from sdk.export.pipeline import lower, quantize
from sdk.program.pte import load_program, output_quant_scales
from sdk.targets.host import run_host

MODEL = Path(__file__).with_name("residual_block.py")
MAX_LSB = {"int8": 0, "int16": 4}  # tests/support/quantref.py: INT8 identical, INT16 a few LSB

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("quant", ["int8", "int16"])
def test_add_forced_to_the_cpu_splits_the_delegate(quant, tmp_path):
    loaded = load_model(str(MODEL))
    quantized = quantize(loaded, NpuConfig.U55_128, QuantMode(quant))
    result = lower(quantized, tmp_path, cpu_ops=["aten.add.Tensor"])
    report = result.report
    assert report["boundary_audit"]["ok"], report["boundary_audit"]["problems"]
    delegates = report["delegates"]
    assert len(delegates) == 2
    for d in delegates:  # each delegate has its convolution: nothing fell back to the CPU
        assert "aten.convolution.default" in {n["target"] for n in d["nodes"]}
    assert "aten::convolution.out" not in report["program"]["cpu_operators"]
    assert any("also used inside it" in f["reason"] for f in report["boundary_fixes"])
    x = loaded.example_inputs
    (host,) = run_host(result.program_path, [t.numpy() for t in x])
    reference = quantized.graph_module(*x)
    reference = reference[0] if isinstance(reference, (tuple, list)) else reference
    scale = output_quant_scales(load_program(result.program_path))[0]
    lsb = np.abs(host - reference.detach().numpy()) / scale
    assert lsb.max() <= MAX_LSB[quant] + 1e-6


def test_without_the_split_the_call_and_the_record_disagree(tmp_path):
    """The stock partitioner writes the corrupt program the audit catches (the regression's
    other side): 3 values at the call, 1 input + 1 output in the NPU's record."""
    from sdk.program.audit import audit_program

    loaded = load_model(str(MODEL))
    quantized = quantize(loaded, NpuConfig.U55_128, QuantMode.INT8)
    result = lower(quantized, tmp_path, cpu_ops=["aten.add.Tensor"], fix_boundaries=False)
    audit = audit_program(load_program(result.program_path))
    assert not audit.ok and "passes 3 values" in "; ".join(audit.problems)


def test_a_delegate_fed_by_another_is_saved_with_its_own_tosa(tmp_path):
    """The second of two chained delegates takes the first one's output as its input: its
    lowered module's placeholder carries the first partition's tag, and the first one's TOSA
    was saved for both (the host reference then refused a program ExecuTorch runs). Each
    delegate's saved graph must be its own: the call's values, dtype for dtype."""
    from sdk.program.tosa_file import read_tosa_io, tosa_call_mismatch

    model = Path(__file__).parent / "models" / "int_trunc_div.py"
    loaded = load_model(str(model))
    quantized = quantize(loaded, NpuConfig.U55_128, QuantMode.INT8)
    result = lower(quantized, tmp_path)
    program = load_program(result.program_path)
    calls = {c.delegate_index: list(map(int, c.args)) for _, c in program.delegate_calls()}
    assert len(calls) == 2 and len({p.read_bytes() for p in result.tosa_paths}) == 2
    tags = [d["partition"] for d in result.report["delegates"]]
    assert len(set(tags)) == 2, tags
    for index, path in enumerate(result.tosa_paths):
        assert tosa_call_mismatch(program, calls[index], read_tosa_io(path.read_bytes())) == ""
    x = [t.numpy() for t in loaded.example_inputs]
    (host,) = run_host(result.program_path, x)
    expected = quantized.graph_module(*loaded.example_inputs)
    expected = expected[0] if isinstance(expected, (tuple, list)) else expected
    np.testing.assert_array_equal(host, expected.detach().numpy())
