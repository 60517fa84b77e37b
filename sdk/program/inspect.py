"""`sdk inspect`: what a `.pte` holds, and the boundary audit (fields documented in the README)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from sdk.errors import ProgramError
from sdk.program.audit import (
    AuditResult,
    DelegateInfo,
    audit_program,
    npu_output_overlaps,
    npu_stuck_matmul_operands,
)
from sdk.program.pte import LoadedProgram, operator_name

if TYPE_CHECKING:
    from sdk.ethosu.stream.decode import DecodedCmdData

INSPECT_SCHEMA = "sdk.inspect/1"
NpuCommands = dict[int, "DecodedCmdData | ProgramError"]


def planned_buffer_sizes(program: LoadedProgram) -> list[int]:
    """The method's planned (activation) buffers, in bytes: what the runtime must lay out.

    Buffer 0 is reserved by ExecuTorch and left out; `sdk inspect` and the board-fit check
    (sdk.firmware.memory) both read the program's needs from here."""
    return [int(s) for s in program.plan.non_const_buffer_sizes][1:]


def decode_npu_commands(delegates: list[DelegateInfo]) -> NpuCommands:
    """Each Ethos-U delegate's `cmd_data` decoded (sdk.ethosu.stream.decode.DecodedCmdData), or the
    ProgramError saying why it cannot be; `sdk inspect --npu-commands` lists them."""
    from sdk.ethosu.stream.decode import decode_cmd_data

    out: NpuCommands = {}
    for info in delegates:
        if info.vela is None:
            continue
        try:
            if "cmd_data" in info.vela.external:
                raise ProgramError("cmd_data is an external block (in a .ptd): not decoded")
            out[info.index] = decode_cmd_data(info.vela.blocks["cmd_data"])
        except ProgramError as exc:
            out[info.index] = exc
    return out


def inspect_program(
    program: LoadedProgram,
    audit: AuditResult | None = None,
    npu_commands: NpuCommands | None = None,
) -> dict:
    """The report; with `npu_commands` (decode_npu_commands) each Ethos-U delegate also
    gets `npu_commands` (the decoded command stream) and `npu_commands_error`."""
    audit = audit or audit_program(program)
    plan = program.plan
    calls = Counter(operator_name(plan.operators[c.op_index]) for _, c in program.kernel_calls())
    planned = planned_buffer_sizes(program)
    constant_bytes = sum(len(b.storage) for b in program.program.constant_buffer)
    sites_by_delegate: dict[int, list] = {}
    for site in audit.call_sites:
        sites_by_delegate.setdefault(site.delegate_index, []).append(site)
    delegates = []
    for info in audit.delegates:
        entry = {
            "index": info.index,
            "backend": info.backend,
            "payload_bytes": len(info.payload),
            "payload_sha256": info.sha256,
            "compile_specs": info.compile_specs,
            "vela": info.vela.to_json() if info.vela else None,
            "vela_error": info.vela_error,
            "call_sites": [
                {
                    "instruction": site.instruction,
                    "boundary": [c.to_json() for c in site.checks],
                    "problems": site.problems,
                }
                for site in sites_by_delegate.get(info.index, [])
            ],
        }
        if npu_commands is not None and info.index in npu_commands:
            entry.update(_npu_commands_json(npu_commands[info.index]))
        delegates.append(entry)
    return {
        "schema": INSPECT_SCHEMA,
        "program": str(program.path) if program.path else None,
        "bytes": len(program.data),
        "methods": [p.name for p in program.program.execution_plan],
        "method": plan.name,
        "inputs": [t.to_json() for t in program.inputs()],
        "outputs": [t.to_json() for t in program.outputs()],
        "memory": {
            "planned_buffers": planned,
            "planned_bytes": sum(planned),
            "constant_bytes": constant_bytes,
        },
        "instructions": len(plan.chains[0].instructions) if plan.chains else 0,
        "cpu_operators": [{"op": op, "calls": calls.get(op, 0)} for op in program.operators()],
        "delegates": delegates,
        "boundary_audit": {"ok": audit.ok, "problems": audit.problems},
        "npu_output_overlaps": _overlaps(program),
        "npu_stuck_matmul_operands": _stuck(program),
    }


def _overlaps(program: LoadedProgram) -> list[str] | None:
    """npu_output_overlaps, or None when a command stream does not decode (--npu-commands
    says where)."""
    try:
        return npu_output_overlaps(program)
    except ProgramError:
        return None


def _stuck(program: LoadedProgram) -> list[str] | None:
    """npu_stuck_matmul_operands, or None when a command stream does not decode."""
    try:
        return npu_stuck_matmul_operands(program)
    except ProgramError:
        return None


def _npu_commands_json(decoded: DecodedCmdData | ProgramError) -> dict:
    from sdk.ethosu.stream.disasm import to_json

    if isinstance(decoded, ProgramError):
        return {"npu_commands": None, "npu_commands_error": str(decoded)}
    return {"npu_commands": to_json(decoded), "npu_commands_error": None}


def _tensor(t: dict) -> str:
    return f"{t['dtype']}{t['shape']} ({t['nbytes']} B, value {t['value']})"


def render_text(report: dict, npu_commands: NpuCommands | None = None) -> str:
    lines = [
        f"program  {report['program']} ({report['bytes']} bytes), method {report['method']}",
        "inputs   " + ", ".join(_tensor(t) for t in report["inputs"]),
        "outputs  " + ", ".join(_tensor(t) for t in report["outputs"]),
        f"memory   planned {report['memory']['planned_bytes']} B "
        f"(buffers {report['memory']['planned_buffers']}), "
        f"constants {report['memory']['constant_bytes']} B",
        "cpu ops  "
        + (", ".join(f"{o['op']} x{o['calls']}" for o in report["cpu_operators"]) or "none"),
    ]
    for d in report["delegates"]:
        vela = d["vela"]
        extra = ""
        if vela:
            extra = (
                f", NPU config {vela['npu_config']} ({vela['macs_per_cycle']} MACs/cycle), "
                f"scratch {vela['scratch_size']} B"
            )
        lines.append(f"delegate {d['index']}: {d['backend']}, {d['payload_bytes']} B{extra}")
        for site in d["call_sites"]:
            for c in site["boundary"]:
                npu = c["npu"]
                mark = "ok " if c["ok"] else "BAD"
                lines.append(
                    f"  [{mark}] {c['direction']:6} {c['index']}: program "
                    f"{_tensor(c['program'])} | NPU {npu['dtype']} {npu['shape']} "
                    f"({npu['nbytes']} B)"
                )
        if npu_commands is not None and d["index"] in npu_commands:
            lines += _npu_listing(npu_commands[d["index"]])
    audit = report["boundary_audit"]
    if audit["ok"]:
        lines.append("boundary audit: ok (every NPU boundary tensor matches the NPU's record)")
    else:
        lines.append("boundary audit: FAILED")
        lines += [f"  {p}" for p in audit["problems"]]
    if report["npu_output_overlaps"]:
        from sdk.ethosu.functional.execute import OVERLAP_CAUSE

        lines.append(f"NPU outputs overlapping themselves: {OVERLAP_CAUSE}")
        lines += [f"  {o}" for o in report["npu_output_overlaps"]]
    if report.get("npu_stuck_matmul_operands"):
        from sdk.ethosu.functional.execute import STUCK_OPERAND_MATMUL

        lines.append(
            "NPU MatMuls reading batch 0's operand for every batch: "
            f"{STUCK_OPERAND_MATMUL}; keep it on the CPU (--cpu-op aten.bmm)"
        )
        lines += [f"  {o}" for o in report["npu_stuck_matmul_operands"]]
    return "\n".join(lines)


def _npu_listing(decoded: DecodedCmdData | ProgramError) -> list[str]:
    from sdk.ethosu.stream.disasm import disassemble

    if isinstance(decoded, ProgramError):
        return [f"  NPU commands: refused: {decoded}"]
    ops = len(decoded.operations)
    head = f"  NPU commands: {decoded.stream_words} words, {len(decoded.commands)} commands"
    return [f"{head}, {ops} operations", *("  " + line for line in disassemble(decoded))]
