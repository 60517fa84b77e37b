"""A small conv net whose weights (about 40 KiB) outweigh its feature maps: its NPU time
depends on the speed of the weights' memory, so the memory configurations differ (the
tuner's tests)."""

import torch


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(8, 64, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(64, 128, 1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(128, 256, 1),
    ).eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 8, 8, 8, generator=torch.Generator().manual_seed(1)),)
