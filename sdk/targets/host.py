"""`sdk run --target host`: the reference execution every other target is checked against.

ExecuTorch's Python runtime has no Ethos-U backend, so the program is executed step by step:
each run of consecutive CPU instructions becomes a program of its own (the same `.pte` with
its chain cut down to those instructions, its inputs/outputs set to the values that cross the
cut, no delegates) and runs on ExecuTorch's runtime with ExecuTorch's own kernels; each
delegate call runs its saved TOSA (written by `sdk export` into OUTDIR/tosa/) on the TOSA
reference model. Memory-planned offsets stay valid in a cut program because every value live
at a cut was live at the same point of the original plan.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from executorch.exir._serialize._program import serialize_pte_binary
from executorch.exir.schema import (
    DelegateCall,
    FreeCall,
    JumpFalseCall,
    KernelCall,
    MoveCall,
    Tensor,
)

from sdk.errors import BoundaryError, ProgramError, TargetError, UsageError
from sdk.program.audit import audit_program
from sdk.program.pte import LoadedProgram, load_program, numpy_dtype
from sdk.program.tosa_file import read_tosa_io


@contextlib.contextmanager
def native_output_captured():
    """Route C-level stdout/stderr (fd 1 and 2) to a scratch file for the duration."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


@dataclass
class Step:
    kind: str  # "cpu" | "delegate"
    instructions: list[int]


def check_inputs(program: LoadedProgram, inputs: list[np.ndarray]) -> None:
    """The arrays must match the program's inputs in count, dtype and shape."""
    expected = program.inputs()
    if len(inputs) != len(expected):
        raise UsageError(f"the program takes {len(expected)} inputs, {len(inputs)} were given")
    for i, (array, info) in enumerate(zip(inputs, expected)):
        dtype = numpy_dtype(info.scalar_type)
        if array.dtype != dtype or tuple(array.shape) != info.shape:
            raise UsageError(
                f"input {i}: the program takes {info.dtype} {list(info.shape)}, "
                f"got {array.dtype} {list(array.shape)}"
            )


def _schema(program: LoadedProgram, op_index: int):
    op = program.plan.operators[op_index]
    namespace, name = op.name.split("::", 1)
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        return getattr(packet, op.overload or "default")._schema
    except (AttributeError, RuntimeError) as exc:
        raise ProgramError(f"operator {op.name}.{op.overload} is unknown to torch") from exc


def _reads_writes(program: LoadedProgram, instruction) -> tuple[list[int], list[int]]:
    """Tensor values an instruction reads and writes (writes: `out` args and returns)."""
    args = instruction.instr_args
    if isinstance(args, MoveCall):
        return program.tensors_in(args.move_from), program.tensors_in(args.move_to)
    if isinstance(args, FreeCall):
        return [], []
    if not isinstance(args, KernelCall):
        raise ProgramError(f"unexpected instruction {type(args).__name__} in a CPU step")
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
    chain = program.plan.chains[0]
    steps: list[Step] = []
    for index, instruction in enumerate(chain.instructions):
        args = instruction.instr_args
        if isinstance(args, JumpFalseCall):
            raise ProgramError("control flow (JumpFalseCall) is not supported by the host run")
        if isinstance(args, DelegateCall):
            steps.append(Step("delegate", [index]))
        elif steps and steps[-1].kind == "cpu":
            steps[-1].instructions.append(index)
        else:
            steps.append(Step("cpu", [index]))
    return steps


class HostRunner:
    """Runs one program on the host reference (ExecuTorch runtime + TOSA reference model)."""

    def __init__(self, program: LoadedProgram, tosa_paths: dict[int, Path]) -> None:
        import executorch.kernels.quantized  # noqa: F401  registers quantize/dequantize kernels
        from executorch.runtime import Runtime

        self.program = program
        self.tosa_paths = tosa_paths
        self.runtime = Runtime.get()
        self.steps = plan_steps(program)
        self.instructions = program.plan.chains[0].instructions

    def _later_reads(self, after: int) -> set[int]:
        needed = {int(v) for v in self.program.plan.outputs}
        for instruction in self.instructions[after + 1 :]:
            args = instruction.instr_args
            if isinstance(args, DelegateCall):
                for value in args.args:
                    needed.update(self.program.tensors_in(value))
            else:
                needed.update(_reads_writes(self.program, instruction)[0])
        return needed

    def _is_runtime_tensor(self, value: int) -> bool:
        val = self.program.plan.values[value].val
        return isinstance(val, Tensor) and not (
            val.data_buffer_idx > 0 and val.allocation_info is None
        )

    def _run_cpu(self, step: Step, env: dict[int, np.ndarray]) -> None:
        reads: list[int] = []
        writes: list[int] = []
        for index in step.instructions:
            r, w = _reads_writes(self.program, self.instructions[index])
            reads += [v for v in r if v not in writes and v not in reads]
            writes += w
        inputs = [v for v in reads if self._is_runtime_tensor(v)]
        missing = [v for v in inputs if v not in env]
        if missing:
            raise ProgramError(f"values {missing} are read before anything writes them")
        needed = self._later_reads(step.instructions[-1])
        outputs = list(dict.fromkeys(v for v in writes if v in needed))

        cut = copy.deepcopy(self.program.pte)
        plan = next(p for p in cut.program.execution_plan if p.name == self.program.plan.name)
        plan.inputs = inputs
        plan.outputs = outputs
        plan.delegates = []
        plan.chains[0].instructions = [self.instructions[i] for i in step.instructions]
        plan.chains[0].stacktrace = None
        plan.container_meta_type.encoded_inp_str = ""
        plan.container_meta_type.encoded_out_str = ""
        cut.program.backend_delegate_data = []
        method = self.runtime.load_program(bytes(serialize_pte_binary(cut))).load_method(plan.name)
        results = method.execute([torch.from_numpy(np.ascontiguousarray(env[v])) for v in inputs])
        for value, result in zip(outputs, results):
            env[value] = result.numpy().copy()

    def _run_delegate(self, step: Step, env: dict[int, np.ndarray]) -> None:
        import tosa_reference_model as reference

        call = self.instructions[step.instructions[0]].instr_args
        path = self.tosa_paths.get(call.delegate_index)
        if path is None:
            raise ProgramError(f"no TOSA for delegate {call.delegate_index}")
        tosa = path.read_bytes()
        graph = read_tosa_io(tosa)
        args = [int(a) for a in call.args]
        n_in = len(graph.inputs)
        if len(args) != n_in + len(graph.outputs):
            raise ProgramError(
                f"delegate {call.delegate_index}: the call passes {len(args)} values, its TOSA "
                f"has {n_in} inputs and {len(graph.outputs)} outputs ({path})"
            )
        feeds = []
        for value, tensor in zip(args[:n_in], graph.inputs):
            array = env[value]
            if array.dtype != tensor.dtype or array.size != int(np.prod(tensor.shape)):
                raise BoundaryError(
                    f"delegate {call.delegate_index} input {tensor.name}: TOSA takes "
                    f"{tensor.dtype} {list(tensor.shape)}, the program has {array.dtype} "
                    f"{list(array.shape)}"
                )
            feeds.append(np.ascontiguousarray(array.reshape(tensor.shape)))
        with native_output_captured():  # the reference model prints version warnings
            outputs, status = reference.run(tosa, feeds)
        if status != reference.GraphStatus.TOSA_VALID:
            raise TargetError(f"delegate {call.delegate_index}: TOSA reference model: {status}")
        for value, array in zip(args[n_in:], outputs):
            info = self.program.tensor(value)
            dtype = numpy_dtype(info.scalar_type)
            if array.dtype != dtype or array.size != int(np.prod(info.shape, dtype=np.int64)):
                raise BoundaryError(
                    f"delegate {call.delegate_index}: TOSA output is {array.dtype} "
                    f"{list(array.shape)}, the program expects {info.dtype} {list(info.shape)}"
                )
            env[value] = array.reshape(info.shape)

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        check_inputs(self.program, inputs)
        env = {int(v): a for v, a in zip(self.program.plan.inputs, inputs)}
        for step in self.steps:
            if step.kind == "cpu":
                self._run_cpu(step, env)
            else:
                self._run_delegate(step, env)
        return [env[int(v)] for v in self.program.plan.outputs]


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


def run_host(
    program: Path | LoadedProgram, inputs: list[np.ndarray], tosa_dir: Path | None = None
) -> list[np.ndarray]:
    """Run the program on the host reference; refuses programs that fail the boundary audit."""
    loaded = program if isinstance(program, LoadedProgram) else load_program(program)
    audit = audit_program(loaded)
    if not audit.ok:
        raise BoundaryError("the program fails the boundary audit: " + "; ".join(audit.problems))
    return HostRunner(loaded, find_tosa(loaded, tosa_dir)).run(inputs)
