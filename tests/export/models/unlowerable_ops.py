"""Operators from ExecuTorch's own Ethos-U55 tests whose lowering failed with a message a user
could not act on (tests/export/test_lowering_refusals.py). `sdk export FILE:Name`."""

import torch
from torch import nn

_GEN = torch.Generator().manual_seed(0)


class AcoshOfZero(nn.Module):
    """acosh is NaN below 1: calibrating on [0, 1) makes NaN inside the model."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.acosh(x)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (torch.rand(1, 8, generator=_GEN),)


class Erfinv(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.erfinv(x)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (torch.rand(1, 8, generator=_GEN) * 1.8 - 0.9,)


class LeftShift(nn.Module):
    def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return torch.bitwise_left_shift(x, s)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        x = torch.randint(0, 100, (1, 8), dtype=torch.int32, generator=_GEN)
        return (x, torch.randint(0, 3, (1, 8), dtype=torch.int32, generator=_GEN))


class RightShift(LeftShift):
    def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return torch.bitwise_right_shift(x, s)


class AmaxRank1(nn.Module):
    """A rank-1 reduction to a rank-0 tensor."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amax(x, dim=0)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (torch.rand(10, generator=_GEN),)


class AminRank1(AmaxRank1):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amin(x, dim=0)


class IndexByTensor(nn.Module):
    """x[i] with a tensor of indices (aten.index.Tensor): not delegated on the U55 and, today,
    no firmware kernel (the export says so)."""

    def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return x[i]

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (torch.rand(6, 4, generator=_GEN), torch.tensor([0, 5, 2], dtype=torch.int64))
