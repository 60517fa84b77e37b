"""Flips along height and width: Vela writes the reversed axes as negative OFM strides, in the
40-bit two's complement of its address registers (high byte 0xFF)."""

import torch
from torch import nn


class M(nn.Module):
    def forward(self, x):
        return torch.flip(x, [2]) + 0.5, torch.flip(x, [3]) * 2


def model() -> nn.Module:
    return M()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(12)
    return (torch.randn(1, 4, 5, 6),)
