"""Test programs for the firmware tests, and ExecuTorch's runtime as the oracle."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def export_cpu(module, example_inputs, path: Path) -> Path:
    import torch
    from executorch.exir import to_edge_transform_and_lower

    exported = torch.export.export(module, example_inputs)
    path.write_bytes(to_edge_transform_and_lower(exported).to_executorch().buffer)
    return path


def export_ethos_u(module, example_inputs, path: Path) -> Path:
    """Fully delegated to the Ethos-U55-128, with int8 inputs/outputs (no CPU operator)."""
    import torch
    from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.exir import to_edge_transform_and_lower
    from executorch.exir.passes.quantize_io_pass import QuantizeInputs, QuantizeOutputs
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    spec = EthosUCompileSpec("ethos-u55-128")
    quantizer = EthosUQuantizer(spec)
    quantizer.set_global(get_symmetric_quantization_config())
    graph = torch.export.export(module, example_inputs).module(check_guards=False)
    prepared = prepare_pt2e(graph, quantizer)
    prepared(*example_inputs)
    converted = convert_pt2e(prepared)
    edge = to_edge_transform_and_lower(
        torch.export.export(converted, example_inputs), partitioner=[EthosUPartitioner(spec)]
    )
    edge = edge.transform([QuantizeInputs(edge, [0]), QuantizeOutputs(edge, [0])])
    path.write_bytes(edge.to_executorch().buffer)
    return path


def make_modules():
    import executorch.kernels.quantized  # noqa: F401  (registers the quantized ops)
    import torch
    from torch import nn

    class Identity(nn.Module):
        def forward(self, x):
            return x

    class Add(nn.Module):
        def forward(self, x, y):
            return x + y

    class QuantMix(nn.Module):
        """Elementwise and copy operators only: results must match bit for bit."""

        def forward(self, x, y):
            q = torch.ops.quantized_decomposed.quantize_per_tensor(
                x, 0.01, 3, -32768, 32767, torch.int16
            )
            d = torch.ops.quantized_decomposed.dequantize_per_tensor(
                q, 0.01, 3, -32768, 32767, torch.int16
            )
            z = d * y + x
            return torch.cat([z.permute(0, 2, 1), y.permute(0, 2, 1)], dim=1), q

    class BmmSum(nn.Module):
        def forward(self, x, y):
            return torch.bmm(x, y) + 1.5, x.sum(dim=[1])

    class Cumsum(nn.Module):  # an operator no kernel implements
        def forward(self, x):
            return torch.cumsum(x, dim=0)

    class Relu(nn.Module):
        def forward(self, x):
            return torch.relu(x + x)

    return {
        "id": (Identity(), (torch.randn(2, 3),)),
        "add": (Add(), (torch.randn(2, 3), torch.randn(2, 3))),
        "quant_mix": (QuantMix(), (torch.randn(2, 8, 16), torch.randn(2, 8, 16))),
        "bmm": (BmmSum(), (torch.randn(2, 3, 4), torch.randn(2, 4, 5))),
        "cumsum": (Cumsum(), (torch.randn(8),)),
        "delegate": (Relu(), (torch.randn(1, 16),)),
    }


def random_inputs(pte: Path, seed: int = 0) -> list[np.ndarray]:
    from sdk.program.pte import load_program, numpy_dtype

    rng = np.random.default_rng(seed)
    arrays = []
    for info in load_program(pte).inputs():
        dtype = numpy_dtype(info.scalar_type)
        if dtype.kind == "f":
            arrays.append(rng.standard_normal(info.shape).astype(dtype))
        else:
            bounds = np.iinfo(dtype)
            arrays.append(rng.integers(bounds.min, bounds.max, info.shape, dtype=dtype))
    return arrays


def oracle(pte: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """ExecuTorch's own runtime on the same program and inputs."""
    import executorch.kernels.quantized  # noqa: F401
    import torch
    from executorch.runtime import Runtime

    # The Program holds the bytes its method reads (constants) while it runs: a temporary
    # Program left them to be freed, and results were garbage under heap churn.
    program = Runtime.get().load_program(pte.read_bytes())
    method = program.load_method("forward")
    return [t.numpy() for t in method.execute([torch.from_numpy(x) for x in inputs])]
