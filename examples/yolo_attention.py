"""The YOLO11 attention pattern (C2PSA): a qkv conv split three ways, matmuls on the parts,
softmax, and the v part also through a depthwise conv (positional encoding).

    sdk export examples/yolo_attention.py -o out/yolo_attention --quant int16
"""

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, channels: int = 32, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.key_dim = channels // heads // 2
        self.head_dim = channels // heads
        self.scale = self.key_dim**-0.5
        self.qkv = nn.Conv2d(channels, channels + 2 * self.key_dim * heads, kernel_size=1)
        self.pe = nn.Conv2d(channels, channels, kernel_size=3, padding=1, groups=channels)
        self.proj = nn.Conv2d(channels, channels, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        n = h * w
        qkv = self.qkv(x).view(b, self.heads, 2 * self.key_dim + self.head_dim, n)
        q, k, v = qkv.split([self.key_dim, self.key_dim, self.head_dim], dim=2)
        attn = (q.transpose(-2, -1) @ k) * self.scale
        attn = attn.softmax(dim=-1)
        y = (v @ attn.transpose(-2, -1)).view(b, c, h, w) + self.pe(v.reshape(b, c, h, w))
        return self.proj(y)


def model() -> nn.Module:
    torch.manual_seed(0)
    return Attention()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randn(1, 32, 4, 4),)


def calibration_inputs() -> list[tuple[torch.Tensor, ...]]:
    generator = torch.Generator().manual_seed(2)
    return [(torch.randn(1, 32, 4, 4, generator=generator),) for _ in range(4)]
