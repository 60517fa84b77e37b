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


class AminRank4AllDims(nn.Module):
    """amin over every dim (no dim given) of a rank-4 tensor, to rank 0."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amin(x)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (torch.rand(1, 2, 3, 4, generator=_GEN),)


class TopK(nn.Module):
    """topk: not delegated on the U55 and, today, no firmware kernel (the export says so)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.topk(x, 2).values

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (torch.rand(6, 4, generator=_GEN),)


class WhereAboveZerosLike(nn.Module):
    """`zeros_like(x)` reads x only for its shape: stock lowering hands x to the NPU delegate
    that computes the zeros, which does not take it (the call passes more than it takes)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.where(x > torch.zeros_like(x), x, y)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (torch.randn(2, 2, generator=_GEN), torch.randn(2, 2, generator=_GEN))


class GatherByInput(nn.Module):
    """An int64 index taken as a graph input: ExecuTorch's Arm passes narrow it to int32 for
    the NPU, and gather (on the CPU: the U55 has none) refused the narrowed index."""

    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 1, index)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        x = torch.randint(-50, 50, (4, 3), dtype=torch.int32, generator=_GEN)
        return (x, torch.randint(0, 3, (4, 2), generator=_GEN))


class NearestScale225(nn.Module):
    """2.25x nearest on a 2x2 image makes 4x4: PyTorch reads pixels 0, 0, 1, 1 (a 2x resize
    whatever the scale), ExecuTorch's portable kernel 0, 0, 0, 1 (index / 2.25)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.interpolate(x, scale_factor=2.25, mode="nearest")

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (torch.rand(1, 4, 2, 2, generator=_GEN),)


class Conv3dStrided(nn.Module):
    """nn.Conv3d (ExecuTorch's 'large_stride' case): no U55 CONV3D, no 5-d CPU convolution."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv3d(2, 3, (2, 2, 1), stride=(2, 4, 2), padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (torch.randn(1, 2, 8, 14, 10, generator=_GEN),)


class CondOnSum(nn.Module):
    """torch.cond on a computed predicate (ExecuTorch's 'one_arg_one_output' case): the sum on
    the NPU, the branches on the CPU, a JumpFalseCall between them."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def true_branch(arg: torch.Tensor) -> torch.Tensor:
            return arg * 2.0

        def false_branch(arg: torch.Tensor) -> torch.Tensor:
            return arg - 1.0

        return torch.cond(x.sum() > 0, true_branch, false_branch, [x])

    X = torch.rand(1, 8, generator=_GEN)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (CondOnSum.X,)

    @staticmethod
    def calibration_inputs() -> list[tuple[torch.Tensor, ...]]:
        return [(CondOnSum.X,), (-CondOnSum.X,)]  # both branches


class NestedCond(nn.Module):
    """A torch.cond inside a torch.cond branch (ExecuTorch's 'nested_one_arg_one_output')."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def inner(arg: torch.Tensor) -> torch.Tensor:
            return torch.cond(arg.sum() > 1, lambda a: a * 2.0, lambda a: a + 1.0, [arg])

        return torch.cond(x.sum() > 0, inner, lambda a: a - 1.0, [x])

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (torch.rand(1, 8, generator=_GEN),)


class TwoCondsOnSums(nn.Module):
    """Two torch.cond on `t.sum() > 0` of one shape: two NPU delegates with one command stream,
    their weights at different addresses (ExecuTorch's 'multiple_one_arg_one_output')."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.cond(x.sum() > 0, lambda a: a * 2.0, lambda a: a - 1.0, [x])
        return torch.cond(y.sum() > 0, lambda a: a + 0.5, lambda a: a * 3.0, [y])

    X = torch.rand(1, 8, generator=_GEN)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (TwoCondsOnSums.X,)

    @staticmethod
    def calibration_inputs() -> list[tuple[torch.Tensor, ...]]:
        return [(TwoCondsOnSums.X,), (-TwoCondsOnSums.X,), (-3 * TwoCondsOnSums.X,)]
