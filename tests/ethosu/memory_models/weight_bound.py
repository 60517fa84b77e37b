"""A model whose time is its weights (a 1x1 conv, 256 -> 512 channels, on a 2x2 map): what
the NPU's AXI1 (the weights' port) costs shows in Vela's cycle estimate."""

import torch
from torch import nn


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(256, 512, 1), nn.ReLU())


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(1, 256, 2, 2),)
