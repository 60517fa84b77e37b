"""`sdk estimate`: the cycle model's NPU time for a network, beside Vela's own estimate.

A network reaches the cycle model (sdk/ethosu/cycles.py) as command streams: a .tflite is
compiled with Vela here (raw output: its `cmd_data`), or read as Vela compiled it (a .tflite
holding an `ethos-u` custom operator carries its stream in that operator's first input); a .pte
carries one stream per Ethos-U delegate. Vela's estimate is its summary (`cycles_total`) and
per-operation table for the same compile; for a .pte it needs the export's report.json and TOSA
beside the program (the .pte holds no Vela input), matched by each delegate's payload hash.
Neither figure is a measurement: bench/npu_anchors.py compares both with published PMU counts.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sdk.errors import ProgramError, UsageError
from sdk.ethosu.cycles import (
    CycleModelError,
    MemorySystem,
    StreamTiming,
    memory_system_from_flags,
    model_stream,
)
from sdk.ethosu.vela_estimate import VelaOp, match, run_vela

SUFFIXES = (".tflite", ".pte", ".py")
TFLITE_IDENTIFIER = b"TFL3"
ETHOS_U_CUSTOM_CODE = b"ethos-u"
STOCK_INI = "Arm/vela.ini"  # ExecuTorch's default for the U55, with the two below
STOCK_SYSTEM_CONFIG, STOCK_MEMORY_MODE = "Ethos_U55_High_End_Embedded", "Shared_Sram"
# ExecuTorch's defaults for an ethos-u85-* spec (executorch/backends/arm/ethosu/compile_spec.py)
STOCK_U85_SYSTEM_CONFIG, STOCK_U85_MEMORY_MODE = "Ethos_U85_SYS_DRAM_Mid", "Sram_Only"


@dataclass
class OpRow:
    """One operation: Vela's (when its estimate is known) or one command of the stream."""

    operator: str
    name: str
    commands: int
    modelled: int
    memory_bound: int  # of `modelled`, the cycles spent memory-bound
    vela: int | None

    def to_json(self) -> dict:
        return {
            "operator": self.operator,
            "name": self.name,
            "commands": self.commands,
            "npu_cycles_modelled": self.modelled,
            "memory_bound_cycles": self.memory_bound,
            "vela_estimate_cycles": self.vela,
        }


@dataclass
class DelegateEstimate:
    """One command stream's modelled time and, when known, Vela's estimate of it."""

    index: int
    timing: StreamTiming
    vela_total: int | None = None  # Vela's summary `cycles_total`
    vela_ops: list[VelaOp] | None = None  # Vela's per-operation table, in stream order
    vela_note: str = ""  # where Vela's figure came from, or why there is none
    flags: list[str] = field(default_factory=list)  # the Vela flags the stream was compiled with

    @property
    def memory(self) -> MemorySystem:
        return self.timing.memory

    def rows(self) -> list[OpRow]:
        """Per Vela operation when its table is known (the model's commands grouped by the
        operation they belong to), else per command."""
        if self.vela_ops:
            rows = []
            for op in match(self.vela_ops, self.timing.ops, 0):
                bound = sum(r.cycles for r in op.rows if r.memory_bound)
                rows.append(
                    OpRow(op.operator, op.name, len(op.rows), op.modelled, bound, op.op_cycles)
                )
            return rows
        return [
            OpRow(r.kind, f"command {r.index}", 1, r.cycles, r.memory_bound * r.cycles, None)
            for r in self.timing.ops
        ]

    def to_json(self) -> dict:
        cycles = self.timing.cycles
        return {
            "index": self.index,
            "npu_config": self.timing.npu_config,
            "system_config": self.memory.system_config,
            "memory_mode": self.memory.memory_mode,
            "vela_flags": self.flags,
            "npu_cycles_modelled": cycles,
            "vela_estimate_cycles": self.vela_total,
            "vela_estimate_source": self.vela_note,
            "ratio_to_vela": round(cycles / self.vela_total, 4) if self.vela_total else None,
            "memory_bound_cycles": self.timing.memory_bound_cycles,
            "memory_bound_share": round(self.timing.memory_bound_cycles / cycles, 4)
            if cycles
            else 0.0,
            "macs": self.timing.macs,
            "operations": [r.to_json() for r in self.rows()],
        }


@dataclass
class Estimate:
    """A network's estimate: its streams, the untimed ones and the clock that gives ms."""

    source: Path
    kind: str  # "tflite", "tflite (compiled by Vela)", "pte", "py"
    delegates: list[DelegateEstimate]
    untimed: dict[int, str] = field(default_factory=dict)  # delegate index -> why not timed
    npu_clock_hz: int | None = None

    @property
    def npu_cycles_modelled(self) -> int | None:
        """The timed streams' total; None when none was timed (a U85 program)."""
        return sum(d.timing.cycles for d in self.delegates) if self.delegates else None

    @property
    def vela_estimate_cycles(self) -> int | None:
        """Vela's total, only when every timed stream has one (a partial sum would mislead)."""
        totals = [d.vela_total for d in self.delegates]
        return sum(totals) if totals and all(t is not None for t in totals) else None  # type: ignore[misc]

    @property
    def memory_bound_cycles(self) -> int:
        return sum(d.timing.memory_bound_cycles for d in self.delegates)

    @property
    def latency_ms(self) -> float | None:
        cycles = self.npu_cycles_modelled
        if not self.npu_clock_hz or cycles is None:
            return None
        return 1e3 * cycles / self.npu_clock_hz

    def to_json(self) -> dict:
        cycles, vela = self.npu_cycles_modelled, self.vela_estimate_cycles
        return {
            "model": str(self.source),
            "kind": self.kind,
            "npu_cycles_modelled": cycles,
            "vela_estimate_cycles": vela,
            "ratio_to_vela": round(cycles / vela, 4) if vela and cycles is not None else None,
            "memory_bound_cycles": self.memory_bound_cycles,
            "memory_bound_share": round(self.memory_bound_cycles / cycles, 4) if cycles else None,
            "npu_clock_hz": self.npu_clock_hz,
            "latency_ms": None if self.latency_ms is None else round(self.latency_ms, 4),
            "latency_source": "modelled NPU cycles at the board's NPU clock (not a measurement)",
            "delegates": [d.to_json() for d in self.delegates],
            "untimed": [{"index": i, "why": why} for i, why in sorted(self.untimed.items())],
        }


def check_model_path(model: Path) -> str:
    """The input's kind by suffix; a missing file or another suffix is a usage error."""
    if model.suffix not in SUFFIXES:
        raise UsageError(
            f"{model}: unknown model suffix {model.suffix or '(none)'!r}; "
            "give a .tflite, a .pte or a model .py"
        )
    if not model.is_file():
        raise UsageError(f"{model}: no such file")
    return model.suffix[1:]


def _time(index: int, cmd_data: bytes, flags: list[str]) -> StreamTiming:
    system = memory_system_from_flags(flags)
    try:
        return model_stream(cmd_data, system.npu_config, system)
    except CycleModelError:
        raise
    except Exception as exc:  # a stream the decoder refuses: the input is not what it says
        raise UsageError(f"stream {index}: not a command stream the model reads: {exc}") from exc


def _vela_failure(what: Path, exc: Exception) -> UsageError:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return UsageError(f"{what}: Vela cannot compile it: {lines[-1] if lines else exc}")


def vela_flags(npu: str, spec: tuple[str, str] | None, extra: list[str]) -> list[str]:
    """The Vela flags an export with this configuration compiles with (ExecuTorch's
    EthosUCompileSpec: the stock Arm/vela.ini and its U55 or U85 defaults without a board ini; with
    one, its section as both system config and memory mode)."""
    if spec is None and npu.startswith("ethos-u85-"):
        ini, system, mode = STOCK_INI, STOCK_U85_SYSTEM_CONFIG, STOCK_U85_MEMORY_MODE
    elif spec is None:
        ini, system, mode = STOCK_INI, STOCK_SYSTEM_CONFIG, STOCK_MEMORY_MODE
    else:
        ini, system, mode = spec[0], spec[1], spec[1]
    return [
        f"--accelerator-config={npu}", f"--config={ini}",
        f"--system-config={system}", f"--memory-mode={mode}", *extra,
    ]  # fmt: skip


# ---- .tflite ------------------------------------------------------------------------------------


def compiled_streams(data: bytes) -> list[bytes]:
    """The command streams of a .tflite Vela already compiled (each `ethos-u` custom
    operator's first input), in graph order; none when it holds no such operator."""
    from ethosu.vela.tflite.Model import Model

    model = Model.GetRootAsModel(data, 0)
    codes = [model.OperatorCodes(i).CustomCode() for i in range(model.OperatorCodesLength())]
    streams = []
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for o in range(graph.OperatorsLength()):
            op = graph.Operators(o)
            if codes[op.OpcodeIndex()] != ETHOS_U_CUSTOM_CODE or op.InputsLength() == 0:
                continue
            tensor = graph.Tensors(op.Inputs(0))
            buffer = model.Buffers(tensor.Buffer()).DataAsNumpy()
            if isinstance(buffer, np.ndarray):
                streams.append(buffer.tobytes())
    return streams


def estimate_tflite(path: Path, flags: list[str], workdir: Path) -> Estimate:
    """A .tflite: compiled by Vela with `flags` (raw output), or read as Vela compiled it
    (then `flags` only say which memory system to time it under; Vela's estimate is unknown)."""
    data = path.read_bytes()
    if len(data) < 8 or data[4:8] != TFLITE_IDENTIFIER:
        raise UsageError(f"{path}: not a TensorFlow Lite flatbuffer (no 'TFL3' identifier)")
    try:
        streams = compiled_streams(data)
    except Exception as exc:  # a flatbuffer that does not parse
        raise UsageError(f"{path}: not a readable TensorFlow Lite flatbuffer: {exc}") from exc
    if streams:
        delegates = [
            DelegateEstimate(k, _time(k, s, flags), flags=flags) for k, s in enumerate(streams)
        ]
        for delegate in delegates:
            delegate.vela_note = "none: compiled by Vela elsewhere; its estimate is not in the file"
        return Estimate(path, "tflite (compiled by Vela)", delegates)
    raw = [f for f in flags if not f.startswith("--output-format")] + ["--output-format=raw"]
    outdir = workdir / "vela"
    try:
        vela_ops, summary = run_vela(path, raw, outdir)
    except RuntimeError as exc:
        raise _vela_failure(path, exc) from None
    npz = outdir / f"{path.stem}_vela.npz"
    if not npz.is_file():
        raise UsageError(f"{path}: Vela left part of the network on the CPU (no raw NPU output)")
    with np.load(npz) as arrays:  # only the non-object arrays are read: no pickle
        cmd_data = arrays["cmd_data"].item()
    delegate = DelegateEstimate(
        0,
        _time(0, cmd_data, raw),
        vela_total=int(float(summary["cycles_total"])),
        vela_ops=vela_ops,
        vela_note="Vela's summary cycles_total for this compile",
        flags=raw,
    )
    return Estimate(path, "tflite", [delegate])


# ---- .pte ---------------------------------------------------------------------------------------


def _export_report(path: Path) -> dict[int, dict]:
    """The export's report.json beside the program: its delegate entries by index."""
    report = path.parent / "report.json"
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError):
        return {}
    entries = data.get("delegates", []) if isinstance(data, dict) else []
    return {d["index"]: d for d in entries if isinstance(d, dict) and "index" in d}


def _vela_of_delegate(
    estimate: DelegateEstimate, info, entry: dict | None, path: Path, workdir: Path
) -> None:
    """Vela's estimate of a .pte's delegate, from the export beside it when it is this one."""
    if entry is None:
        estimate.vela_note = "unknown: no export report.json beside the program"
        return
    if entry.get("payload_sha256") != hashlib.sha256(info.payload).hexdigest():
        estimate.vela_note = "unknown: report.json beside the program is another export's"
        return
    tosa = path.parent / str(entry.get("tosa") or "")
    if entry.get("tosa") and tosa.is_file():
        try:
            estimate.vela_ops, summary = run_vela(
                tosa, estimate.flags, workdir / f"vela_{info.index}"
            )
        except RuntimeError as exc:
            raise _vela_failure(tosa, exc) from None
        estimate.vela_total = int(float(summary["cycles_total"]))
        estimate.vela_note = f"Vela on the export's {entry['tosa']} with the delegate's flags"
        return
    total = (entry.get("vela_estimate") or {}).get("total_cycles")
    if total is not None:
        estimate.vela_total = int(total)
        estimate.vela_note = "the export's report.json (total only: its TOSA is not beside it)"
    else:
        estimate.vela_note = "unknown: the export's report.json has no Vela estimate"


def _reported_vela(info, entry: dict | None) -> str:
    """Vela's total for a stream the model does not time, from this export's report.json."""
    if entry is None or entry.get("payload_sha256") != hashlib.sha256(info.payload).hexdigest():
        return ""
    total = (entry.get("vela_estimate") or {}).get("total_cycles")
    return "" if total is None else f"; Vela's estimate {int(total):,} cycles (report.json)"


def estimate_pte(path: Path, workdir: Path) -> Estimate:
    """A .pte: each Ethos-U delegate's stream under the memory system its compile spec names."""
    from sdk.program.audit import read_delegates
    from sdk.program.pte import load_program

    try:
        program = load_program(path)
        infos = read_delegates(program)
    except ProgramError as exc:
        raise UsageError(exc.message) from None
    report = _export_report(path)
    delegates, untimed = [], {}
    for info in infos:
        if info.vela is None or "compile_flags" not in info.compile_specs:
            if info.backend == "EthosUBackend":
                untimed[info.index] = info.vela_error or "no Vela compile flags"
            continue
        flags = shlex.split(info.compile_specs["compile_flags"])
        try:
            timing = _time(info.index, info.vela.blocks["cmd_data"], flags)
        except CycleModelError as exc:
            untimed[info.index] = exc.message + _reported_vela(info, report.get(info.index))
            continue
        estimate = DelegateEstimate(info.index, timing, flags=flags)
        _vela_of_delegate(estimate, info, report.get(info.index), path, workdir)
        delegates.append(estimate)
    if not delegates and not untimed:
        raise UsageError(f"{path}: no Ethos-U delegate: nothing runs on the NPU")
    return Estimate(path, "pte", delegates, untimed)
