"""torch.addmm with the module's own bias (a parameter): ExecuTorch 1.5.1's quantizer pipeline
raises on it (sdk/export/aten_rewrites.py); the SDK decomposes it first. Two forms: beta and
alpha at 1 (nn.Linear written by hand) and other than 1."""

import torch
from torch import nn


class AddmmBias(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.w = nn.Parameter(torch.randn(16, 8) * 0.25)
        self.b = nn.Parameter(torch.randn(8))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return (
            torch.addmm(self.b, x, self.w),
            torch.addmm(self.b, x, self.w, beta=0.5, alpha=2.0),
        )


def model() -> nn.Module:
    return AddmmBias()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(4, 16, generator=torch.Generator().manual_seed(1)),)
