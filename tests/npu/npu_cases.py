"""The decoder's regression set (tests/npu/models), shared by the fixtures and the tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vela_oracle import VelaCompile

MODELS = Path(__file__).parent / "models"
# conv (strided, padded) + relu, depthwise, sigmoid (LUT); max and padded average pools;
# mul, add, tanh; max/min with broadcast, scalar sub, dilated conv, nearest upscale, sum.
CASES = [(m, q) for m in ("conv_act", "pools", "eltwise", "misc") for q in ("int8", "int16")]
CASE_IDS = [f"{m}-{q}" for m, q in CASES]


@dataclass
class DelegateStream:
    case: str
    index: int
    cmd_data: bytes  # from the program
    vela: VelaCompile  # Vela recompiling the delegate's saved TOSA
