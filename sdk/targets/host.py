"""`sdk run --target host`: the reference execution every other target is checked against.

ExecuTorch's Python runtime has no Ethos-U backend, so the program is executed step by step:
each run of consecutive CPU instructions is cut out as a program of its own
(`sdk.program.cut`) and runs on ExecuTorch's runtime with ExecuTorch's own kernels; each
delegate call runs its saved TOSA (written by `sdk export` into OUTDIR/tosa/) on the TOSA
reference model.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from executorch.exir.schema import Bool

from sdk.errors import BoundaryError, ProgramError, UsageError
from sdk.firmware.boards import Board
from sdk.program.audit import audit_program
from sdk.program.layout import program_inputs, program_outputs, to_memory_order
from sdk.program.pte import LoadedProgram, load_program, numpy_dtype
from sdk.program.tosa_file import find_tosa
from sdk.reference.executor import (
    HOST_REFERENCE_EXECUTOR,
    NpuExecutor,
    TosaExecutor,
    boundary_view,
    make_executor,
)
from sdk.targets.base import Availability, RunOptions, RunReport, Timing
from sdk.targets.resources import HostReference

# What the reference imports when it runs: ExecuTorch's runtime and quantized kernels
# (HostRunner) and the TOSA reference model (TosaExecutor).
REFERENCE_MODULES = ("executorch.runtime", "executorch.kernels.quantized", "tosa_reference_model")
REFERENCE = "ExecuTorch runtime + TOSA reference model"

if TYPE_CHECKING:  # the cut and the runtime import torch: only when a reference runs
    from sdk.program.cut import CpuSegment, Step


@dataclass
class SegmentRun:
    segment: CpuSegment
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]


class HostRunner:
    """Runs one program on the host reference (ExecuTorch runtime + TOSA reference model)."""

    def __init__(
        self,
        program: LoadedProgram,
        tosa_paths: dict[int, Path],
        executor: NpuExecutor | None = None,
    ) -> None:
        import executorch.kernels.quantized  # noqa: F401  registers quantize/dequantize kernels
        from executorch.runtime import Runtime

        from sdk.program.cut import plan_steps

        self.program = program
        self.executor = executor if executor is not None else TosaExecutor(tosa_paths)
        self.runtime = Runtime.get()
        self.steps = plan_steps(program)
        self.instructions = program.plan.chains[0].instructions
        # Each CPU step is cut (a fresh copy of the program) and loaded once per runner, not on
        # every run: the host reference runs in every first deploy and in most tests.
        self._loaded: dict[int, tuple[CpuSegment, object, object]] = {}
        # Each CPU segment run by the last `run`, with the arrays it took and gave; and each
        # delegate's outputs (delegate index, arrays), for `sdk numerics`.
        self.segment_runs: list[SegmentRun] = []
        # Where each written value's bytes live (memory id, offset, size) -> the last value
        # written there: a view no instruction writes reads its source through this.
        self.places: dict[tuple[int, int, int], int] = {}
        self.delegate_runs: list[tuple[int, list[np.ndarray]]] = []
        self.npu_traces: list[tuple[int, list]] = []  # (delegate, [TraceEntry]) per call

    def _segment(self, step: Step) -> tuple[CpuSegment, object]:
        key = step.instructions[0]
        if key not in self._loaded:
            from sdk.program.cut import cut_cpu_segment

            segment = cut_cpu_segment(self.program, step)
            loaded = self.runtime.load_program(segment.pte)  # kept alive with its method
            self._loaded[key] = (segment, loaded, loaded.load_method(self.program.plan.name))
        segment, _, method = self._loaded[key]
        return segment, method

    def _written(self, env: dict[int, np.ndarray], values, arrays) -> None:
        """Record values as written, and where their bytes live (for the views of them)."""
        for value, array in zip(values, arrays):
            env[value] = array
            place = self.program.storage(value)
            if place is not None:
                self.places[place] = value

    def _read(self, env: dict[int, np.ndarray], value: int) -> np.ndarray:
        """A value's array; a view no instruction writes is its source's bytes, reshaped."""
        if value not in env:
            source = self.places.get(self.program.storage(value))
            if source is None:
                raise ProgramError(f"value {value} is read before anything writes it")
            shape = self.program.tensor(value).shape
            env[value] = env[source].reshape(shape)
        return env[value]

    def _run_cpu(self, step: Step, env: dict[int, np.ndarray]) -> None:
        import torch

        segment, method = self._segment(step)
        # order="C", not ascontiguousarray: that makes a 0-d value (a delegate's scalar) 1-d,
        # and ExecuTorch refuses to change an input's rank.
        feeds = [np.asarray(self._read(env, v), order="C") for v in segment.inputs]
        # The env holds the program's bytes; ExecuTorch's runtime takes and gives tensors whose
        # strides say their dim order (sdk.program.layout).
        tensors = [
            torch.from_numpy(f.reshape([f.shape[d] for d in order])).permute(*np.argsort(order))
            if f.ndim
            else torch.from_numpy(f)
            for f, order in zip(feeds, self._orders(segment.inputs))
        ]
        results = [
            to_memory_order(r.numpy(), order).copy()
            for r, order in zip(method.execute(tensors), self._orders(segment.outputs))
        ]
        self._written(env, segment.outputs, results)
        self.segment_runs.append(SegmentRun(segment, feeds, results))

    def _orders(self, values) -> list[tuple[int, ...]]:
        return [self.program.tensor(v).dim_order for v in values]

    def _run_delegate(self, step: Step, env: dict[int, np.ndarray]) -> None:
        call = self.instructions[step.instructions[0]].instr_args
        graph = self.executor.io(call.delegate_index)
        args = [int(a) for a in call.args]
        n_in = len(graph.inputs)
        if len(args) != n_in + len(graph.outputs):
            raise ProgramError(
                f"delegate {call.delegate_index}: the call passes {len(args)} values, its TOSA "
                f"has {n_in} inputs and {len(graph.outputs)} outputs"
            )
        feeds = []
        for value, tensor in zip(args[:n_in], graph.inputs):
            array = self._read(env, value)
            fed = boundary_view(array, tensor.dtype)
            if fed is None or array.size != int(np.prod(tensor.shape)):
                raise BoundaryError(
                    f"delegate {call.delegate_index} input {tensor.name}: TOSA takes "
                    f"{tensor.dtype} {list(tensor.shape)}, the program has {array.dtype} "
                    f"{list(array.shape)}"
                )
            feeds.append(fed)
        outputs = self.executor.run(call.delegate_index, feeds)
        trace = getattr(self.executor, "trace", None)
        if trace is not None:  # the command-stream executor's per-operation trace
            self.npu_traces.append((call.delegate_index, list(trace)))
        for value, array in zip(args[n_in:], outputs):
            info = self.program.tensor(value)
            written = boundary_view(array, numpy_dtype(info.scalar_type))
            if written is None or array.size != int(np.prod(info.shape, dtype=np.int64)):
                raise BoundaryError(
                    f"delegate {call.delegate_index}: TOSA output is {array.dtype} "
                    f"{list(array.shape)}, the program expects {info.dtype} {list(info.shape)}"
                )
            self._written(env, [value], [written.reshape(info.shape)])
        self.delegate_runs.append((call.delegate_index, [env[v] for v in args[n_in:]]))

    def _condition(self, env: dict[int, np.ndarray], value: int) -> bool:
        """A jump's condition as ExecuTorch reads it: a Bool, or a bool tensor (all true)."""
        val = self.program.plan.values[value].val
        if isinstance(val, Bool):
            return bool(val.bool_val)
        array = self._read(env, value)
        if array.dtype != np.bool_:
            raise ProgramError(f"a jump's condition (value {value}) is {array.dtype}, not bool")
        return bool(array.all())

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        self.program.check_inputs(inputs)
        self.segment_runs = []
        self.delegate_runs = []
        self.npu_traces = []
        env: dict[int, np.ndarray] = {}
        self.places = {}
        # The values hold the program's bytes: an input in its dim order (sdk.program.layout).
        stored = program_inputs(self.program, inputs)
        self._written(env, [int(v) for v in self.program.plan.inputs], stored)
        step_at = {step.instructions[0]: k for k, step in enumerate(self.steps)}
        k = 0
        while k < len(self.steps):
            step = self.steps[k]
            k += 1
            if step.kind == "cpu":
                self._run_cpu(step, env)
            elif step.kind == "delegate":
                self._run_delegate(step, env)
            else:
                call = self.instructions[step.instructions[0]].instr_args
                if not self._condition(env, int(call.cond_value_index)):
                    k = step_at.get(int(call.destination_instruction), len(self.steps))
        outputs = [self._read(env, int(v)) for v in self.program.plan.outputs]
        return program_outputs(self.program, outputs)


def host_runner(
    program: Path | LoadedProgram,
    tosa_dir: Path | None = None,
    npu_executor: str = HOST_REFERENCE_EXECUTOR,
) -> HostRunner:
    """A runner for the program; refuses programs that fail the boundary audit. The
    command-stream executor needs no saved TOSA (programs exported elsewhere run too)."""
    loaded = program if isinstance(program, LoadedProgram) else load_program(program)
    audit = audit_program(loaded)
    if not audit.ok:
        raise BoundaryError("the program fails the boundary audit: " + "; ".join(audit.problems))
    if npu_executor == HOST_REFERENCE_EXECUTOR:
        return HostRunner(loaded, find_tosa(loaded, tosa_dir))
    return HostRunner(loaded, {}, make_executor(npu_executor, loaded, tosa_dir))


def run_host(
    program: Path | LoadedProgram,
    inputs: list[np.ndarray],
    tosa_dir: Path | None = None,
    npu_executor: str = HOST_REFERENCE_EXECUTOR,
) -> list[np.ndarray]:
    """Run the program on the host reference (delegates on the chosen NPU executor)."""
    return host_runner(program, tosa_dir, npu_executor).run(inputs)


@dataclass
class HostRunning:
    """The host reference, ready: runs each program it is given."""

    strategy: HostStrategy

    def run(
        self, program: LoadedProgram, inputs: list[np.ndarray], options: RunOptions
    ) -> RunReport:
        executor = options.npu_executor or HOST_REFERENCE_EXECUTOR
        runner = host_runner(program, options.tosa_dir, executor)
        outputs = runner.run(inputs)
        if options.npu_trace is not None:
            write_npu_trace(options.npu_trace, runner.npu_traces)
        return RunReport(self.strategy.name, None, outputs, Timing("not timed (host reference)"))

    def profile(self, program: LoadedProgram) -> None:
        """The reference is not timed: no profile."""
        return None

    def watch_transfers(self, progress) -> None:
        """Nothing is transferred."""


class HostStrategy:
    """The host reference as a target: no firmware, no timing, the oracle the others meet.
    Nothing to bring up: `up` only checks the options (`availability` says whether the
    reference's modules import)."""

    without_image = "the host reference runs no firmware"
    npu = None  # the delegates run on the TOSA reference model or the command-stream model

    def __init__(self, name: str, board: Board, resource: HostReference) -> None:
        self.name = name
        self.board = board
        self.resource = resource

    def availability(self, options: RunOptions | None = None) -> Availability:
        """Available when the reference's modules import (a broken wheel fails only there)."""
        from sdk.environment.pins import pins_for_modules, pip_install

        failed = []
        for module in self.resource.modules:
            try:
                import_module(module)
            except Exception as exc:  # an import can fail with anything (a missing .so, ...)
                failed.append((module, exc))
        if not failed:
            return Availability(True, REFERENCE)
        why = "; ".join(f"cannot import {module}: {exc}" for module, exc in failed)
        return Availability(False, why, pip_install(pins_for_modules([m for m, _ in failed])))

    def preflight(self, options: RunOptions) -> None:
        self.check_options(options)

    def check_options(self, options: RunOptions) -> None:
        if options.npu_trace is not None and options.npu_executor != "command-stream":
            raise UsageError("--npu-trace needs --target host --npu-executor command-stream")

    def image(self, options: RunOptions, build: Callable[[], Path]) -> Path | None:
        return None

    @contextlib.contextmanager
    def up(
        self, options: RunOptions, program: LoadedProgram | None = None, preloads=(), inputs=None
    ):
        self.preflight(options)
        yield HostRunning(self)

    def run_program(
        self, program: LoadedProgram, inputs: list[np.ndarray], options: RunOptions
    ) -> RunReport:
        program.check_inputs(inputs)
        with self.up(options, program) as running:
            return running.run(program, inputs, options)


def write_npu_trace(path: Path, traces: list[tuple[int, list]]) -> None:
    """The command-stream executor's per-operation trace as JSON: for each delegate call, each
    NPU operation's index, kind, mode, OFM shape (H, W, C), host seconds and MACs."""
    calls = [
        {
            "delegate": index,
            "operations": [
                {
                    "index": e.index,
                    "kind": e.kind,
                    "mode": e.mode,
                    "ofm_shape": list(e.ofm_shape) if e.ofm_shape else None,
                    "seconds": e.seconds,
                    "macs": e.macs,
                }
                for e in entries
            ],
        }
        for index, entries in traces
    ]
    Path(path).write_text(json.dumps({"calls": calls}, indent=1) + "\n")
