"""A model with nothing for the NPU: a lone squeeze. Its partition is left without compute,
so the program is CPU-only (no delegate, no Vela run)."""

import torch
from torch import nn


class Squeeze(nn.Module):
    def forward(self, x):
        return x.squeeze(0)


def model():
    return Squeeze()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(1, 4, 8),)
