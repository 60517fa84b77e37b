"""A 3x3 average pool, stride 1, no padding (AVG_POOL2D in TOSA)."""

import torch
from torch import nn


def model() -> nn.Module:
    return nn.Sequential(nn.AvgPool2d(3, stride=1))


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(10)
    return (torch.randn(1, 8, 7, 7),)
