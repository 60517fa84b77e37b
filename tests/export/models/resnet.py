"""A small ResNet-style network (written here, random weights, 32x32 input): a Conv-BN-ReLU
stem, a 3x3/2 max pool, two basic blocks (3x3-BN-ReLU-3x3-BN + identity, then a strided one
with a 1x1/2 projection shortcut), a global average pool and a linear classifier.

The residual add here is `x + conv(x)` (and `proj(x) + conv(x)`), the form ResNet18 has:
unlike the inverted residual (`y + conv_b(y)`), it exported at INT16 before issue #10.
"""

from __future__ import annotations

import torch
from torch import nn

IMAGE = 32
CLASSES = 10


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()
        )
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)  # 16x16
        self.layer1 = BasicBlock(16, 16)
        self.layer2 = BasicBlock(16, 32, stride=2)  # 8x8
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.layer2(self.layer1(self.pool(self.stem(x))))
        return self.fc(torch.flatten(self.avgpool(y), 1))


def _inputs(generator: torch.Generator) -> tuple[torch.Tensor]:
    return (torch.randn(1, 3, IMAGE, IMAGE, generator=generator),)


def model() -> nn.Module:
    """Random weights; batch-norm statistics measured on random inputs (train mode, cumulative
    average), so the activations have a unit-like range as in a trained network."""
    torch.manual_seed(0)
    module = ResNet()
    for bn in (m for m in module.modules() if isinstance(m, nn.BatchNorm2d)):
        bn.momentum = None
    generator = torch.Generator().manual_seed(10)
    module.train()
    with torch.no_grad():
        for _ in range(4):
            module(*_inputs(generator))
    return module.eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return _inputs(torch.Generator().manual_seed(1))


def calibration_inputs() -> list[tuple[torch.Tensor, ...]]:
    generator = torch.Generator().manual_seed(2)
    return [_inputs(generator) for _ in range(4)]
