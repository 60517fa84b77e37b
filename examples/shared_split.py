"""A YOLO-style shared split: the shape that trips ExecuTorch 1.5.1's INT-boundary bug.

conv -> flatten -> split into (a, b); bmm(a, aᵀ) runs on the CPU; its result, reduced, is
added to b, and b is used only after the bmm. Export it with:
    sdk export examples/shared_split.py -o out/shared_split --quant int16
"""

import torch
from torch import nn


class SharedSplit(nn.Module):
    def __init__(self, channels: int = 16) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, channels, kernel_size=1)
        self.half = channels // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x).flatten(2)  # (1, C, H*W)
        a, b = y.split([self.half, self.half], dim=1)
        s = torch.bmm(a, a.transpose(1, 2))  # kept on the CPU
        r = s.sum(dim=-1, keepdim=True)
        return b + r


def model() -> nn.Module:
    torch.manual_seed(0)
    return SharedSplit()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randn(1, 3, 4, 4),)


def calibration_inputs() -> list[tuple[torch.Tensor, ...]]:
    generator = torch.Generator().manual_seed(2)
    return [(torch.randn(1, 3, 4, 4, generator=generator),) for _ in range(4)]
