"""A model that is one NPU operator: its partition is the whole graph, and ExecuTorch's Arm
backend names that partition's TOSA dump without a tag."""

import torch
from torch import nn


class Sig(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)


def model():
    return Sig()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(1, 8, 4, 4),)
