"""Executors of one Ethos-U delegate on the host, behind one seam.

    executor.run(delegate_index, inputs) -> outputs     # arrays in the delegate's I/O order

`TosaExecutor` runs the delegate's saved TOSA (written by `sdk export` beside the program) on
the TOSA reference model: what the host reference (`sdk run --target host`) and the virtual
NPU use by default. `CommandStreamExecutor` (sdk.reference.command_stream) runs Vela's command
stream itself on a functional model of the U55; `--npu-executor` chooses (`make_executor`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from sdk.errors import ProgramError, TargetError
from sdk.program.tosa_file import TosaGraphInfo, find_tosa, read_tosa_io

if TYPE_CHECKING:
    from sdk.ethosu.functional.execute import Progress  # (done, total) between steps of a job


class NpuExecutor(Protocol):
    name: str

    def io(self, delegate_index: int) -> TosaGraphInfo:
        """The delegate's inputs and outputs (shape, dtype), in order."""
        ...

    def run(
        self, delegate_index: int, inputs: list[np.ndarray], progress: Progress | None = None
    ) -> list[np.ndarray]:
        """The delegate's outputs; `progress(done, total)` is called between steps of the job
        (sdk.ethosu.device keeps the firmware's exchange alive with it while the host computes)."""
        ...


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


class TosaExecutor:
    """The TOSA reference model on each delegate's saved TOSA flatbuffer."""

    name = "TOSA reference model"

    def __init__(self, tosa_paths: dict[int, Path]) -> None:
        self.tosa_paths = tosa_paths
        self._graphs: dict[int, tuple[bytes, TosaGraphInfo]] = {}

    def _graph(self, delegate_index: int) -> tuple[bytes, TosaGraphInfo]:
        if delegate_index not in self._graphs:
            path = self.tosa_paths.get(delegate_index)
            if path is None:
                raise ProgramError(f"no TOSA for delegate {delegate_index}")
            data = path.read_bytes()
            self._graphs[delegate_index] = (data, read_tosa_io(data))
        return self._graphs[delegate_index]

    def io(self, delegate_index: int) -> TosaGraphInfo:
        return self._graph(delegate_index)[1]

    def run(
        self, delegate_index: int, inputs: list[np.ndarray], progress: Progress | None = None
    ) -> list[np.ndarray]:
        """The reference model runs the graph in one call: `progress` is called before it
        only (it has no steps to report)."""
        import tosa_reference_model as reference

        if progress is not None:
            progress(0, 1)

        tosa, graph = self._graph(delegate_index)
        if len(inputs) != len(graph.inputs):
            raise TargetError(
                f"delegate {delegate_index}: {len(inputs)} inputs, its TOSA takes "
                f"{len(graph.inputs)}"
            )
        # order="C" keeps a 0-d input 0-d (ascontiguousarray would make it 1-d)
        feeds = [np.asarray(a.reshape(t.shape), order="C") for a, t in zip(inputs, graph.inputs)]
        with native_output_captured():  # the reference model prints version warnings
            outputs, status = reference.run(tosa, feeds)
        if status != reference.GraphStatus.TOSA_VALID:
            raise TargetError(f"delegate {delegate_index}: TOSA reference model: {status}")
        return list(outputs)


# --npu-executor's names and what each runs (the deploy report says which ran a delegate).
NPU_EXECUTORS = {
    "tosa": "TOSA reference model on the host",
    "command-stream": "Vela's command stream on the host's functional Ethos-U55 model",
}
# The host reference runs the TOSA graph each delegate came from; a virtual NPU (QEMU) runs
# Vela's command stream, so every run on it checks Vela's program against that graph.
HOST_REFERENCE_EXECUTOR = "tosa"
VIRTUAL_NPU_EXECUTOR = "command-stream"


def boundary_view(array: np.ndarray, dtype: np.dtype) -> np.ndarray | None:
    """`array` as `dtype` across a delegate's boundary: itself when the dtypes agree; a bool
    and a 1-byte integer (a U85 comparison's output, which the NPU's records call int8) as
    each other's bytes, which ExecuTorch's EthosUBackend copies as they are; else None."""
    dtype = np.dtype(dtype)
    if array.dtype == dtype:
        return array
    if array.itemsize == dtype.itemsize == 1 and np.dtype(np.bool_) in (array.dtype, dtype):
        return np.ascontiguousarray(array).view(dtype)
    return None


def executor_text(kind: str, npu: str = "Ethos-U55") -> str:
    """What executor `kind` runs a delegate on, for an `npu` ("Ethos-U85") stream: the
    command-stream executor runs the functional model of the stream's own NPU."""
    return NPU_EXECUTORS[kind].replace("Ethos-U55", npu)


def make_executor(kind: str, program, tosa_dir: Path | None = None) -> NpuExecutor:
    """The executor `--npu-executor` names: `tosa` (each delegate's saved TOSA on the TOSA
    reference model) or `command-stream` (Vela's command stream on sdk.ethosu.functional's model
    of the U55, from the payloads alone: no saved TOSA needed)."""
    from sdk.errors import UsageError

    if kind == "tosa":
        return TosaExecutor(find_tosa(program, tosa_dir))
    if kind == "command-stream":
        from sdk.reference.command_stream import CommandStreamExecutor

        return CommandStreamExecutor(program)
    raise UsageError(f"--npu-executor {kind}: one of {', '.join(NPU_EXECUTORS)}")
