"""Where the time goes on the target: the firmware's per-instruction events (the link's PROFILE,
one per instruction of the last run) turned into a per-operator table and a Chrome trace.

The firmware reads its clock before each instruction; an instruction's cost is the time to the
next one (the last: to execute()'s return), less what the CPU spent waiting for the host's
virtual U55 inside it (QEMU: the delegates' NPU work runs on the host; its NPU time is the
virtual U55's modelled cycles, which sdk.deploy.performance adds to delegate rows). On QEMU
the ticks are virtual time of `-icount`, so they convert to instructions; on a board they are
its SysTick cycles.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sdk.program.pte import LoadedProgram, operator_name


@dataclass(frozen=True)
class InstructionCost:
    pc: int
    what: str  # "aten::add.out", "delegate 0 (EthosUBackend)"
    kind: str  # "cpu" | "npu"
    start: int  # ticks from the first instruction's start
    ticks: int  # the CPU's, without the waits for the virtual U55
    npu_wait: int  # ticks the CPU waited for the virtual U55 (not NPU time)
    delegate: int | None = None  # the delegate's index, for a delegate call


@dataclass
class Profile:
    instructions: list[InstructionCost]
    run_ticks: int
    tick_hz: int
    dropped: int  # instructions beyond the firmware's buffer (not in `instructions`)
    source: str  # what the ticks are (the target's timing source)
    to_instructions: Callable[[int], int | None] = lambda ticks: None

    def operators(self) -> list[dict]:
        """Per operator (or delegate): calls, ticks, share of the run, instructions (QEMU);
        the most expensive first."""
        rows: dict[str, dict] = {}
        for cost in self.instructions:
            row = rows.setdefault(cost.what, {"what": cost.what, "kind": cost.kind, "calls": 0,
                                              "ticks": 0, "npu_wait_ticks": 0,
                                              "delegate": cost.delegate})  # fmt: skip
            row["calls"] += 1
            row["ticks"] += cost.ticks
            row["npu_wait_ticks"] += cost.npu_wait
        total = sum(c.ticks for c in self.instructions) or 1
        for row in rows.values():
            row["share"] = row["ticks"] / total
            row["instructions"] = self.to_instructions(row["ticks"])
        return sorted(rows.values(), key=lambda r: -r["ticks"])

    def to_json(self) -> dict:
        cpu = sum(c.ticks for c in self.instructions if c.kind == "cpu")
        npu = sum(c.ticks for c in self.instructions if c.kind == "npu")
        return {
            "source": self.source,
            "tick_hz": self.tick_hz,
            "run_ticks": self.run_ticks,
            "instructions_recorded": len(self.instructions),
            "instructions_dropped": self.dropped,
            "cpu_kernel_ticks": cpu,
            "delegate_ticks": npu,
            "operators": self.operators(),
        }

    def write_chrome_trace(self, path: Path) -> Path:
        """The run as a Chrome/Perfetto trace (chrome://tracing, ui.perfetto.dev): one slice
        per instruction, microseconds of the target's clock."""
        scale = 1e6 / self.tick_hz if self.tick_hz else 1.0
        events = [
            {
                "name": c.what,
                "cat": c.kind,
                "ph": "X",
                "pid": 1,
                "tid": 1,
                "ts": c.start * scale,
                "dur": (c.ticks + c.npu_wait) * scale,
                "args": {"pc": c.pc, "ticks": c.ticks, "virtual_npu_wait_ticks": c.npu_wait},
            }
            for c in self.instructions
        ]
        path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}) + "\n")
        return path

    def write_etdump(self, path: Path) -> Path:
        """The run as ExecuTorch's ETDump (a size-prefixed flatbuffer of the wheel's own schema,
        compiled by flatc), with the events ExecuTorch's runtime logs: per kernel call an
        OPERATOR_CALL (its instruction id) around a `native_call_<op>` event, per delegate call
        a DELEGATE_CALL; times in nanoseconds of the target's clock, the CPU's cost (the
        virtual U55's host time left out). `Inspector(etdump_path=...)` reads it. Written
        without importing executorch.devtools (seconds of imports on every deploy)."""
        scale = 1e9 / self.tick_hz if self.tick_hz else 1.0

        def event(name: str, cost: InstructionCost) -> dict:
            start = round(cost.start * scale)
            return {
                "profile_event": {
                    "name": name, "chain_index": 0, "instruction_id": cost.pc,
                    "delegate_debug_id_int": -1, "start_time": start,
                    "end_time": start + round(cost.ticks * scale),
                }
            }  # fmt: skip

        events = []
        for cost in self.instructions:
            if cost.kind == "npu":
                events.append(event("DELEGATE_CALL", cost))
            elif cost.kind == "cpu":
                events.append(event("OPERATOR_CALL", cost))
                events.append(event(f"native_call_{cost.what.split('::')[-1]}", cost))
        dump = {
            "version": 0,
            "run_data": [
                {"name": "forward", "bundled_input_index": -1, "allocators": [], "events": events}
            ],
        }
        data = flatc_binary(ETDUMP_SCHEMA, json.dumps(dump))
        path.write_bytes(struct.pack("<I", len(data)) + data)  # size-prefixed, as the runtime's
        return path


# ExecuTorch's ETDump schema, as the wheel ships it (with the scalar type schema it includes).
ETDUMP_SCHEMA = ("devtools", "etdump", "etdump_schema_flatcc.fbs")


def flatc_binary(schema: tuple[str, ...], text: str) -> bytes:
    """`text` (JSON) as a flatbuffer of the executorch wheel's `schema` (a path inside the
    package), compiled by flatc; the package is found, not imported."""
    import importlib.util
    import subprocess
    import tempfile

    from sdk.errors import InternalError

    package = importlib.util.find_spec("executorch")
    if package is None or not package.submodule_search_locations:
        raise InternalError("executorch is not installed: its ETDump schema is needed")
    fbs = Path(next(iter(package.submodule_search_locations))).joinpath(*schema)
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "data.json", Path(folder) / "out"
        source.write_text(text)
        command = [
            "flatc",
            "--binary",
            "-o",
            str(out),
            "-I",
            str(fbs.parent),
            str(fbs),
            str(source),
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True)
        except FileNotFoundError:
            raise InternalError("flatc is not installed (scripts/bootstrap.sh does)") from None
        written = list(out.glob("data.*"))  # named by the schema's file_extension
        if done.returncode != 0 or len(written) != 1:
            raise InternalError(f"flatc could not write {fbs.name}: {done.stderr.strip()}")
        return written[0].read_bytes()


WRAP = 1 << 32  # the firmware's tick fields are u32: differences are taken modulo this
CONTROL = "control"  # Move, JumpFalse, Free: the runtime's own steps, no kernel


def instruction_names(program: LoadedProgram) -> dict[int, tuple[str, str, int | None]]:
    """pc -> (what, kind, delegate index): the first chain's kernel calls ("cpu"), delegate
    calls ("npu") and the runtime's own steps (CONTROL, named by their kind)."""
    names: dict[int, tuple[str, str, int | None]] = {}
    for chain in program.plan.chains[:1]:
        for pc, instruction in enumerate(chain.instructions):
            kind = type(instruction.instr_args).__name__.removesuffix("Call").lower()
            names[pc] = (kind, CONTROL, None)
    for pc, call in program.kernel_calls():
        names[pc] = (operator_name(program.plan.operators[call.op_index]), "cpu", None)
    for pc, call in program.delegate_calls():
        delegate = program.plan.delegates[call.delegate_index]
        what = f"delegate {call.delegate_index} ({delegate.id})"
        names[pc] = (what, "npu", call.delegate_index)
    return names


def build_profile(
    program: LoadedProgram,
    header: dict,
    events: list[dict],
    source: str,
    to_instructions: Callable[[int], int | None] = lambda ticks: None,
) -> Profile:
    """The firmware's PROFILE reply (sdk.link.session.LinkSession.profile) over `program`."""
    names = instruction_names(program)
    dropped = header["dropped"]
    # Past the firmware's buffer the next start is unknown: the last recorded instruction and
    # the ones not recorded share the rest of the run, reported as a row of their own.
    last = (header["run_ticks"], header["npu_wait_ticks"])
    ends = [(e["start"], e["npu_wait"]) for e in events[1:]]
    ends.append((events[-1]["start"], events[-1]["npu_wait"]) if dropped and events else last)
    costs = []
    for event, (end, wait_end) in zip(events, ends, strict=True):
        what, kind, delegate = names.get(event["pc"], (f"instruction {event['pc']}", CONTROL, None))
        npu_wait = (wait_end - event["npu_wait"]) % WRAP
        ticks = ((end - event["start"]) % WRAP - npu_wait) % WRAP
        costs.append(
            InstructionCost(event["pc"], what, kind, event["start"], ticks, npu_wait, delegate)
        )
    if dropped and events:
        start, wait = events[-1]["start"], events[-1]["npu_wait"]
        npu_wait = (last[1] - wait) % WRAP
        ticks = ((last[0] - start) % WRAP - npu_wait) % WRAP
        what = f"the last recorded instruction and {dropped} not recorded"
        costs.append(InstructionCost(-1, what, CONTROL, start, ticks, npu_wait))
    return Profile(
        costs, header["run_ticks"], header["tick_hz"], header["dropped"], source, to_instructions
    )
