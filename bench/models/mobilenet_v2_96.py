"""MobileNetV2 (width 1.0, the paper's block table; torchvision's layer shapes) at 96x96,
random weights: the memories bench's model (cycles depend on shapes, not weight values).
Written here because the SDK's environment has no torchvision."""

import torch
from torch import nn

# (expansion t, output channels c, repeats n, first stride s): Sandler et al. 2018, table 2.
BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
          (6, 160, 3, 2), (6, 320, 1, 1)]  # fmt: skip


def conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: bool = True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]  # fmt: skip
    return nn.Sequential(*layers, *([nn.ReLU6()] if act else []))


class Inverted(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, t: int):
        super().__init__()
        hidden = cin * t
        expand = [conv_bn(cin, hidden, 1)] if t != 1 else []
        self.body = nn.Sequential(*expand, conv_bn(hidden, hidden, 3, stride, hidden),
                                  conv_bn(hidden, cout, 1, act=False))  # fmt: skip
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    def __init__(self, classes: int = 1000):
        super().__init__()
        layers, cin = [conv_bn(3, 32, 3, 2)], 32
        for t, c, n, s in BLOCKS:
            for i in range(n):
                layers.append(Inverted(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280, classes)

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


def model():
    torch.manual_seed(0)
    return MobileNetV2().eval()


def example_inputs():
    torch.manual_seed(1)
    return (torch.rand(1, 3, 96, 96),)
