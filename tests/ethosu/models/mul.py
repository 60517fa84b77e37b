"""An elementwise multiply of two inputs (MUL then RESCALE in TOSA)."""

import torch
from torch import nn


class Mul(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y


def model() -> nn.Module:
    return Mul()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(8)
    return (torch.randn(1, 8, 5, 6), 2 * torch.randn(1, 8, 5, 6))
