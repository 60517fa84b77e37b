"""An INT16 convolution whose output feeds two adds with different input scales: both of its
consumers take INT32, so ExecuTorch 1.5.1 gives its INT48 accumulator two INT32 rescales and
no INT16 one (Vela 5.1.0 refuses the convolution). The SDK's TOSA pass makes the INT16 output
from the convolution's quantization for both adds to read.
"""

import torch
from torch import nn


class ConvTwoAdds(nn.Module):
    def __init__(self, channels: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.conv(x)
        return y + x, y + z


def model() -> nn.Module:
    torch.manual_seed(0)
    return ConvTwoAdds()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randn(1, 8, 8, 8), 4 * torch.randn(1, 8, 8, 8))


def calibration_inputs() -> list[tuple[torch.Tensor, ...]]:
    generator = torch.Generator().manual_seed(2)
    return [
        (
            torch.randn(1, 8, 8, 8, generator=generator),
            4 * torch.randn(1, 8, 8, 8, generator=generator),
        )
        for _ in range(4)
    ]
