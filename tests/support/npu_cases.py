"""The decoder's regression set (tests/ethosu/models), shared by the fixtures and the tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support.vela_oracle import VelaCompile

MODELS = Path(__file__).parents[1] / "ethosu" / "models"
# conv (strided, padded) + relu, depthwise, sigmoid (LUT); max and padded average pools;
# mul, add, tanh; max/min with broadcast, scalar sub, dilated conv, nearest upscale, sum;
# a batched matmul (INT8: MUL with a W-broadcast IFM2 + REDUCE_SUM per column; INT16: CPU).
TINY = ("conv_act", "pools", "eltwise", "misc", "matmul")
# The examples, exported as the other example tests export them (the session cache is shared):
# several delegates per program in INT16, thousands of commands in yolo_attention INT8.
EXAMPLES = ("shared_split", "yolo_attention")
EXAMPLE_CPU_OPS = {"int16": None, "int8": ["aten.bmm"]}
# shared_split at INT8 with its bmm left on the NPU (the stock partitioner: the SDK moves it to
# the CPU, sdk/export/pipeline.py lower): the matmul's first operand is a slice,
# which Vela 5.1.0 compiles into OFMs that overlap themselves (sdk/ethosu/functional/execute.py).
NPU_BMM = "shared_split_npu_bmm"
CASES = [(m, q) for m in (*TINY, *EXAMPLES) for q in ("int8", "int16")] + [(NPU_BMM, "int8")]
CASE_IDS = [f"{m}-{q}" for m, q in CASES]


def export_key(model: str, quant: str) -> tuple[str, str, bool, list[str] | None]:
    """The export_case arguments of a case."""
    if model == NPU_BMM:
        return "shared_split", quant, False, None  # the stock partitioner: no SDK workaround
    if model in EXAMPLES:
        return model, quant, True, EXAMPLE_CPU_OPS[quant]
    return str(MODELS / f"{model}.py"), quant, True, None


@dataclass
class DelegateStream:
    case: str
    index: int
    cmd_data: bytes  # from the program
    vela: VelaCompile  # Vela recompiling the delegate's saved TOSA
