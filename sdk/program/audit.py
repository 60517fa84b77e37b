"""The boundary audit: every tensor crossing an NPU delegate must be what the NPU moves.

For each Ethos-U delegate call, the program's tensor at the call site (dtype, byte size) is
checked against the NPU's own input/output record in the Vela payload. The NPU moves only
integers of the record's element size, so a float32 tensor over an int16 record (the stock
ExecuTorch 1.5.1 bug) is a finding, and so is any byte-size disagreement.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from sdk.ethosu.payload import NpuTensor, VelaStream, parse_vela_stream
from sdk.program.pte import LoadedProgram, TensorInfo, element_size

ETHOS_U_BACKEND = "EthosUBackend"
# What the NPU can move: integers, and (U85) booleans as bytes of 0 or 1 (its CMP_* results)
_INTEGER_DTYPES = {"Byte", "Char", "Short", "Int", "UInt16", "UInt32", "Bool"}


@dataclass
class BoundaryCheck:
    """One boundary tensor: the program's view next to the NPU's record."""

    direction: str  # "input" | "output"
    position: int
    program: TensorInfo
    npu: NpuTensor | None
    problem: str | None = None

    def to_json(self) -> dict:
        return {
            "direction": self.direction,
            "index": self.position,
            "program": self.program.to_json(),
            "npu": self.npu.to_json() if self.npu else None,
            "ok": self.problem is None,
            "problem": self.problem,
        }


@dataclass
class DelegateCallSite:
    delegate_index: int
    instruction: int
    backend: str
    checks: list[BoundaryCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class DelegateInfo:
    index: int
    backend: str
    payload: bytes
    compile_specs: dict[str, str]
    vela: VelaStream | None
    vela_error: str | None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.payload).hexdigest()


@dataclass
class AuditResult:
    delegates: list[DelegateInfo]
    call_sites: list[DelegateCallSite]

    @property
    def problems(self) -> list[str]:
        return [p for site in self.call_sites for p in site.problems]

    @property
    def ok(self) -> bool:
        return not self.problems


def _spec_value(raw: bytes) -> str:
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return bytes(raw).hex()


def read_delegates(program: LoadedProgram) -> list[DelegateInfo]:
    infos = []
    for index, delegate in enumerate(program.plan.delegates):
        payload = program.delegate_payload(delegate)
        vela, error = None, None
        if delegate.id == ETHOS_U_BACKEND:
            try:
                vela = parse_vela_stream(payload)
            except Exception as exc:  # ProgramError; kept as a finding, not a crash
                error = str(exc)
        specs = {spec.key: _spec_value(spec.value) for spec in delegate.compile_specs}
        infos.append(DelegateInfo(index, delegate.id, payload, specs, vela, error))
    return infos


def _check(direction: str, position: int, tensor: TensorInfo, npu: NpuTensor) -> BoundaryCheck:
    check = BoundaryCheck(direction, position, tensor, npu)
    size = element_size(tensor.scalar_type)
    if tensor.dtype not in _INTEGER_DTYPES or size != npu.elem_size:
        check.problem = (
            f"program says {tensor.dtype} {list(tensor.shape)} ({tensor.nbytes} bytes) "
            f"but the NPU moves {npu.dtype} ({npu.elem_size}-byte elements, {npu.nbytes} bytes)"
        )
    elif tensor.nbytes != npu.nbytes:
        check.problem = (
            f"program says {tensor.nbytes} bytes ({tensor.dtype} {list(tensor.shape)}) "
            f"but the NPU record is {npu.nbytes} bytes (shape {list(npu.shape)})"
        )
    return check


def audit_program(program: LoadedProgram) -> AuditResult:
    """Check every Ethos-U delegate call's boundary tensors against the NPU records."""
    delegates = read_delegates(program)
    sites = []
    for instruction, call in program.delegate_calls():
        index = call.delegate_index
        if not 0 <= index < len(delegates):
            site = DelegateCallSite(index, instruction, "?")
            site.problems.append(f"instruction {instruction}: delegate index {index} out of range")
            sites.append(site)
            continue
        info = delegates[index]
        site = DelegateCallSite(index, instruction, info.backend)
        sites.append(site)
        where = f"delegate {index} ({info.backend}) at instruction {instruction}"
        if info.backend != ETHOS_U_BACKEND:
            continue  # not an NPU delegate: nothing to audit against
        if info.vela is None:
            site.problems.append(f"{where}: unreadable payload: {info.vela_error}")
            continue
        records = [("input", r) for r in info.vela.inputs] + [
            ("output", r) for r in info.vela.outputs
        ]
        args = list(call.args)
        if len(args) != len(records):
            site.problems.append(
                f"{where}: the call passes {len(args)} values but the NPU has "
                f"{len(info.vela.inputs)} inputs + {len(info.vela.outputs)} outputs"
            )
            continue
        counters = {"input": 0, "output": 0}
        for value_index, (direction, record) in zip(args, records):
            position = counters[direction]
            counters[direction] += 1
            if not program.is_tensor(value_index):
                site.problems.append(f"{where}: {direction} {position} is not a tensor")
                continue
            check = _check(direction, position, program.tensor(value_index), record)
            site.checks.append(check)
            if check.problem:
                site.problems.append(
                    f"{where}: {direction} {position} (value {value_index}): {check.problem}"
                )
    return AuditResult(delegates, sites)


def npu_output_overlaps(program: LoadedProgram) -> list[str]:
    """Each Ethos-U operation of the program whose OFM overlaps itself, as 'delegate i:
    operation ...': what the device leaves there is its write order, not the model's result
    (sdk.ethosu.functional.execute.OVERLAP_CAUSE). A sound stream has none."""
    from sdk.ethosu.functional import execute, execute_u85
    from sdk.ethosu.stream.decode import decode_cmd_data

    found = []
    for info in read_delegates(program):
        if info.vela is not None:
            decoded = decode_cmd_data(info.vela.blocks["cmd_data"])
            model = execute_u85 if decoded.is_u85 else execute
            for hit in model.overlapping_outputs(decoded):
                found.append(f"delegate {info.index}: {hit.describe()}")
    return found


def npu_stuck_matmul_operands(program: LoadedProgram) -> list[str]:
    """Each MatMul of the program's U55 streams that Vela lowered batch by batch with its first
    operand stuck at batch 0 (sdk.ethosu.functional.execute.STUCK_OPERAND_MATMUL), as
    'delegate i: operations ...'. The stream is sound as a stream (the functional model runs
    it as the NPU would), but it is not the TOSA graph it was compiled from. A sound stream has
    none."""
    from sdk.ethosu.functional import execute
    from sdk.ethosu.stream.decode import decode_cmd_data

    found = []
    for info in read_delegates(program):
        if info.vela is not None:
            decoded = decode_cmd_data(info.vela.blocks["cmd_data"])
            if not decoded.is_u85:
                for hit in execute.stuck_matmul_operands(decoded):
                    found.append(f"delegate {info.index}: {hit.describe()}")
    return found
