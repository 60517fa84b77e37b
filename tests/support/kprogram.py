"""Kernel calls export never makes (wrong argument counts or tags, mismatched dtypes or shapes,
overlapping outputs, operators export rewrites into others), made by editing a real program.

    edit = EditedProgram(koracle.export(torch.bmm, (a, b)))
    x = edit.input(np.ones((2, 3, 4), np.float32))     # a new tensor, fed as a program input
    out = edit.tensor(np.float32, (2, 3, 5))           # a new planned tensor
    edit.call("aten::bmm.out", [x, x, out, out])       # the chain: this call only
    edit.output(out)                                   # (call_with_out does these three)
    host_run(edit.to_bytes(), edit.inputs)

The program is read with ExecuTorch's deserializer and written with its serializer; its values,
constants and operator table stay, its chain, inputs and outputs are replaced. New tensors live
in a planned buffer of their own (which the runtime zeroes at load), 16-byte aligned unless
placed explicitly.
"""

from __future__ import annotations

import numpy as np
from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
from executorch.exir.schema import (
    AllocationDetails,
    Bool,
    Double,
    DoubleList,
    EValue,
    Instruction,
    Int,
    IntList,
    KernelCall,
    Null,
    Operator,
    OptionalTensorList,
    String,
    Tensor,
    TensorList,
    TensorShapeDynamism,
)

from sdk.program.pte import operator_name, scalar_type_of

ALIGNMENT = 16


class EditedProgram:
    def __init__(self, pte: bytes) -> None:
        self.pte = deserialize_pte_binary(pte)
        self.plan = self.pte.program.execution_plan[0]
        # What export made, to edit: the calls of the original chain.
        self.exported_calls: list[KernelCall] = [
            i.instr_args for i in self.plan.chains[0].instructions
        ]
        self.plan.chains[0].instructions = []
        self.plan.chains[0].stacktrace = None
        self.plan.inputs = []
        self.plan.outputs = []
        self.plan.container_meta_type.encoded_inp_str = ""
        self.plan.container_meta_type.encoded_out_str = ""
        self.inputs: list[np.ndarray] = []  # the data of the inputs, in order
        sizes = self.plan.non_const_buffer_sizes
        if not sizes:
            sizes.append(0)  # buffer 0 is reserved
        self.buffer = len(sizes)
        sizes.append(0)

    def _value(self, val) -> int:
        self.plan.values.append(EValue(val))
        return len(self.plan.values) - 1

    def tensor(self, dtype, shape, offset: int | None = None) -> int:
        """A planned tensor in this edit's buffer: at `offset` bytes, or after the last one."""
        sizes = self.plan.non_const_buffer_sizes
        if offset is None:
            offset = -(-sizes[self.buffer] // ALIGNMENT) * ALIGNMENT
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        sizes[self.buffer] = max(sizes[self.buffer], offset + nbytes)
        tensor = Tensor(
            scalar_type=scalar_type_of(np.dtype(dtype)),
            storage_offset=0,
            sizes=[int(s) for s in shape],
            dim_order=list(range(len(shape))),
            requires_grad=False,
            layout=0,
            data_buffer_idx=0,
            allocation_info=AllocationDetails(self.buffer, offset & 0xFFFFFFFF, offset >> 32),
            shape_dynamism=TensorShapeDynamism.STATIC,
            extra_tensor_info=None,
        )
        return self._value(tensor)

    def offset_of(self, value: int) -> int:
        info = self.plan.values[value].val.allocation_info
        return info.memory_offset_low | (info.memory_offset_high << 32)

    def input(self, data: np.ndarray) -> int:
        """A new tensor the program takes as its next input, fed with `data`."""
        data = np.asarray(data)
        index = self.tensor(data.dtype, data.shape)
        self.plan.inputs.append(index)
        self.inputs.append(data)
        return index

    def output(self, *values: int) -> None:
        self.plan.outputs.extend(values)

    def int(self, v: int) -> int:
        return self._value(Int(v))

    def double(self, v: float) -> int:
        return self._value(Double(v))

    def bool(self, v: bool) -> int:
        return self._value(Bool(v))

    def string(self, v: str) -> int:
        return self._value(String(v))

    def none(self) -> int:
        return self._value(Null())

    def int_list(self, items: list[int]) -> int:
        """An IntList of new Int values (as export writes them)."""
        return self._value(IntList([self.int(i) for i in items]))

    def double_list(self, items: list[float]) -> int:
        return self._value(DoubleList([float(i) for i in items]))

    def tensor_list(self, values: list[int]) -> int:
        return self._value(TensorList(list(values)))

    def optional_tensor_list(self, values: list[int | None]) -> int:
        """A `Tensor?[]` (index's indices): None for an absent entry."""
        return self._value(OptionalTensorList([-1 if v is None else v for v in values]))

    def operator(self, op: str) -> int:
        """The index of `op` ("ns::name.overload") in the operator table, added if absent."""
        names = [operator_name(o) for o in self.plan.operators]
        if op not in names:
            name, _, overload = op.rpartition(".")
            self.plan.operators.append(Operator(name=name, overload=overload))
            names.append(op)
        return names.index(op)

    def call(self, op: str, args: list[int]) -> None:
        """Append a KernelCall of `op` with these argument values to the chain."""
        kernel_call = KernelCall(op_index=self.operator(op), args=list(args))
        self.plan.chains[0].instructions.append(Instruction(kernel_call))

    def call_with_out(self, op: str, args: list[int], out_dtype, out_shape) -> int:
        """Call `op` with `args`, then a new `out` tensor and its alias (the return value), as
        export passes `out`; `out` is also the program's next output. Returns `out`."""
        out = self.tensor(out_dtype, out_shape)
        self.output(out)
        self.call(op, [*args, out, out])
        return out

    def to_bytes(self) -> bytes:
        return bytes(serialize_pte_binary(self.pte))
