"""The host half of the virtual NPU (docs/link.md, "Virtual NPU").

The firmware's Ethos-U backend runs for real on a board without an NPU (QEMU): it checks the
payload and every boundary tensor, lays out the scratch region, and hands the job over the link.
Here the job is matched to its delegate by the payload's SHA-256, its inputs are read from the
scratch region at the offsets of the NPU's own I/O records, the executor runs it, and the outputs
go back at their record offsets: the firmware then copies them out as from the NPU.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sdk.errors import SdkError
from sdk.link import protocol as p
from sdk.program.pte import LoadedProgram
from sdk.program.vela_stream import NpuTensor, VelaStream, parse_vela_stream
from sdk.vnpu.executor import VIRTUAL_NPU_EXECUTOR, NpuExecutor

if TYPE_CHECKING:
    from sdk.link.session import LinkSession

ELEMENT_DTYPES = {1: np.dtype(np.int8), 2: np.dtype("<i2"), 4: np.dtype("<i4")}


class VirtualNpuError(SdkError):
    """A job the host cannot execute (the firmware is told, and fails the delegate)."""


@dataclass
class VirtualNpu:
    """Executes the NPU jobs of one program. `executor` is made on first use (a board with a
    real NPU never asks, and needs no saved TOSA)."""

    program: LoadedProgram
    tosa_dir: Path | None = None
    executor: NpuExecutor | None = None
    npu_executor: str = VIRTUAL_NPU_EXECUTOR  # which one `executor` is made as
    jobs_done: int = 0
    _streams: dict[bytes, tuple[int, VelaStream]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for index, delegate in enumerate(self.program.plan.delegates):
            payload = self.program.delegate_payload(delegate)
            try:
                stream = parse_vela_stream(payload)
            except SdkError:
                continue  # not an Ethos-U payload the firmware would hand over
            self._streams[hashlib.sha256(payload).digest()] = (index, stream)

    def _executor(self) -> NpuExecutor:
        if self.executor is None:
            from sdk.vnpu.executor import make_executor

            self.executor = make_executor(self.npu_executor, self.program, self.tosa_dir)
        return self.executor

    def handle(self, session: LinkSession, job: p.NpuJob) -> None:
        """Run one job over `session`: read, execute, write, DONE (failed with the reason when
        the host cannot run it, so the firmware fails the delegate instead of waiting)."""
        try:
            outputs = self._execute(session, job)
        except SdkError as exc:
            session.npu_done(False, f"delegate {job.delegate_index}: {exc.message}")
            return
        for record, data in outputs:
            session.npu_write(record.offset, data)
        session.npu_done(True)
        self.jobs_done += 1

    def _execute(self, session: LinkSession, job: p.NpuJob) -> list[tuple[NpuTensor, bytes]]:
        found = self._streams.get(job.payload_sha256)
        if found is None:
            raise VirtualNpuError(
                f"payload {job.payload_sha256.hex()[:16]}... is none of this program's delegates"
            )
        index, stream = found
        if index != job.delegate_index:
            raise VirtualNpuError(f"the payload is delegate {index}'s, not {job.delegate_index}'s")
        if job.scratch_size < stream.scratch_size:
            raise VirtualNpuError(
                f"scratch of {job.scratch_size} bytes, the payload needs {stream.scratch_size}"
            )
        executor = self._executor()
        graph = executor.io(index)
        if len(graph.inputs) != len(stream.inputs) or len(graph.outputs) != len(stream.outputs):
            raise VirtualNpuError(
                f"the NPU records have {len(stream.inputs)} inputs/{len(stream.outputs)} outputs, "
                f"the {executor.name}'s graph {len(graph.inputs)}/{len(graph.outputs)}"
            )
        inputs = []
        for k, (record, tensor) in enumerate(zip(stream.inputs, graph.inputs)):
            dtype = _element_dtype(record, "input", k)
            if dtype != tensor.dtype or record.numel != math.prod(tensor.shape):
                raise VirtualNpuError(
                    f"input {k}: the NPU record is {record.elem_size}-byte x {record.numel}, "
                    f"the graph takes {tensor.dtype} {list(tensor.shape)}"
                )
            data = session.npu_read(record.offset, record.nbytes)
            inputs.append(np.frombuffer(data, dtype).reshape(tensor.shape))
        results = executor.run(index, inputs)
        outputs = []
        for k, (record, array) in enumerate(zip(stream.outputs, results, strict=True)):
            dtype = _element_dtype(record, "output", k)
            if array.dtype != dtype or array.size != record.numel:
                raise VirtualNpuError(
                    f"output {k}: the {executor.name} gave {array.dtype} {list(array.shape)}, "
                    f"the NPU record is {record.elem_size}-byte x {record.numel}"
                )
            outputs.append((record, np.ascontiguousarray(array).astype(dtype).tobytes()))
        return outputs


def _element_dtype(record: NpuTensor, direction: str, k: int) -> np.dtype:
    if record.elem_size not in ELEMENT_DTYPES:
        raise VirtualNpuError(f"{direction} {k}: {record.elem_size}-byte elements")
    return ELEMENT_DTYPES[record.elem_size]
