"""One 3x3 depthwise convolution over 24 channels."""

import torch
from torch import nn


def model() -> nn.Module:
    torch.manual_seed(5)
    return nn.Sequential(nn.Conv2d(24, 24, 3, padding=1, groups=24))


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(6)
    return (torch.randn(1, 24, 6, 6),)
