"""ExecuTorch's own runtime as the reference: export a module to a CPU-only program and
run it with the portable (and quantized) kernels."""

from __future__ import annotations

import executorch.kernels.quantized  # noqa: F401  (registers quantized_decomposed kernels)
import torch
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime


class Fn(torch.nn.Module):
    """A module whose forward is `fn` (ops under test, written inline by each test)."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def export(fn, inputs: tuple[torch.Tensor, ...]) -> bytes:
    """The .pte of a CPU-only program computing fn(*inputs)."""
    ep = torch.export.export(Fn(fn), inputs)
    return to_edge_transform_and_lower(ep).to_executorch().buffer


def run(pte: bytes, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    method = Runtime.get().load_program(pte).load_method("forward")
    return list(method.execute(list(inputs)))
