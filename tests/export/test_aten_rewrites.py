"""The SDK's rewrites of the float graph before quantization (sdk/export/aten_rewrites.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from quantref import assert_matches_quantized_model

from sdk.export.aten_rewrites import decompose_addmm
from sdk.targets.host import run_host

ADDMM = str(Path(__file__).parent / "models" / "addmm_bias.py")


def _load():
    from sdk.export.model_loader import load_model

    return load_model(ADDMM)


def test_decomposed_addmm_computes_what_addmm_does():
    loaded = _load()
    graph = torch.export.export(loaded.module, loaded.example_inputs).module()
    want = graph(*loaded.example_inputs)
    assert decompose_addmm(graph) == 2
    targets = [n.target for n in graph.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.addmm.default not in targets
    assert targets.count(torch.ops.aten.mm.default) == 2
    for got, ref in zip(graph(*loaded.example_inputs), want, strict=True):
        torch.testing.assert_close(got, ref, rtol=1e-6, atol=1e-6)


def test_addmm_with_a_parameter_bias_quantizes():
    """Without the rewrite ExecuTorch's quantizer raises in ReplaceScalarWithTensorByProfilePass
    ('Parameter' object has no attribute 'to_tensor')."""
    from sdk.export.npu import NpuConfig, QuantMode
    from sdk.export.pipeline import quantize

    quantized = quantize(_load(), NpuConfig.U55_128, QuantMode.INT8)
    names = [str(n.target) for n in quantized.exported.graph_module.graph.nodes]
    assert "aten.addmm.default" not in names and "aten.mm.default" in names


@pytest.mark.slow
def test_addmm_with_a_parameter_bias_exports_and_runs(export_case):
    case = export_case(ADDMM, "int8", True, None)
    assert case.result.report["boundary_audit"]["ok"]
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    assert_matches_quantized_model(case, run_host(case.result.program_path, inputs))


NEAREST = str(Path(__file__).parent / "models" / "unlowerable_ops.py") + ":NearestScale225"


def test_nearest_with_a_scale_pytorch_ignores_is_given_its_size():
    from sdk.export.aten_rewrites import nearest_by_size
    from sdk.export.model_loader import load_model

    loaded = load_model(NEAREST)
    graph = torch.export.export(loaded.module, loaded.example_inputs).module()
    want = graph(*loaded.example_inputs)
    assert nearest_by_size(graph) == 1
    [node] = [n for n in graph.graph.nodes if n.target == torch.ops.aten.upsample_nearest2d.vec]
    assert node.args[1:] == ([4, 4], None)
    assert torch.equal(graph(*loaded.example_inputs), want)


def test_nearest_with_a_scale_pytorch_uses_is_kept():
    from sdk.export.aten_rewrites import nearest_by_size

    def f(x):
        return torch.nn.functional.interpolate(x, scale_factor=1.5, mode="nearest")

    graph = torch.export.export(_Fn(f), (torch.rand(1, 1, 4, 4),)).module()
    assert nearest_by_size(graph) == 0


class _Fn(torch.nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.slow
def test_nearest_with_a_scale_pytorch_ignores_runs_as_pytorch_does(export_case):
    """Stock: the CPU kernel (ExecuTorch's formula) read other pixels than the model does
    (SNR 7.4 dB against the quantized model)."""
    case = export_case(NEAREST, "int8", True, None)
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    assert_matches_quantized_model(case, run_host(case.result.program_path, inputs))
