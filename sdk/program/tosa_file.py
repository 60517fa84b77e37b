"""Read a delegate's saved TOSA flatbuffer: its main graph's inputs and outputs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tosa.DType import DType
from tosa.TosaGraph import TosaGraph

from sdk.errors import ProgramError

_NUMPY = {
    DType.BOOL: np.dtype(np.bool_),
    DType.INT8: np.dtype(np.int8),
    DType.INT16: np.dtype(np.int16),
    DType.INT32: np.dtype(np.int32),
    DType.INT64: np.dtype(np.int64),
    DType.FP32: np.dtype(np.float32),
    DType.FP16: np.dtype(np.float16),
}


@dataclass(frozen=True)
class TosaTensorInfo:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class TosaGraphInfo:
    inputs: list[TosaTensorInfo]
    outputs: list[TosaTensorInfo]


def read_tosa_io(data: bytes) -> TosaGraphInfo:
    """Inputs and outputs of the first block of the first region (the graph's main block)."""
    try:
        graph = TosaGraph.GetRootAs(data, 0)
        block = graph.Regions(0).Blocks(0)
        tensors = {}
        for i in range(block.TensorsLength()):
            tensor = block.Tensors(i)
            shape = tuple(int(s) for s in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
            tensors[tensor.Name().decode()] = (shape, tensor.Type())
        inputs = [block.Inputs(i).decode() for i in range(block.InputsLength())]
        outputs = [block.Outputs(i).decode() for i in range(block.OutputsLength())]
    except Exception as exc:  # flatbuffers raises assorted errors on garbage
        raise ProgramError(f"not a readable TOSA flatbuffer: {exc}") from exc

    def info(name: str) -> TosaTensorInfo:
        if name not in tensors:
            raise ProgramError(f"TOSA graph names {name!r} as I/O but has no such tensor")
        shape, dtype = tensors[name]
        if dtype not in _NUMPY:
            raise ProgramError(f"TOSA tensor {name!r} has unsupported type {dtype}")
        return TosaTensorInfo(name, shape, _NUMPY[dtype])

    return TosaGraphInfo([info(n) for n in inputs], [info(n) for n in outputs])
