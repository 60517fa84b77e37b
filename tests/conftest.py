"""Shared fixtures: real exports of the regression models, made once per session."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

warnings.filterwarnings("ignore")
for _name in ("torchao", "torch.utils._pytree"):
    logging.getLogger(_name).setLevel(logging.ERROR)


@dataclass
class ExportCase:
    model: str
    quant: str
    fixed: bool
    quantized: object  # sdk.export.pipeline.QuantizedModel
    result: object  # sdk.export.pipeline.ExportResult


@pytest.fixture(scope="session")
def export_case(tmp_path_factory):
    """export_case(model, quant, fixed, cpu_ops) -> ExportCase, each made once per session."""
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import lower, quantize
    from sdk.export.targets import NpuTarget, QuantMode

    cache: dict[tuple, ExportCase] = {}
    quantized_cache: dict[tuple[str, str], object] = {}

    def get(model: str, quant: str, fixed: bool, cpu_ops: list[str] | None) -> ExportCase:
        key = (model, quant, fixed, tuple(cpu_ops or ()))
        if key not in cache:
            if (model, quant) not in quantized_cache:
                loaded = load_model(str(EXAMPLES / f"{model}.py"))
                quantized_cache[(model, quant)] = quantize(
                    loaded, NpuTarget.U55_128, QuantMode(quant)
                )
            quantized = quantized_cache[(model, quant)]
            outdir = tmp_path_factory.mktemp(f"{model}_{quant}_{'fixed' if fixed else 'stock'}")
            result = lower(quantized, outdir, cpu_ops=cpu_ops, fix_boundaries=fixed)
            cache[key] = ExportCase(model, quant, fixed, quantized, result)
        return cache[key]

    return get
