"""Executor regression model: abs, leaky relu, a transpose (1x1 pool with swapped strides),
a transposed convolution (IFM upscale ZEROS) and a strided max pool with padding."""

import torch
from torch import nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 4, 2, stride=2)

    def forward(self, x):
        a = torch.abs(x) + nn.functional.leaky_relu(x, 0.125)
        b = x.permute(0, 1, 3, 2).contiguous()
        c = self.up(x)
        d = nn.functional.max_pool2d(x, 3, stride=2, padding=1)
        return a, b, c, d


def model():
    torch.manual_seed(0)
    return M()


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(1, 4, 6, 5),)
