"""A 5x5 convolution over 40 input channels (several IFM blocks, a kernel over 4 elements)
with stride 2: weight-stream order beyond one block."""

import torch
from torch import nn


def model() -> nn.Module:
    torch.manual_seed(3)
    return nn.Sequential(nn.Conv2d(40, 20, 5, stride=2, padding=2))


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(4)
    return (torch.randn(1, 40, 9, 9),)
