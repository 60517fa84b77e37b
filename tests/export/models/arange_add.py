"""A delegate with no inputs: the NPU computes `arange` from constants alone (Vela writes an
inputs block with a count of 0), a second delegate adds it to the input."""

import torch
from torch import nn


class ArangeAdd(nn.Module):
    def forward(self, x):
        return x + torch.arange(8).reshape(1, 8).float()


def model():
    return ArangeAdd()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(4, 8),)
