"""The smallest INT16 inverted-residual shape (issue #10): an add whose two inputs both come
straight from convolutions, one of which also feeds the other.

    y = conv_a(x); return y + conv_b(y)

conv_a's output has two consumers (conv_b and the add). Without the SDK's TOSA pass, INT16
(a16w8) lowering gives conv_a's INT48 accumulator two rescales and Vela 5.1.0 refuses the
convolution ("Non-passthrough operation (Conv2D) could not run on NPU").
"""

import torch
from torch import nn


class InvertedResidual(nn.Module):
    def __init__(self, channels: int = 8) -> None:
        super().__init__()
        self.a = nn.Conv2d(channels, channels, 3, padding=1)
        self.b = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        return y + self.b(y)


def model() -> nn.Module:
    torch.manual_seed(0)
    return InvertedResidual()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randn(1, 8, 8, 8),)


def calibration_inputs() -> list[tuple[torch.Tensor, ...]]:
    generator = torch.Generator().manual_seed(2)
    return [(torch.randn(1, 8, 8, 8, generator=generator),) for _ in range(4)]
