"""An elementwise add of two inputs at different scales (RESCALE, ADD, RESCALE in TOSA)."""

import torch
from torch import nn


class Add(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


def model() -> nn.Module:
    return Add()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(7)
    return (torch.randn(1, 8, 5, 6), 3 * torch.randn(1, 8, 5, 6))
