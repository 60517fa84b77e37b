"""A small MobileNetV2-style stage: a projecting block (no residual) followed by an inverted
residual block (expand 1x1 + ReLU6, depthwise 3x3 + ReLU6, project 1x1, residual add).

The first block's project convolution feeds both the second block's expand convolution and
its residual add: the INT16 shape Vela 5.1.0 refused before the SDK's TOSA pass (issue #10).
"""

import torch
from torch import nn


def _inverted_residual(inp: int, out: int, expand: int) -> nn.Sequential:
    hidden = inp * expand
    return nn.Sequential(
        nn.Conv2d(inp, hidden, 1, bias=False),
        nn.BatchNorm2d(hidden),
        nn.ReLU6(),
        nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False),
        nn.BatchNorm2d(hidden),
        nn.ReLU6(),
        nn.Conv2d(hidden, out, 1, bias=False),
        nn.BatchNorm2d(out),
    )


class MobileNetV2Stage(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU6())
        self.block1 = _inverted_residual(8, 16, expand=2)  # 8 -> 16 channels: no residual
        self.block2 = _inverted_residual(16, 16, expand=4)  # residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block1(self.stem(x))
        return y + self.block2(y)


def model() -> nn.Module:
    torch.manual_seed(0)
    module = MobileNetV2Stage()
    # Non-trivial batch-norm statistics, so the folded weights are not all alike.
    generator = torch.Generator().manual_seed(3)
    for bn in (m for m in module.modules() if isinstance(m, nn.BatchNorm2d)):
        n = bn.num_features
        bn.running_mean.copy_(torch.randn(n, generator=generator) * 0.1)
        bn.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
        bn.weight.data.copy_(torch.rand(n, generator=generator) + 0.5)
        bn.bias.data.copy_(torch.randn(n, generator=generator) * 0.1)
    return module.eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randn(1, 3, 8, 8),)


def calibration_inputs() -> list[tuple[torch.Tensor, ...]]:
    generator = torch.Generator().manual_seed(2)
    return [(torch.randn(1, 3, 8, 8, generator=generator),) for _ in range(4)]
