"""Tiny INT8 models for `--cpu-op` (issue #10, acceptance 2): each listed operator reads NPU
work (a convolution) and, where its result is a tensor the NPU takes, feeds another one, so
that forced to the CPU it runs as a CPU kernel between delegates. Each operator has an output
of its own (through its own convolution), so a difference names the operator. One model per
firmware build (tests/deploy/test_forced_cpu_ops.py); name one with FILE.py:Name. No
calibration_inputs(): each model is calibrated on its example inputs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

SHAPE = (1, 4, 8, 8)


def _conv(cin: int = 4, cout: int = 4) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 1)


def _input(seed: int) -> torch.Tensor:
    return torch.randn(SHAPE, generator=torch.Generator().manual_seed(seed))


class Elementwise(nn.Module):
    """clamp, hardtanh, exp, sub, relu, where, select, index_select, argmax.

    relu reads the sub, not a convolution: the quantizer fuses conv + relu into one quantized
    convolution, and forcing that relu to the CPU takes the convolution (in float) with it.
    index_select's index is an int32 buffer: an int64 one gets an int32 cast, which with
    index_select off the NPU is a delegate of its own."""

    OUTPUTS = ("clamp", "hardtanh", "exp", "sub+relu", "where", "select", "index_select",
               "argmax")  # fmt: skip

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b = _conv(), _conv()
        self.heads = nn.ModuleList([_conv() for _ in range(5)])
        self.select_head = _conv(1, 4)
        self.index_head = _conv(3, 4)
        mask = torch.rand(SHAPE, generator=torch.Generator().manual_seed(5)) > 0.5
        self.register_buffer("mask", mask)
        self.register_buffer("index", torch.tensor([3, 0, 2], dtype=torch.int32))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y, w = self.a(x), self.b(x)
        branches = [
            torch.clamp(y, -0.5, 0.7),
            F.hardtanh(y, -0.8, 0.6),
            torch.exp(y),
            torch.relu(y - w),
            torch.where(self.mask, y, w),
        ]
        outputs = [head(t) for head, t in zip(self.heads, branches)]
        outputs.append(self.select_head(y[:, 1].unsqueeze(1)))
        outputs.append(self.index_head(torch.index_select(y, 1, self.index)))
        outputs.append(torch.argmax(w, dim=1))
        return tuple(outputs)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (_input(1),)


class Activations(nn.Module):
    """hardswish and silu: the Arm partitioner keeps them whole (NPU table ops), so forced to
    the CPU they are aten::hardswish.out / aten::silu.out, for which ExecuTorch's runtime has
    no kernel (export decomposes them)."""

    OUTPUTS = ("hardswish", "silu")

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.a = _conv()
        self.heads = nn.ModuleList([_conv() for _ in range(2)])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.a(x) * 2.0
        return self.heads[0](F.hardswish(y)), self.heads[1](F.silu(y))

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (_input(1),)


class Spatial(nn.Module):
    """max_pool2d (max_pool2d_with_indices in the graph), avg_pool2d, constant_pad_nd and
    upsample_nearest2d. constant_pad_nd is called as itself: F.pad stays aten.pad in the
    Arm flow, and forced to the CPU that has no out variant (the export fails)."""

    OUTPUTS = ("max_pool2d_with_indices", "avg_pool2d", "constant_pad_nd",
               "upsample_nearest2d")  # fmt: skip

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.a = _conv()
        self.heads = nn.ModuleList([_conv() for _ in range(4)])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.a(x)
        branches = [
            F.max_pool2d(y, 2),
            F.avg_pool2d(y, 2),
            torch.constant_pad_nd(y, (1, 2, 0, 1), -0.5),
            F.interpolate(y, scale_factor=2, mode="nearest"),
        ]
        return tuple(head(t) for head, t in zip(self.heads, branches))

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (_input(1),)


class Matmul(nn.Module):
    """convolution, linear and mm on the CPU (in float: the weights' dequantize runs there
    too); the NPU work around them is elementwise (forcing convolution moves every one). The
    Arm partitioner keeps the linear whole: forced, it is aten::linear.out.
    The matrices are an input of their own: a reshape of the NPU's output that is forced
    to the CPU with them becomes a view ExecuTorch plans as an alias, with no instruction."""

    OUTPUTS = ("convolution", "linear", "mm")

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.fc = nn.Linear(16, 8)
        self.register_buffer("scale", torch.rand(1, 4, 1, 1) + 0.5)
        self.register_buffer("column_scale", torch.rand(16) + 0.5)
        self.register_buffer("m", torch.randn(16, 6))

    def forward(self, x: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y, u = x * self.scale, v * self.column_scale
        outputs = [self.conv(y), self.fc(u), torch.mm(u, self.m)]
        return tuple(o * 0.5 + 0.25 for o in outputs)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return (_input(1), torch.randn(12, 16, generator=torch.Generator().manual_seed(2)))


class Rewritten(nn.Module):
    """div, mean.dim, log_softmax and addmm: the Arm quantizer rewrites them before annotating
    (reciprocal + mul; sum + mul; amax, sub, exp, sum, log, sub; mm + add; the SDK decomposes
    addmm before the quantizer: sdk/export/aten_rewrites.py)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.a = _conv()
        self.register_buffer("m", torch.randn(16, 6))

    def forward(self, x: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.a(x)
        return (
            y / (y.abs() + 1.0),
            y - y.mean(dim=(2, 3), keepdim=True),
            F.log_softmax(y, dim=1),
            torch.addmm(v[:, :6], v, self.m),
        )

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        return Matmul.example_inputs()
