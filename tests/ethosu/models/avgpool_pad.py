"""Padded average pools that exclude the padding (count_include_pad=False): TOSA AVG_POOL2D
with padding, which regor puts on the hardware's own divisor (sdk/ethosu/functional/arith.py)."""

import torch
from torch import nn


class M(nn.Module):
    def forward(self, x):
        same = nn.functional.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)
        strided = nn.functional.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False)
        return same, strided


def model() -> nn.Module:
    return M()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(11)
    return (torch.randn(1, 8, 7, 7),)
