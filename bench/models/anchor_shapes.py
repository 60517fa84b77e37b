"""Networks with the layer shapes of two published Ethos-U measurements whose bytes are not
published or not here (bench/npu_anchors.py --shape-only): random weights, so a figure from
them checks the cycle model's scale, not its agreement with the measured stream."""

import importlib.util
from pathlib import Path

import torch
from torch import nn


class MnistMlp(nn.Module):
    """ML-examples pruning-clustering notebook's base model: Flatten, Dense 128 and 64 (ReLU),
    Dense 10 on a 28x28 input (its softmax left out: 10 elements, and a decomposition here)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(
            nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
            nn.Linear(64, 10),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        torch.manual_seed(1)
        return (torch.rand(1, 28, 28),)


def _mobilenet_v2_class() -> type[nn.Module]:
    """bench/models/mobilenet_v2_96.py's MobileNetV2 (torchvision's shapes), loaded by path:
    the SDK loads this file by path, so no package import reaches its sibling."""
    path = Path(__file__).with_name("mobilenet_v2_96.py")
    spec = importlib.util.spec_from_file_location("anchor_mobilenet_v2_96", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.MobileNetV2


class MobileNetV2At224(nn.Module):
    """MobileNetV2 1.0 at 224x224, 1000 classes: the eval kit's img_class network's shapes."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = _mobilenet_v2_class()().eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    @staticmethod
    def example_inputs() -> tuple[torch.Tensor, ...]:
        torch.manual_seed(1)
        return (torch.rand(1, 3, 224, 224),)


class TorchvisionMobileNetV2At224(nn.Module):
    """MobileNetV2At224 with torchvision's head (adaptive average pool, flatten, linear):
    ExecuTorch's `mv2` example, the Corstone-320 anchor's network. The head matters to the NPU:
    a mean over (H, W) of an NCHW tensor lowers to transposes and sums, the pool to one POOL."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = _mobilenet_v2_class()().eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = nn.functional.adaptive_avg_pool2d(self.net.features(x), 1)
        return self.net.classifier(torch.flatten(pooled, 1))

    example_inputs = MobileNetV2At224.example_inputs
