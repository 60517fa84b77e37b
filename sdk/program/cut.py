"""Cut a program at its delegate calls into CPU-only programs.

A run of consecutive CPU instructions becomes a program of its own: the same `.pte` with its
chain cut down to those instructions, its operator table down to the operators they call, its
inputs/outputs set to the values that cross the cut, and no delegates. Memory-planned offsets
stay valid because every value live at a cut was live at the same point of the original plan.
The host reference runs these on ExecuTorch's runtime; the firmware tests run the same programs
on the target (e.g. the CPU tail of a program whose NPU part QEMU cannot run).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
from executorch.exir.schema import (
    DelegateCall,
    FreeCall,
    JumpFalseCall,
    KernelCall,
    MoveCall,
    Tensor,
)

from sdk.errors import ProgramError
from sdk.program.pte import LoadedProgram


@dataclass
class Step:
    kind: str  # "cpu" | "delegate"
    instructions: list[int]


@dataclass
class CpuSegment:
    """A CPU-only program made from one step, and the original values it reads and writes."""

    step: Step
    inputs: list[int]  # original value indices, in the segment program's input order
    outputs: list[int]
    pte: bytes


def _schema(program: LoadedProgram, op_index: int):
    op = program.plan.operators[op_index]
    namespace, name = op.name.split("::", 1)
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        return getattr(packet, op.overload or "default")._schema
    except (AttributeError, RuntimeError) as exc:
        raise ProgramError(f"operator {op.name}.{op.overload} is unknown to torch") from exc


def reads_writes(program: LoadedProgram, instruction) -> tuple[list[int], list[int]]:
    """Tensor values an instruction reads and writes (writes: `out` args and returns)."""
    args = instruction.instr_args
    if isinstance(args, DelegateCall):
        values = [v for a in args.args for v in program.tensors_in(a)]
        return values, []  # which are outputs is the delegate's business; callers know
    if isinstance(args, MoveCall):
        return program.tensors_in(args.move_from), program.tensors_in(args.move_to)
    if isinstance(args, FreeCall):
        return [], []
    if isinstance(args, JumpFalseCall):
        return program.tensors_in(args.cond_value_index), []
    if not isinstance(args, KernelCall):
        raise ProgramError(f"unexpected instruction {type(args).__name__}")
    schema = _schema(program, args.op_index)
    reads: list[int] = []
    writes: list[int] = []
    for position, value in enumerate(args.args):
        is_arg = position < len(schema.arguments)
        alias = schema.arguments[position].alias_info if is_arg else None
        written = not is_arg or (alias is not None and alias.is_write)
        (writes if written else reads).extend(program.tensors_in(value))
    return reads, writes


def plan_steps(program: LoadedProgram) -> list[Step]:
    """The method's chain as CPU runs, single delegate calls and single jumps (`torch.cond`:
    a JumpFalseCall; every jump's destination starts a step of its own)."""
    instructions = program.plan.chains[0].instructions
    targets = {
        int(i.instr_args.destination_instruction)
        for i in instructions
        if isinstance(i.instr_args, JumpFalseCall)
    }
    steps: list[Step] = []
    for index, instruction in enumerate(instructions):
        args = instruction.instr_args
        if isinstance(args, DelegateCall):
            steps.append(Step("delegate", [index]))
        elif isinstance(args, JumpFalseCall):
            steps.append(Step("jump", [index]))
        elif steps and steps[-1].kind == "cpu" and index not in targets:
            steps[-1].instructions.append(index)
        else:
            steps.append(Step("cpu", [index]))
    return steps


def _is_runtime_tensor(program: LoadedProgram, value: int) -> bool:
    """Not a constant baked into the program (those stay where they are)."""
    val = program.plan.values[value].val
    return isinstance(val, Tensor) and not (val.data_buffer_idx > 0 and val.allocation_info is None)


def _read_after(program: LoadedProgram, last: int) -> set[int]:
    needed = {int(v) for v in program.plan.outputs}
    for instruction in program.plan.chains[0].instructions[last + 1 :]:
        needed.update(reads_writes(program, instruction)[0])
    return needed


def _keep_called_operators(plan) -> None:
    """Cut the operator table down to the operators the chain calls (in their original
    order) and renumber the calls, so a segment's firmware needs only those kernels."""
    calls = [
        i.instr_args for i in plan.chains[0].instructions if isinstance(i.instr_args, KernelCall)
    ]
    used = sorted({call.op_index for call in calls})
    new_index = {old: new for new, old in enumerate(used)}
    plan.operators = [plan.operators[i] for i in used]
    for call in calls:
        call.op_index = new_index[call.op_index]


def cut_cpu_segment(program: LoadedProgram, step: Step) -> CpuSegment:
    """The CPU-only program for one CPU step."""
    instructions = program.plan.chains[0].instructions
    reads: list[int] = []
    writes: list[int] = []
    # A view of bytes the segment wrote before reading it is no input (the segment's memory
    # plan holds it); a view read later whose bytes the segment wrote last makes that writer
    # an output. Bytes are followed in order: the plan reuses them once a value is dead.
    written_at: dict[tuple[int, int, int], int] = {}
    for index in step.instructions:
        r, w = reads_writes(program, instructions[index])
        reads += [
            v
            for v in r
            if v not in writes and v not in reads and program.storage(v) not in written_at
        ]
        writes += w
        written_at.update((place, v) for v in w if (place := program.storage(v)) is not None)
    inputs = [v for v in reads if _is_runtime_tensor(program, v)]
    needed = _read_after(program, step.instructions[-1])
    needed |= {written_at[p] for v in needed if (p := program.storage(v)) in written_at}
    outputs = list(dict.fromkeys(v for v in writes if v in needed))

    cut = deserialize_pte_binary(program.data)  # a fresh copy, mutable and named data kept
    plan = next(p for p in cut.program.execution_plan if p.name == program.plan.name)
    plan.inputs = inputs
    plan.outputs = outputs
    plan.delegates = []
    plan.chains[0].instructions = [plan.chains[0].instructions[i] for i in step.instructions]
    _keep_called_operators(plan)
    plan.chains[0].stacktrace = None
    plan.container_meta_type.encoded_inp_str = ""
    plan.container_meta_type.encoded_out_str = ""
    cut.program.backend_delegate_data = []
    return CpuSegment(step, inputs, outputs, bytes(serialize_pte_binary(cut)))


def cpu_segments(program: LoadedProgram) -> list[CpuSegment]:
    return [cut_cpu_segment(program, s) for s in plan_steps(program) if s.kind == "cpu"]
