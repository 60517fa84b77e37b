"""x > y: a comparison whose bool result is the program's output, straight from the U85 (regor:
CMP_GT gives a mask of all ones, then AND 1 makes the bytes 0 or 1 that leave the NPU)."""

import torch
from torch import nn


class Greater(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x > y


def model() -> nn.Module:
    return Greater()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randn(1, 4, 4, 4), torch.randn(1, 4, 4, 4))
