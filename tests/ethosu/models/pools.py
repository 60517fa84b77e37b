"""Decoder regression model: a max pool and a padded, stride-1 average pool."""

import torch
from torch import nn


class M(nn.Module):
    def forward(self, x, z):
        a = torch.nn.functional.max_pool2d(x, 2)
        b = torch.nn.functional.avg_pool2d(z, 3, stride=1, padding=1)
        return a, b


def model():
    return M()


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(1, 8, 8, 8), torch.randn(1, 8, 6, 6))
