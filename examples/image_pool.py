"""An average pool over a 224x224 RGB image: inputs and outputs of real size (a 588 KiB float
input, a 147 KiB float output). On QEMU and the FVP they travel outside the UART (docs/link.md
"Large inputs and outputs"); `bench/bigio_bench.py` times that transfer.

    sdk deploy --board corstone300 examples/image_pool.py --target qemu
"""

import torch
from torch import nn


class ImagePool(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.avg_pool2d(x, kernel_size=2, stride=2)


def model() -> nn.Module:
    return ImagePool()


def example_inputs() -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(1)
    return (torch.rand(1, 3, 224, 224, generator=generator) * 2 - 1,)


def calibration_inputs() -> list[tuple[torch.Tensor, ...]]:
    generator = torch.Generator().manual_seed(2)
    return [(torch.rand(1, 3, 224, 224, generator=generator) * 2 - 1,) for _ in range(4)]
