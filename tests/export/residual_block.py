"""An inverted-residual pattern: an add whose two inputs both come from convolutions."""

import torch


class Residual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(8, 8, 1)

    def forward(self, x):
        y = self.a(x)
        return y + self.b(y)


def model():
    torch.manual_seed(0)
    return Residual().eval()


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(1, 8, 8, 8),)
