"""A partition that is the whole graph exports (its TOSA dump carries no tag) and runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sdk.ethosu.config import NpuConfig, QuantMode
from sdk.export.model_loader import load_model
from sdk.export.pipeline import lower, quantize
from sdk.program.pte import load_program, output_quant_scales
from sdk.targets.host import run_host

MODEL = Path(__file__).parent / "models" / "sigmoid_only.py"


@pytest.mark.parametrize("quant", ["int8", "int16"])
def test_a_one_operator_model_exports_and_runs(quant, tmp_path):
    loaded = load_model(str(MODEL))
    quantized = quantize(loaded, NpuConfig.U55_128, QuantMode(quant))
    result = lower(quantized, tmp_path)
    assert [d["tosa"] for d in result.report["delegates"]] == ["tosa/delegate_0.tosa"]
    (x,) = loaded.example_inputs
    (host,) = run_host(result.program_path, [x.numpy()])
    expected = quantized.graph_module(x)
    expected = expected[0] if isinstance(expected, (tuple, list)) else expected
    scale = output_quant_scales(load_program(result.program_path))[0]
    assert scale is not None
    assert np.abs(host - expected.detach().numpy()).max() <= scale + 1e-7  # at most 1 LSB
