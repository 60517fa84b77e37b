"""A conv then a linear, each a named submodule: enough for the quantizer's per-module settings."""

import torch


class ConvLinear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x))
        return self.fc(y.permute(0, 2, 3, 1))


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return ConvLinear().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randn(1, 4, 8, 8),)
