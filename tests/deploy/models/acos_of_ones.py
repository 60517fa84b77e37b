"""acos of ones: the fp32 output is all zeros (no signal, SNR -inf for any error at all), the
quantized model's a step off it (from ExecuTorch's U55 tests)."""

import torch
from torch import nn


class Acos(nn.Module):
    def forward(self, x):
        return torch.acos(x)


def model():
    return Acos()


def example_inputs():
    return (torch.ones(1, 8, 4, 4),)
