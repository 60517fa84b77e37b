"""The SDK's rewrites of the float graph before quantization (sdk/export/aten_rewrites.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sdk.export.aten_rewrites import decompose_addmm
from sdk.targets.host import run_host
from tests.support.quantref import assert_matches_quantized_model

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
    from sdk.ethosu.config import NpuConfig, QuantMode
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


OPS = str(Path(__file__).parent / "models" / "unlowerable_ops.py")
NEAREST, CONV3D = f"{OPS}:NearestScale225", f"{OPS}:Conv3dStrided"


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


@pytest.mark.parametrize(
    "settings,batch",
    [
        ({"kernel_size": (2, 2, 1), "stride": (2, 4, 2), "padding": 1}, 1),
        ({"kernel_size": 3, "padding": (1, 0, 2), "dilation": (2, 1, 1)}, 2),
        ({"kernel_size": (1, 3, 3), "groups": 2, "bias": False}, 1),
        ({"kernel_size": (3, 1, 1), "stride": 3}, 1),  # the last window reads the last depth
    ],
)
def test_conv3d_as_a_sum_of_conv2d_computes_conv3d(settings, batch):
    from sdk.export.aten_rewrites import conv3d_as_conv2d

    torch.manual_seed(0)
    module = torch.nn.Conv3d(2, 4, **settings)
    x = torch.randn(batch, 2, 9, 14, 10)
    graph = torch.export.export(module, (x,)).module()
    want = graph(x)
    assert conv3d_as_conv2d(graph) == 1
    targets = [n.target for n in graph.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.conv3d.default not in targets and torch.ops.aten.conv2d.default in targets
    got = graph(x)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_conv3d_exports_and_runs_as_conv2d(export_case):
    """Stock: the convolution stayed 5-d on the CPU, which the firmware and ExecuTorch's own
    kernel refuse ('input [1, 1, 8, 14, 10] must be 3-d or 4-d')."""
    case = export_case(CONV3D, "int8", True, None)
    report = case.result.report
    assert report["boundary_audit"]["ok"] and report["delegates"]
    inputs = [t.numpy() for t in case.quantized.loaded.example_inputs]
    assert_matches_quantized_model(case, run_host(case.result.program_path, inputs))
