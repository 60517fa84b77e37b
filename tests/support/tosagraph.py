"""The tests' view of a delegate's saved TOSA: operators with their input/output tensor names,
and every tensor's shape, dtype and constant data (weights, biases, RESCALE multipliers...)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tosa.DType import DType
from tosa.Op import Op
from tosa.TosaGraph import TosaGraph

NUMPY = {
    DType.BOOL: np.bool_,
    DType.INT8: np.int8,
    DType.INT16: np.int16,
    DType.INT32: np.int32,
    DType.INT48: np.int64,
    DType.SHAPE: np.int64,
    DType.FP32: np.float32,
}
OP_NAMES = {v: k for k, v in vars(Op).items() if not k.startswith("_")}


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: int
    data: np.ndarray | None


@dataclass
class Operator:
    op: str
    inputs: list[str]
    outputs: list[str]
    raw: object  # tosa.TosaOperator.TosaOperator (attributes)


class Graph:
    def __init__(self, path: Path) -> None:
        data = Path(path).read_bytes()
        block = TosaGraph.GetRootAs(data, 0).Regions(0).Blocks(0)
        self.tensors: dict[str, Tensor] = {}
        for i in range(block.TensorsLength()):
            t = block.Tensors(i)
            shape = tuple(int(s) for s in t.ShapeAsNumpy()) if t.ShapeLength() else ()
            raw = None
            if t.DataLength():
                raw = np.frombuffer(t.DataAsNumpy().tobytes(), dtype=np.uint8)
                if t.Type() == DType.INT48:
                    b = raw.reshape(-1, 6).astype(np.int64)
                    v = sum(b[:, k] << (8 * k) for k in range(6))
                    raw = np.where(v >= 1 << 47, v - (1 << 48), v)
                else:
                    raw = raw.view(NUMPY[t.Type()])
                count = int(np.prod(shape)) if shape else 1
                raw = raw[:count].reshape(shape) if raw.size >= count else raw
            self.tensors[t.Name().decode()] = Tensor(t.Name().decode(), shape, t.Type(), raw)
        self.ops = []
        for i in range(block.OperatorsLength()):
            o = block.Operators(i)
            self.ops.append(
                Operator(
                    OP_NAMES.get(o.Op(), str(o.Op())),
                    [o.Inputs(j).decode() for j in range(o.InputsLength())],
                    [o.Outputs(j).decode() for j in range(o.OutputsLength())],
                    o,
                )
            )
        self.inputs = [block.Inputs(i).decode() for i in range(block.InputsLength())]
        self.outputs = [block.Outputs(i).decode() for i in range(block.OutputsLength())]

    def of(self, op: str) -> list[Operator]:
        return [o for o in self.ops if o.op == op]

    def const(self, name: str) -> np.ndarray:
        data = self.tensors[name].data
        assert data is not None, f"{name} is not a constant"
        return data
