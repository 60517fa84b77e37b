"""A reshape between two NPU convolutions, forced to the CPU: ExecuTorch emits no instruction
for the static view (the memory plan puts it on its source's bytes), so the value the next
step reads is written by nobody."""

import torch
from torch import nn


class ViewBetween(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(4, 8, 1)
        self.b = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = self.a(x)
        y = y.reshape(1, 8, 2, 32)
        return self.b(y)


def model():
    torch.manual_seed(0)
    return ViewBetween()


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(1, 4, 8, 8),)
