"""A batched matmul of two inputs, the second transposed (aten.bmm on the NPU: TOSA MATMUL)."""

import torch
from torch import nn


class MatMul(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b.transpose(1, 2))


def model() -> nn.Module:
    return MatMul()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(11)
    return (torch.randn(2, 5, 12), torch.randn(2, 7, 12))
