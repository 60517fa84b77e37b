"""F.pad between two convolutions: aten.pad, which has no out variant in ExecuTorch."""

import torch
import torch.nn.functional as F
from torch import nn


class PadBetween(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(4, 4, 1)
        self.b = nn.Conv2d(4, 4, 3)

    def forward(self, x):
        return self.b(F.pad(self.a(x), (1, 1, 1, 1)))


def model():
    torch.manual_seed(0)
    return PadBetween()


def example_inputs():
    return (torch.randn(1, 4, 8, 8),)
