"""MLPerf Tiny's four models, as ExecuTorch's wheel defines them
(`executorch.examples.models.mlperf_tiny`): deploy one by name, e.g.

    sdk deploy examples/mlperf_tiny.py:DsCnn                 # keyword spotting
    sdk deploy examples/mlperf_tiny.py:ResNet8 --quant int16 # image classification, a16w8
    sdk deploy examples/mlperf_tiny.py:MobileNetV1           # visual wake words (0.25x, 96x96)
    sdk deploy examples/mlperf_tiny.py:DeepAutoEncoder       # anomaly detection

Weights are seeded (random: the figures are numerics and cost, not accuracy on the data
sets); inputs are uniform in [-1, 1] as the wheel's examples make them, and eight seeded
samples of the same calibrate each model. README: "MLPerf Tiny" has the figures.
"""

import torch
from executorch.examples.models import mlperf_tiny as wheel


def _uniform(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=generator) * 2 - 1


def _seeded(cls: type, shape: tuple[int, ...]) -> type:
    """`cls` built with seeded weights, with its example and calibration inputs."""

    class Seeded(cls):
        def __init__(self) -> None:
            torch.manual_seed(0)
            super().__init__()

        @staticmethod
        def example_inputs() -> tuple[torch.Tensor, ...]:
            return (_uniform(shape, 1),)

        @staticmethod
        def calibration_inputs() -> list[tuple[torch.Tensor, ...]]:
            return [(_uniform(shape, 100 + i),) for i in range(8)]

    Seeded.__name__ = Seeded.__qualname__ = cls.__name__
    return Seeded


DsCnn = _seeded(wheel.DSCNNKWS, (1, 1, 49, 10))
ResNet8 = _seeded(wheel.ResNet8, (1, 3, 32, 32))
MobileNetV1 = _seeded(wheel.MobileNetV1025, (1, 3, 96, 96))
DeepAutoEncoder = _seeded(wheel.DeepAutoEncoder, (1, 640))
MODELS = ("DsCnn", "ResNet8", "MobileNetV1", "DeepAutoEncoder")
