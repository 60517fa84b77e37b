"""Case files for the kernel harness (tests/kernels/harness/case_runner.cpp).

A case is a list of values (tensors placed in arenas, ints, lists, ...) and kernel calls
over them, exactly what a KernelCall in a program sees. Cases come from two places:
- `case_from_program`: the kernel calls of a real ExecuTorch program, its memory plan and
  constants, with test inputs written into the input tensors;
- `CaseBuilder` by hand, for edge cases and malformed calls that export never produces.
Results carry the error code, the reason and every arena's bytes after the run.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np
from executorch.exir._serialize._program import deserialize_pte_binary
from executorch.exir.schema import (
    Bool,
    Double,
    Int,
    IntList,
    KernelCall,
    Null,
    Tensor,
    TensorList,
)

# rt::Tag (firmware/runtime/include/rt/value.h)
TAG_NONE, TAG_INT, TAG_DOUBLE, TAG_BOOL, TAG_TENSOR = 0, 1, 2, 3, 4
TAG_INT_LIST, TAG_TENSOR_LIST = 6, 9

# rt::ScalarType codes <-> numpy
DTYPES: dict[int, np.dtype] = {
    0: np.dtype(np.uint8),
    1: np.dtype(np.int8),
    2: np.dtype(np.int16),
    3: np.dtype(np.int32),
    4: np.dtype(np.int64),
    5: np.dtype(np.float16),
    6: np.dtype(np.float32),
    7: np.dtype(np.float64),
    11: np.dtype(np.bool_),
}
CODES = {v: k for k, v in DTYPES.items()}

# rt::Error codes (firmware/runtime/include/rt/error.h)
ERRORS = {
    0: "Ok", 1: "Internal", 2: "InvalidArgument", 3: "InvalidProgram", 4: "NotSupported",
    5: "OperatorMissing", 6: "BackendMissing", 7: "OutOfMemory", 8: "DtypeMismatch",
    9: "ShapeMismatch", 10: "InputMismatch", 11: "DelegateFailed", 12: "KernelFailed",
    13: "InvalidInputs", 14: "NoHardware",
}  # fmt: skip

FILL = 0xA5  # arenas start as this byte: an output a kernel forgot to write shows


def _pad8(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 8)


@dataclass
class TensorRef:
    """Where a tensor value lives: arena, byte offset, dtype code and shape."""

    value: int
    dtype: int
    shape: tuple[int, ...]
    arena: int
    offset: int

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * DTYPES[self.dtype].itemsize


@dataclass
class CaseBuilder:
    arenas: list[int] = field(default_factory=list)
    values: list[tuple[int, bytes]] = field(default_factory=list)
    tensors: dict[int, TensorRef] = field(default_factory=dict)
    calls: list[tuple[str, list[int]]] = field(default_factory=list)
    inits: list[tuple[int, int, bytes]] = field(default_factory=list)

    def arena(self, size: int) -> int:
        self.arenas.append(size)
        return len(self.arenas) - 1

    def _value(self, tag: int, payload: bytes) -> int:
        self.values.append((tag, payload))
        return len(self.values) - 1

    def none(self) -> int:
        return self._value(TAG_NONE, b"")

    def int(self, v: int) -> int:
        return self._value(TAG_INT, struct.pack("<q", v))

    def double(self, v: float) -> int:
        return self._value(TAG_DOUBLE, struct.pack("<d", v))

    def bool(self, v: bool) -> int:
        return self._value(TAG_BOOL, struct.pack("<Q", int(v)))

    def int_list(self, items: list[int]) -> int:
        return self._value(TAG_INT_LIST, struct.pack(f"<Q{len(items)}q", len(items), *items))

    def tensor_list(self, items: list[int]) -> int:
        return self._value(TAG_TENSOR_LIST, struct.pack(f"<Q{len(items)}I", len(items), *items))

    def placed(self, dtype: int, shape: tuple[int, ...], arena: int, offset: int) -> int:
        """A tensor at a given place (memory-planned programs share arenas)."""
        sizes = list(shape) + [0] * (8 - len(shape))
        payload = struct.pack("<II8iIIQ", dtype, len(shape), *sizes, arena, 0, offset)
        index = self._value(TAG_TENSOR, payload)
        self.tensors[index] = TensorRef(index, dtype, tuple(shape), arena, offset)
        return index

    def tensor(self, data: np.ndarray | None = None, *, dtype=None, shape=()) -> int:
        """A tensor in an arena of its own (so the sanitizers see its exact bounds);
        initialised from `data`, or left as FILL bytes (an output)."""
        if data is not None:
            data = np.asarray(data, order="C")  # (ascontiguousarray makes 0-d arrays 1-d)
            dtype, shape = data.dtype, data.shape
        code = CODES[np.dtype(dtype)]
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        index = self.placed(code, tuple(shape), self.arena(nbytes), 0)
        if data is not None:
            self.init(index, data)
        return index

    def init(self, tensor: int, data: np.ndarray) -> None:
        ref = self.tensors[tensor]
        raw = np.asarray(data, dtype=DTYPES[ref.dtype], order="C").tobytes()
        if len(raw) != ref.nbytes:
            raise ValueError(f"value {tensor}: {len(raw)} bytes for a {ref.nbytes}-byte tensor")
        self.inits.append((ref.arena, ref.offset, raw))

    def call(self, op: str, args: list[int]) -> None:
        self.calls.append((op, args))

    def to_bytes(self) -> bytes:
        out = [
            b"KCASE001",
            struct.pack(
                "<6I", len(self.arenas), len(self.values), len(self.calls), len(self.inits), FILL, 0
            ),
        ]
        out += [struct.pack("<Q", size) for size in self.arenas]
        for tag, payload in self.values:
            out.append(struct.pack("<II", tag, len(payload)) + _pad8(payload))
        for op, args in self.calls:
            name = op.encode()
            out.append(struct.pack("<II", len(name), len(args)) + _pad8(name))
            out.append(_pad8(struct.pack(f"<{len(args)}I", *args)))
        for arena, offset, raw in self.inits:
            out.append(struct.pack("<IIQQ", arena, 0, offset, len(raw)) + _pad8(raw))
        return b"".join(out)


@dataclass
class Result:
    status: str
    failed: int | None
    reason: str
    arenas: list[bytes]
    builder: CaseBuilder

    def tensor(self, value: int) -> np.ndarray:
        ref = self.builder.tensors[value]
        raw = self.arenas[ref.arena][ref.offset : ref.offset + ref.nbytes]
        return np.frombuffer(raw, dtype=DTYPES[ref.dtype]).reshape(ref.shape).copy()

    def ok(self) -> Result:
        """Self, after asserting the run succeeded (the reason is in the message)."""
        assert self.status == "Ok", f"kernel failed: {self.status}: {self.reason}"
        return self


def parse_result(data: bytes, builder: CaseBuilder) -> Result:
    if data[:8] != b"KRES0001":
        raise ValueError("not a harness result")
    status, failed, reason_len, n_arenas = struct.unpack_from("<4I", data, 8)
    pos = 24
    reason = data[pos : pos + reason_len].decode(errors="replace")
    pos += reason_len + (-reason_len % 8)
    arenas = []
    for _ in range(n_arenas):
        (size,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        arenas.append(data[pos : pos + size])
        pos += size + (-size % 8)
    return Result(
        status=ERRORS.get(status, str(status)),
        failed=None if failed == 0xFFFFFFFF else failed,
        reason=reason,
        arenas=arenas,
        builder=builder,
    )


@dataclass
class ProgramCase:
    builder: CaseBuilder
    outputs: list[int]  # value indices of the program's outputs
    operators: list[str]


def case_from_program(pte: bytes, inputs: list[np.ndarray]) -> ProgramCase:
    """The program's kernel calls over its own memory plan and constants, with `inputs`."""
    program = deserialize_pte_binary(pte).program
    plan = program.execution_plan[0]
    b = CaseBuilder()
    planned = [b.arena(size) for size in plan.non_const_buffer_sizes]
    for index, value in enumerate(plan.values):
        v = value.val
        if isinstance(v, Tensor):
            shape = tuple(int(s) for s in v.sizes)
            code = int(v.scalar_type)
            if v.allocation_info is not None:
                info = v.allocation_info
                offset = info.memory_offset_low | (info.memory_offset_high << 32)
                got = b.placed(code, shape, planned[info.memory_id], offset)
            elif v.data_buffer_idx > 0:
                storage = bytes(program.constant_buffer[v.data_buffer_idx].storage)
                arr = np.frombuffer(storage, dtype=DTYPES[code])[: int(np.prod(shape))]
                got = b.tensor(arr.reshape(shape))
            else:
                got = b.tensor(dtype=DTYPES[code], shape=shape)
        elif isinstance(v, Int):
            got = b.int(v.int_val)
        elif isinstance(v, Double):
            got = b.double(v.double_val)
        elif isinstance(v, Bool):
            got = b.bool(v.bool_val)
        elif isinstance(v, Null):
            got = b.none()
        elif isinstance(v, IntList):
            got = b.int_list([plan.values[i].val.int_val for i in v.items])
        elif isinstance(v, TensorList):
            got = b.tensor_list([int(i) for i in v.items])
        else:
            raise NotImplementedError(f"value {index}: {type(v).__name__}")
        assert got == index
    if len(plan.inputs) != len(inputs):
        raise ValueError(f"program takes {len(plan.inputs)} inputs, got {len(inputs)}")
    for index, data in zip(plan.inputs, inputs, strict=True):
        b.init(index, np.asarray(data))
    operators = [f"{op.name}.{op.overload}" if op.overload else op.name for op in plan.operators]
    for chain in plan.chains:
        for instruction in chain.instructions:
            call = instruction.instr_args
            if not isinstance(call, KernelCall):
                raise NotImplementedError(f"instruction {type(call).__name__}")
            b.call(operators[call.op_index], [int(a) for a in call.args])
    return ProgramCase(builder=b, outputs=[int(i) for i in plan.outputs], operators=operators)
