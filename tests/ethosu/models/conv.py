"""One 3x3 convolution (16 -> 24 channels, stride 1, padding 1): a weight stream of two
OFM blocks and 16-channel IFM blocks, a scale stream of 24 entries."""

import torch
from torch import nn


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(16, 24, 3, padding=1))


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randn(1, 16, 6, 7),)
