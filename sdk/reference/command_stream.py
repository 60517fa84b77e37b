"""The command-stream executor: each delegate's Vela payload run on sdk.ethosu.functional's model.

It needs nothing but the program: the payload's cmd_data, weight_data, scratch size and I/O
records (no saved TOSA), so it also runs programs exported elsewhere. Inputs are written into
a zeroed scratch region at their records' offsets, the stream runs, outputs are read back at
theirs (an output may reuse an input's bytes, so outputs are read only at the end).
"""

from __future__ import annotations

import numpy as np

from sdk.errors import ProgramError, TargetError
from sdk.ethosu.functional import execute_u85
from sdk.ethosu.functional.execute import NpuState, Progress, TraceEntry, execute, lut_base_for
from sdk.ethosu.payload import NpuTensor, VelaStream, parse_vela_stream
from sdk.ethosu.stream.decode import DecodedCmdData, decode_cmd_data
from sdk.program.pte import LoadedProgram
from sdk.program.tosa_file import TosaGraphInfo, TosaTensorInfo

ELEMENT_DTYPES = {1: np.dtype(np.int8), 2: np.dtype(np.int16), 4: np.dtype(np.int32)}


def _info(record: NpuTensor, name: str) -> TosaTensorInfo:
    if record.elem_size not in ELEMENT_DTYPES:
        raise ProgramError(f"{name}: {record.elem_size}-byte elements")
    shape = tuple(record.shape)
    while len(shape) > 4 and shape[0] == 1:
        shape = shape[1:]
    return TosaTensorInfo(name, shape, ELEMENT_DTYPES[record.elem_size])


class CommandStreamExecutor:
    """Runs Vela's command stream itself (sdk.ethosu.functional.execute), from the delegate
    payloads alone."""

    name = "command-stream executor"

    def __init__(self, program: LoadedProgram) -> None:
        self.program = program
        self._delegates: dict[int, tuple[VelaStream, DecodedCmdData, TosaGraphInfo]] = {}
        self.trace: list[TraceEntry] = []  # the operations of the last run

    def _delegate(self, index: int) -> tuple[VelaStream, DecodedCmdData, TosaGraphInfo]:
        if index not in self._delegates:
            delegates = self.program.plan.delegates
            if not 0 <= index < len(delegates):
                raise ProgramError(f"no delegate {index} (the program has {len(delegates)})")
            stream = parse_vela_stream(bytes(self.program.delegate_payload(delegates[index])))
            if stream.external:
                raise ProgramError(
                    f"delegate {index}: blocks {sorted(stream.external)} live in named data "
                    "(.ptd), which the command-stream executor does not resolve"
                )
            decoded = decode_cmd_data(stream.blocks["cmd_data"])
            io = TosaGraphInfo(
                [_info(r, f"delegate {index} input {k}") for k, r in enumerate(stream.inputs)],
                [_info(r, f"delegate {index} output {k}") for k, r in enumerate(stream.outputs)],
            )
            self._delegates[index] = (stream, decoded, io)
        return self._delegates[index]

    def io(self, delegate_index: int) -> TosaGraphInfo:
        return self._delegate(delegate_index)[2]

    def run(
        self, delegate_index: int, inputs: list[np.ndarray], progress: Progress | None = None
    ) -> list[np.ndarray]:
        """The delegate's outputs; `progress(done, total)` between the stream's operations."""
        stream, decoded, io = self._delegate(delegate_index)
        if len(inputs) != len(stream.inputs):
            raise TargetError(
                f"delegate {delegate_index}: {len(inputs)} inputs, its payload takes "
                f"{len(stream.inputs)}"
            )
        ends = [r.offset + r.nbytes for r in (*stream.inputs, *stream.outputs)]
        scratch = np.zeros(max([stream.scratch_size, *ends]), dtype=np.uint8)
        for k, (array, record, info) in enumerate(zip(inputs, stream.inputs, io.inputs)):
            data = np.ascontiguousarray(array)
            if data.dtype != info.dtype or data.size != record.numel:
                raise TargetError(
                    f"delegate {delegate_index} input {k}: {data.dtype} x {data.size}, the NPU "
                    f"record is {info.dtype} x {record.numel}"
                )
            scratch[record.offset : record.offset + record.nbytes] = data.view(np.uint8).reshape(-1)
        weights = stream.blocks["weight_data"]
        state = NpuState(
            {0: np.frombuffer(weights, dtype=np.uint8).copy(), 1: scratch, 2: scratch},
            lut_base=None if decoded.is_u85 else lut_base_for(decoded.npu_config),
        )
        (execute_u85.execute if decoded.is_u85 else execute)(decoded, state, progress)
        self.trace = state.trace
        outputs = []
        for record, info in zip(stream.outputs, io.outputs):
            raw = scratch[record.offset : record.offset + record.nbytes]
            outputs.append(raw.view(info.dtype).reshape(info.shape).copy())
        return outputs
