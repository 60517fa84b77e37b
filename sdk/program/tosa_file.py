"""A delegate's saved TOSA flatbuffer: where it is (find_tosa) and its main graph's inputs and
outputs (read_tosa_io)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tosa.DType import DType
from tosa.TosaGraph import TosaGraph

from sdk.errors import ProgramError

if TYPE_CHECKING:
    from sdk.program.pte import LoadedProgram

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


def find_tosa(program: LoadedProgram, tosa_dir: Path | None = None) -> dict[int, Path]:
    """Each delegate's saved TOSA: from report.json beside the program (matched by payload
    hash), else OUTDIR/tosa/delegate_<i>.tosa."""
    from sdk.program.audit import read_delegates

    delegates = read_delegates(program)
    if not delegates:
        return {}
    base = program.path.parent if program.path else Path.cwd()
    report_path = base / "report.json"
    found: dict[int, Path] = {}
    if tosa_dir is None and report_path.is_file():
        report = json.loads(report_path.read_text())
        for entry in report.get("delegates", []):
            index = entry.get("index")
            if index is None or not 0 <= index < len(delegates):
                continue
            if entry.get("payload_sha256") != delegates[index].sha256:
                raise ProgramError(
                    f"{report_path} does not describe this program (delegate {index} differs)"
                )
            found[index] = base / entry["tosa"]
    else:
        folder = tosa_dir or base / "tosa"
        found = {d.index: folder / f"delegate_{d.index}.tosa" for d in delegates}
    for delegate in delegates:
        path = found.get(delegate.index)
        if path is None or not path.is_file():
            raise ProgramError(
                f"no saved TOSA for delegate {delegate.index} ({path}); `sdk export` writes "
                "it to OUTDIR/tosa/ beside model.pte"
            )
    return found


def tosa_call_mismatch(program: LoadedProgram, call_args: list[int], graph: TosaGraphInfo) -> str:
    """Why `graph` cannot be the graph of a delegate call passing `call_args` (inputs then
    outputs): their count, or a tensor's element count; "" when it can. Dtypes are the
    boundary audit's to judge (against the NPU's own record)."""
    tosa = [*graph.inputs, *graph.outputs]
    if len(call_args) != len(tosa):
        return (
            f"the call passes {len(call_args)} values, its TOSA has {len(graph.inputs)} inputs "
            f"and {len(graph.outputs)} outputs"
        )
    for value, tensor in zip(call_args, tosa):
        info = program.tensor(value)
        if int(np.prod(info.shape, dtype=np.int64)) != int(np.prod(tensor.shape)):
            return (
                f"TOSA tensor {tensor.name} is {list(tensor.shape)}, the program's value "
                f"{value} {list(info.shape)}"
            )
    return ""
