"""A small YOLO11-style detector (written here, random weights, 64x64 input): the patterns of
YOLO11n that matter to an export, at a size CI runs in seconds.

- backbone: Conv-BN-SiLU downsampling convolutions and C3k2-like blocks (a 1x1 conv, split in
  two, bottlenecks on the second half, everything concatenated, a 1x1 conv);
- SPPF (three chained 5x5 max pools, concatenated);
- C2PSA: position-sensitive attention on half the channels (qkv 1x1 conv, split into q/k/v,
  q^T k, softmax, v @ attn^T, plus a depthwise "pe" conv of v; then a 1x1 feed-forward);
- a top-down neck (nearest upsample + concat + conv): two levels, strides 8 and 16 (YOLO11n
  has three and more blocks: ExecuTorch's lowering takes seconds per convolution, so the
  patterns are here once each);
- the detect head: per level a box branch (4 x REG_MAX distribution logits) and a class
  branch, flattened over the anchors; DFL (softmax over the REG_MAX bins, then a fixed 1x1
  conv with weights 0..REG_MAX-1: the expected distance), distances -> (cx, cy, w, h) in
  pixels around each anchor, and the class scores after a sigmoid.

`Yolo11Detector` returns one (1, 4 + CLASSES, anchors) tensor as YOLO11's head does: box
coordinates in pixels (random weights: -12..~500, YOLO11n's span 0..~545) and scores (0..1)
under one quantization scale, so at INT8 the scores collapse to a few levels. The fixes:
`separate_outputs` (MODEL `yolo11_detector.py:separate_outputs`: boxes and scores as two
outputs, each with its own scale) and `normalised_boxes` (the coordinates divided by the
image size before the concat, so the parts' ranges are close).
"""

from __future__ import annotations

import torch
from torch import nn

IMAGE = 64  # pixels (square input)
CLASSES = 8
REG_MAX = 16
STRIDES = (8, 16)


class ConvBnSiLU(nn.Module):
    def __init__(self, cin: int, cout: int, k: int = 1, s: int = 1, groups: int = 1, act=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.SiLU() if act else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c: int, shortcut: bool = True) -> None:
        super().__init__()
        self.a = ConvBnSiLU(c, c, 3)
        self.b = ConvBnSiLU(c, c, 3)
        self.shortcut = shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.b(self.a(x))
        return x + y if self.shortcut else y


class C3k2(nn.Module):
    """1x1 conv to 2h channels, split, n bottlenecks chained on the second half, all parts
    concatenated, 1x1 conv out."""

    def __init__(self, cin: int, cout: int, n: int = 1, shortcut: bool = True) -> None:
        super().__init__()
        self.hidden = cout // 2
        self.into = ConvBnSiLU(cin, 2 * self.hidden)
        self.blocks = nn.ModuleList(Bottleneck(self.hidden, shortcut) for _ in range(n))
        self.out = ConvBnSiLU((2 + n) * self.hidden, cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = list(self.into(x).split(self.hidden, dim=1))
        for block in self.blocks:
            parts.append(block(parts[-1]))
        return self.out(torch.cat(parts, dim=1))


class SPPF(nn.Module):
    def __init__(self, cin: int, cout: int, k: int = 5) -> None:
        super().__init__()
        hidden = cin // 2
        self.into = ConvBnSiLU(cin, hidden)
        self.pool = nn.MaxPool2d(k, stride=1, padding=k // 2)
        self.out = ConvBnSiLU(4 * hidden, cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = [self.into(x)]
        for _ in range(3):
            parts.append(self.pool(parts[-1]))
        return self.out(torch.cat(parts, dim=1))


class PositionSensitiveAttention(nn.Module):
    def __init__(self, c: int, heads: int = 1) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = c // heads
        self.key_dim = self.head_dim // 2
        self.scale = self.key_dim**-0.5
        self.qkv = ConvBnSiLU(c, c + 2 * self.key_dim * heads, act=False)
        self.pe = ConvBnSiLU(c, c, 3, groups=c, act=False)
        self.proj = ConvBnSiLU(c, c, act=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        n = h * w
        qkv = self.qkv(x).view(b, self.heads, 2 * self.key_dim + self.head_dim, n)
        q, k, v = qkv.split([self.key_dim, self.key_dim, self.head_dim], dim=2)
        attn = ((q.transpose(-2, -1) @ k) * self.scale).softmax(dim=-1)
        y = (v @ attn.transpose(-2, -1)).view(b, c, h, w) + self.pe(v.reshape(b, c, h, w))
        return self.proj(y)


class C2PSA(nn.Module):
    """1x1 conv, split in two halves; attention + feed-forward (each with a residual) on the
    second; concat; 1x1 conv."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.hidden = c // 2
        self.into = ConvBnSiLU(c, 2 * self.hidden)
        self.attn = PositionSensitiveAttention(self.hidden)
        self.ffn = nn.Sequential(
            ConvBnSiLU(self.hidden, 2 * self.hidden),
            ConvBnSiLU(2 * self.hidden, self.hidden, act=False),
        )
        self.out = ConvBnSiLU(2 * self.hidden, c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.into(x).split(self.hidden, dim=1)
        b = b + self.attn(b)
        b = b + self.ffn(b)
        return self.out(torch.cat((a, b), dim=1))


class DFL(nn.Module):
    """Distribution focal loss decoding: the expected value of a softmax over REG_MAX bins,
    as a fixed 1x1 convolution (weights 0..REG_MAX-1)."""

    def __init__(self, bins: int = REG_MAX) -> None:
        super().__init__()
        self.bins = bins
        self.conv = nn.Conv2d(bins, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(bins, dtype=torch.float32).view(1, bins, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, a = x.shape  # (b, 4 * bins, anchors)
        x = x.view(b, 4, self.bins, a).transpose(2, 1).softmax(1)  # (b, bins, 4, anchors)
        return self.conv(x).view(b, 4, a)


def _anchors() -> tuple[torch.Tensor, torch.Tensor]:
    """Grid-cell centres (in cells) and the stride of each anchor, level after level."""
    points, strides = [], []
    for stride in STRIDES:
        n = IMAGE // stride
        ys, xs = torch.meshgrid(torch.arange(n) + 0.5, torch.arange(n) + 0.5, indexing="ij")
        points.append(torch.stack((xs.flatten(), ys.flatten())))
        strides.append(torch.full((1, n * n), float(stride)))
    return torch.cat(points, dim=1).unsqueeze(0), torch.cat(strides, dim=1).unsqueeze(0)


class Detect(nn.Module):
    def __init__(self, channels: tuple[int, ...]) -> None:
        super().__init__()
        box_c = 16
        self.box = nn.ModuleList(
            nn.Sequential(ConvBnSiLU(c, box_c, 3), nn.Conv2d(box_c, 4 * REG_MAX, 1))
            for c in channels
        )
        self.cls = nn.ModuleList(  # YOLO11's depthwise-then-pointwise class branch, shortened
            nn.Sequential(ConvBnSiLU(c, c, 3, groups=c), nn.Conv2d(c, CLASSES, 1)) for c in channels
        )
        self.dfl = DFL()
        anchors, strides = _anchors()
        self.register_buffer("anchors", anchors)  # (1, 2, A)
        self.register_buffer("strides", strides)  # (1, 1, A)

    def forward(self, features: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(boxes (1, 4, A) as cx, cy, w, h in pixels; scores (1, CLASSES, A) in 0..1)."""
        dist = torch.cat([m(f).flatten(2) for m, f in zip(self.box, features)], dim=2)
        logits = torch.cat([m(f).flatten(2) for m, f in zip(self.cls, features)], dim=2)
        lt, rb = self.dfl(dist).chunk(2, dim=1)
        top_left = self.anchors - lt
        bottom_right = self.anchors + rb
        centre = (top_left + bottom_right) / 2
        size = bottom_right - top_left
        boxes = torch.cat((centre, size), dim=1) * self.strides
        return boxes, logits.sigmoid()


class Yolo11Detector(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = ConvBnSiLU(3, 8, 3, 2)  # 32x32
        self.down2 = ConvBnSiLU(8, 16, 3, 2)  # 16x16
        self.c2 = C3k2(16, 16)
        self.down3 = ConvBnSiLU(16, 32, 3, 2)  # 8x8: P3
        self.down4 = ConvBnSiLU(32, 32, 3, 2)  # 4x4: P4
        self.sppf = SPPF(32, 32)
        self.psa = C2PSA(32)  # attention over the 16 positions of P4
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.n3 = ConvBnSiLU(32 + 32, 32)
        self.detect = Detect((32, 32))

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        p3 = self.down3(self.c2(self.down2(self.stem(x))))
        p4 = self.psa(self.sppf(self.down4(p3)))
        n3 = self.n3(torch.cat((self.up(p4), p3), dim=1))
        return self.detect([n3, p4])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat(self.heads(x), dim=1)  # (1, 4 + CLASSES, A): YOLO11's one output


class SeparateOutputs(Yolo11Detector):
    """The fix: boxes and scores as two outputs (each gets its own quantization scale)."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.heads(x)


class NormalisedBoxes(Yolo11Detector):
    """The other fix: box coordinates divided by the image size before the concat."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        boxes, scores = self.heads(x)
        return torch.cat((boxes * (1.0 / IMAGE), scores), dim=1)


def _inputs(generator: torch.Generator) -> tuple[torch.Tensor]:
    return (torch.rand(1, 3, IMAGE, IMAGE, generator=generator),)  # an image in 0..1


def build(cls: type[Yolo11Detector] = Yolo11Detector) -> Yolo11Detector:
    """Random weights, then batch-norm statistics measured on random images (train mode,
    cumulative average) so every layer's activations have a realistic, unit-like range."""
    torch.manual_seed(0)
    module = cls()
    for bn in (m for m in module.modules() if isinstance(m, nn.BatchNorm2d)):
        bn.momentum = None
    generator = torch.Generator().manual_seed(10)
    module.train()
    with torch.no_grad():
        for _ in range(8):
            module(*_inputs(generator))
    return module.eval()


def model() -> nn.Module:
    return build()


def separate_outputs() -> nn.Module:
    """`yolo11_detector.py:separate_outputs`: the fix as separate outputs."""
    return build(SeparateOutputs)


def normalised_boxes() -> nn.Module:
    """`yolo11_detector.py:normalised_boxes`: the fix as normalised coordinates."""
    return build(NormalisedBoxes)


def example_inputs() -> tuple[torch.Tensor, ...]:
    return _inputs(torch.Generator().manual_seed(1))


def calibration_inputs() -> list[tuple[torch.Tensor, ...]]:
    generator = torch.Generator().manual_seed(2)
    return [_inputs(generator) for _ in range(4)]
