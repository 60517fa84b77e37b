"""Executor regression model: elementwise with the broadcast operand first (Vela swaps the
operands: IFM2 operand order A), a scalar minus a tensor, and a reversed axis (negative strides)."""

import torch
from torch import nn


class M(nn.Module):
    def forward(self, x, y):
        a = y[:, :, :1, :] - x
        b = 0.5 - x
        c = torch.flip(x, dims=[3])
        return a, b, c


def model():
    return M()


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(1, 4, 6, 5), torch.randn(1, 4, 6, 5))
