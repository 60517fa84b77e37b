"""Decoder regression model: max with an H-broadcast operand, scalar sub, dilated conv, min,
nearest 2x upscale, and a spatial sum (REDUCE_SUM pools)."""

import torch
from torch import nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.dil = nn.Conv2d(4, 4, 3, padding=2, dilation=2)

    def forward(self, x, y):
        a = torch.maximum(x, y[:, :, :1, :]) - 0.25
        b = torch.minimum(self.dil(x), x)
        c = nn.functional.interpolate(b, scale_factor=2, mode="nearest")
        return a, c, b.sum(dim=(2, 3), keepdim=True)


def model():
    torch.manual_seed(0)
    return M()


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(1, 4, 6, 6), torch.randn(1, 4, 6, 6))
