"""Reading `.pte` programs into ExecuTorch's schema, and naming what is inside.

Every tool that looks into a program (inspect, the boundary audit, the host run, kernel
registration) goes through `load_program`, so a corrupt or missing file fails the same way
everywhere: one `ProgramError` line.

The flatbuffer is decoded by ExecuTorch's own reader (`_flatbuffer_to_program`); the segments
after it (delegate payloads, constants) are put back here, as ExecuTorch's
`deserialize_pte_binary` does, because that function's module imports torch and sympy (3 s
on every command that only reads a program). tests/program checks both give the same Program.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from executorch.exir._serialize._flatbuffer_program import _flatbuffer_to_program
from executorch.exir.schema import (
    BackendDelegate,
    BackendDelegateDataReference,
    BackendDelegateInlineData,
    Buffer,
    DataLocation,
    DelegateCall,
    ExecutionPlan,
    KernelCall,
    Operator,
    OptionalTensorList,
    Program,
    ScalarType,
    Tensor,
    TensorList,
)

from sdk.errors import ProgramError, UsageError
from sdk.utils.dtypes import DTYPES, Dtype  # noqa: F401 (Dtype: part of this module's API)

PTE_IDENTIFIER = b"ET12"
EXTENDED_HEADER = struct.Struct("<4sIQQ")  # at 8: b"eh00", length, program size, segments at
EXTENDED_MAGIC = b"eh00"


# ExecuTorch ScalarType -> (name, numpy dtype) of the types a program's tensors may have here.
_SCALAR_TYPES: dict[ScalarType, tuple[str, np.dtype | None]] = {
    st: (d.name, d.numpy) for st, d in DTYPES.items() if not d.storage_only and d.numpy is not None
}


def dtype_name(scalar_type: ScalarType) -> str:
    """ExecuTorch's name of a scalar type ("Float", "Short", ...)."""
    entry = DTYPES.get(scalar_type)
    return entry.name if entry else ScalarType(scalar_type).name.title()


def numpy_dtype(scalar_type: ScalarType) -> np.dtype:
    entry = _SCALAR_TYPES.get(scalar_type)
    if entry is None or entry[1] is None:
        raise ProgramError(f"scalar type {ScalarType(scalar_type).name} is not supported")
    return entry[1]


def scalar_type_of(dtype: np.dtype) -> ScalarType:
    for scalar_type, (_, np_dtype) in _SCALAR_TYPES.items():
        if np_dtype == dtype:
            return scalar_type
    raise ProgramError(f"numpy dtype {dtype} has no ExecuTorch scalar type")


def element_size(scalar_type: ScalarType) -> int:
    return numpy_dtype(scalar_type).itemsize


def operator_name(op: Operator) -> str:
    """The operator as the firmware's registry names it: "aten::bmm.out"."""
    return f"{op.name}.{op.overload}" if op.overload else op.name


@dataclass(frozen=True)
class TensorInfo:
    """What a program says about one tensor value."""

    value_index: int
    dtype: str
    scalar_type: ScalarType
    shape: tuple[int, ...]
    nbytes: int
    constant: bool
    # The order the dimensions lie in memory, outermost first (sdk.program.layout).
    dim_order: tuple[int, ...] = ()

    def to_json(self) -> dict:
        return {
            "value": self.value_index,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "nbytes": self.nbytes,
        }


@dataclass(frozen=True)
class LoadedProgram:
    """A deserialized program plus the bytes it came from."""

    path: Path | None
    data: bytes
    program: Program  # segments restored: delegate payloads inline, constants in constant_buffer

    @property
    def plan(self) -> ExecutionPlan:
        """The method the SDK runs: "forward" when present, else the only one."""
        plans = self.program.execution_plan
        for plan in plans:
            if plan.name == "forward":
                return plan
        return plans[0]

    def tensor(self, value_index: int) -> TensorInfo:
        values = self.plan.values
        if not 0 <= value_index < len(values):
            raise ProgramError(f"value index {value_index} is out of range ({len(values)} values)")
        val = values[value_index].val
        if not isinstance(val, Tensor):
            raise ProgramError(f"value {value_index} is {type(val).__name__}, not a tensor")
        shape = tuple(int(s) for s in val.sizes)
        order = tuple(int(d) for d in val.dim_order) or tuple(range(len(shape)))
        if sorted(order) != list(range(len(shape))):
            raise ProgramError(
                f"value {value_index}: dim order {list(order)} is not an order of its "
                f"{len(shape)} dimensions"
            )
        numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
        size = _SCALAR_TYPES.get(val.scalar_type)
        itemsize = size[1].itemsize if size and size[1] is not None else 0
        return TensorInfo(
            value_index=value_index,
            dtype=dtype_name(val.scalar_type),
            scalar_type=val.scalar_type,
            shape=shape,
            nbytes=numel * itemsize,
            constant=val.data_buffer_idx > 0 and val.allocation_info is None,
            dim_order=order,
        )

    def storage(self, value_index: int) -> tuple[int, int, int] | None:
        """Where a memory-planned tensor lives: (memory id, offset, bytes); None if unplanned.

        ExecuTorch emits no instruction for a static view (reshape, squeeze): the view is a
        value of its own that the memory plan places on its source's bytes. Following values
        by where they live is how the cut and the host reference see the view's data."""
        val = self.plan.values[value_index].val
        if not isinstance(val, Tensor) or val.allocation_info is None:
            return None
        info = val.allocation_info
        offset = int(info.memory_offset_low) + (int(info.memory_offset_high) << 32)
        return int(info.memory_id), offset, self.tensor(value_index).nbytes

    def is_tensor(self, value_index: int) -> bool:
        return isinstance(self.plan.values[value_index].val, Tensor)

    def tensors_in(self, value_index: int) -> list[int]:
        """Tensor value indices held by a value: itself, the items of a list (an optional
        list's present ones: index's `Tensor?[]`), or none."""
        val = self.plan.values[value_index].val
        if isinstance(val, Tensor):
            return [value_index]
        if isinstance(val, TensorList | OptionalTensorList):
            return [int(i) for i in val.items if int(i) >= 0]
        return []

    def inputs(self) -> list[TensorInfo]:
        return [self.tensor(i) for i in self.plan.inputs]

    def outputs(self) -> list[TensorInfo]:
        return [self.tensor(i) for i in self.plan.outputs]

    def check_inputs(self, inputs: list[np.ndarray]) -> None:
        """The arrays must match the method's inputs in count, dtype and shape (UsageError)."""
        expected = self.inputs()
        if len(inputs) != len(expected):
            raise UsageError(f"the program takes {len(expected)} inputs, {len(inputs)} were given")
        for i, (array, info) in enumerate(zip(inputs, expected)):
            dtype, shape = np.asarray(array).dtype, tuple(np.shape(array))
            if dtype != numpy_dtype(info.scalar_type) or shape != info.shape:
                raise UsageError(
                    f"input {i}: the program takes {info.dtype} {list(info.shape)}, "
                    f"got {dtype} {list(shape)}"
                )

    def operators(self) -> list[str]:
        return [operator_name(op) for op in self.plan.operators]

    def kernel_calls(self) -> Iterator[tuple[int, KernelCall]]:
        """(instruction index, call) for every CPU kernel call, in execution order."""
        for chain in self.plan.chains:
            for index, instruction in enumerate(chain.instructions):
                if isinstance(instruction.instr_args, KernelCall):
                    yield index, instruction.instr_args

    def delegate_calls(self) -> Iterator[tuple[int, DelegateCall]]:
        for chain in self.plan.chains:
            for index, instruction in enumerate(chain.instructions):
                if isinstance(instruction.instr_args, DelegateCall):
                    yield index, instruction.instr_args

    def delegate_payload(self, delegate: BackendDelegate) -> bytes:
        """The processed bytes of a delegate (inline data; segments are restored on load)."""
        ref = delegate.processed
        if ref.location != DataLocation.INLINE:
            raise ProgramError(
                f"delegate {delegate.id}: payload location {ref.location} unresolved"
            )
        blobs = self.program.backend_delegate_data
        if not 0 <= ref.index < len(blobs):
            raise ProgramError(
                f"delegate {delegate.id}: payload index {ref.index} out of range ({len(blobs)})"
            )
        return bytes(blobs[ref.index].data)


def load_program(source: Path | str | bytes) -> LoadedProgram:
    """Deserialize a .pte (a path or its bytes); any problem is one ProgramError line."""
    path: Path | None = None
    if isinstance(source, bytes):
        data = source
    else:
        path = Path(source)
        if not path.is_file():
            raise ProgramError(f"{path}: no such program file")
        data = path.read_bytes()
    where = str(path) if path else "program"
    if len(data) < 8 or data[4:8] != PTE_IDENTIFIER:
        raise ProgramError(f"{where}: not an ExecuTorch program (no 'ET12' identifier)")
    try:
        program = read_program(data)
    except ProgramError as exc:
        raise ProgramError(f"{where}: corrupt program: {exc.message}") from exc
    except Exception as exc:  # the flatbuffer reader raises many kinds on corrupt data
        raise ProgramError(f"{where}: corrupt program: {exc}") from exc
    if not program.execution_plan:
        raise ProgramError(f"{where}: the program has no methods")
    return LoadedProgram(path=path, data=data, program=program)


def read_program(data: bytes) -> Program:
    """The Program of a .pte's bytes, its segments put back where ExecuTorch's deserializer
    puts them: delegate payloads inline, the constant segment as constant_buffer."""
    program_size, segment_base = len(data), 0
    if len(data) >= 8 + EXTENDED_HEADER.size:
        magic, length, size, base = EXTENDED_HEADER.unpack_from(data, 8)
        if magic == EXTENDED_MAGIC and length >= EXTENDED_HEADER.size:
            program_size, segment_base = size, base
    if not 8 <= program_size <= len(data) or segment_base > len(data):
        raise ProgramError(
            f"extended header: program size {program_size}, segments at {segment_base}, "
            f"file {len(data)} bytes"
        )
    program = _flatbuffer_to_program(data[:program_size])
    if segment_base == 0:
        return program
    segments = []
    for i, segment in enumerate(program.segments):
        start, end = segment_base + segment.offset, segment_base + segment.offset + segment.size
        if end > len(data):
            raise ProgramError(f"segment {i} ends at {end}, past the file's {len(data)} bytes")
        segments.append(data[start:end])

    def segment_at(index: int, what: str) -> bytes:
        if not 0 <= index < len(segments):
            raise ProgramError(f"{what}: segment index {index} of {len(segments)}")
        return segments[index]

    for plan in program.execution_plan:
        for delegate in plan.delegates:
            if delegate.processed.location == DataLocation.SEGMENT:
                blob = segment_at(delegate.processed.index, f"delegate {delegate.id}")
                program.backend_delegate_data.append(BackendDelegateInlineData(data=blob))
                delegate.processed = BackendDelegateDataReference(
                    location=DataLocation.INLINE, index=len(program.backend_delegate_data) - 1
                )
    constants = program.constant_segment
    if constants and constants.offsets:
        blob = segment_at(constants.segment_index, "constant segment")
        ends = [*constants.offsets[1:], len(blob)]
        program.constant_buffer = [
            Buffer(storage=blob[start:end]) for start, end in zip(constants.offsets, ends)
        ]
        constants.segment_index, constants.offsets = 0, []
    if program.mutable_data_segments:  # ExecuTorch's reader moves them out; nothing here reads them
        program.mutable_data_segments = None
    program.named_data, program.segments = [], []
    return program


def output_quant_scales(program: LoadedProgram) -> list[float | None]:
    """Per program output, the scale of the dequantize that produces it (its LSB in float
    units), or None when the output is not produced by a per-tensor dequantize."""
    plan = program.plan
    producers: dict[int, float] = {}
    for _, call in program.kernel_calls():
        op = plan.operators[call.op_index]
        if op.name != "quantized_decomposed::dequantize_per_tensor" or len(call.args) < 2:
            continue
        scale = plan.values[call.args[1]].val
        if hasattr(scale, "double_val"):
            producers[int(call.args[-1])] = float(scale.double_val)
    return [producers.get(int(v)) for v in plan.outputs]
