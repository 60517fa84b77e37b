"""Integer division rounded toward zero (torch.div(x, y, rounding_mode="trunc") of int8 by int16
tensors): quantized, ExecuTorch lowers it to two NPU partitions, the second fed straight by the
first's output, with no CPU step between."""

import torch


class IntTruncDiv(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.div(x, y, rounding_mode="trunc")


def model() -> torch.nn.Module:
    return IntTruncDiv()


def example_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(4, 8, generator=g) * 100).to(torch.int8)
    y = (torch.rand(4, 8, generator=g) * 100 + 10).to(torch.int16)
    return x, y
