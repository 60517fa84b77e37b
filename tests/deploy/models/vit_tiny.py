"""A tiny DeiT-style vision transformer written as a newcomer would (issue 42): 32x32 RGB input,
4x4 patches, dim 64, two blocks of 4-head attention with LayerNorm and a GELU MLP, a class
token. Its two blocks compile to byte-identical NPU payloads when their weights quantize alike,
and its attention reshapes q, k, v out of one linear (reshape -> permute(2, 0, 3, 1, 4))."""

import torch
from torch import nn

DIM = 64
HEADS = 4
DEPTH = 2
PATCH = 4
IMAGE = 32
CLASSES = 10


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(x)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyViT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        patches = (IMAGE // PATCH) ** 2
        self.patch_embed = nn.Conv2d(3, DIM, kernel_size=PATCH, stride=PATCH)
        # As the tutorials write them (vit-pytorch): randn, not DeiT's trained-from-zero init. A
        # class token of zeros and a position embedding of 0.02 leave token 0 with almost no
        # variance, whose INT16 LayerNorm the quantized PyTorch model and ExecuTorch's TOSA
        # compute hundreds of LSB apart (docs/ethosu-functional.md, "ViT at INT16").
        self.cls_token = nn.Parameter(torch.randn(1, 1, DIM))
        self.pos_embed = nn.Parameter(torch.randn(1, patches + 1, DIM))
        self.blocks = nn.Sequential(*[Block(DIM, HEADS) for _ in range(DEPTH)])
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1) + self.pos_embed
        x = self.blocks(x)
        return self.head(self.norm(x)[:, 0])


def model() -> nn.Module:
    torch.manual_seed(0)
    return TinyViT().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(1)
    return (torch.randn(1, 3, IMAGE, IMAGE),)
