"""A 1x1 convolution then a sigmoid: the sigmoid is a TOSA TABLE (int8: 256 entries, int16:
513) that Vela runs as a LUT activation. (A lone sigmoid exported no TOSA dump here.)"""

import torch
from torch import nn


def model() -> nn.Module:
    torch.manual_seed(9)
    return nn.Sequential(nn.Conv2d(8, 8, 1), nn.Sigmoid())


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(10)
    return (2 * torch.randn(1, 8, 5, 6),)
