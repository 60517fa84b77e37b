"""Decoder regression model: strided padded conv + relu (fused clip), depthwise conv,
sigmoid (a LUT DMA'd into SHRAM, TABLE_0 activation)."""

import torch
from torch import nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1, stride=2)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)

    def forward(self, x):
        return torch.sigmoid(self.dw(torch.relu(self.conv(x))))


def model():
    torch.manual_seed(0)
    return M()


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(1, 4, 8, 8),)
