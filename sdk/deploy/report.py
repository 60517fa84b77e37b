"""The deploy report: one typed record, written as JSON (schema `sdk.deploy.report/1`, the
README documents it), printed as a terminal table, and as JUnit XML for CI.

Timing is always labelled by where it comes from: the Vela *estimate*, the QEMU *instruction
count*, the virtual U55's *modelled* cycles (sdk.ethosu.cycles; *not timed* where the model
could not time a job), the FVP's *approximate* cycles, the board's *measured* cycles. Nothing
is presented as a measurement that is not one.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdk.deploy.performance import CPU_TIME, NPU_TIME, Clocks
from sdk.evaluation.accuracy import Accuracy, Closeness, Threshold
from sdk.evaluation.compare import OutputComparison
from sdk.link.record import ModelledNpu
from sdk.program.pte import LoadedProgram
from sdk.reference.executor import executor_text
from sdk.targets.base import VIRTUAL_NPU_MODELLED, VIRTUAL_NPU_TIMING, Timing
from sdk.utils.files import write_atomically
from sdk.utils.progress import FAILED, SKIPPED, StepRecord

REPORT_FILE = "deploy.json"  # in the deploy's output folder
SCHEMA = "sdk.deploy.report/1"
VELA_ESTIMATE = "Vela estimate"
NPU_PMU = "NPU PMU cycles (measured on the board)"


@dataclass
class OutputCheck:
    """One output's verdict (equal to the host reference, and within the Tolerance of the
    quantized model: sdk.deploy.verdict) and its figures against both PyTorch models."""

    index: int
    dtype: str
    shape: list[int]
    vs_host: OutputComparison | None  # None: the outputs did not match the host reference
    criterion: Closeness | None = None  # vs the quantized model; None: nothing to compare
    problem: str = ""  # why there is no criterion
    references: dict[str, dict] = field(default_factory=dict)

    def add(
        self, ref: str, accuracy: Accuracy | None, threshold: Threshold, problem: str = ""
    ) -> None:
        """The figures against `ref` and whether its floor is met (a warning, not the verdict)."""
        self.references[ref] = {
            **(accuracy.to_json() if accuracy else {}),
            "threshold": threshold.to_json(),
            "floor_met": accuracy is not None and accuracy.meets(threshold),
            **({"problem": problem} if problem else {}),
        }

    @property
    def ok(self) -> bool:
        host_ok = self.vs_host is not None and self.vs_host.ok
        return host_ok and self.criterion is not None and self.criterion.ok

    def to_json(self) -> dict:
        host = None
        if self.vs_host is not None:
            host = {
                "identical": self.vs_host.exact,
                "max_abs_diff": self.vs_host.max_abs_diff,
                "tolerance": self.vs_host.tolerance,
                "ok": self.vs_host.ok,
            }
        criterion = (
            {"ok": False, "problem": self.problem} if self.criterion is None
            else self.criterion.to_json()
        )  # fmt: skip
        return {
            "index": self.index,
            "dtype": self.dtype,
            "shape": self.shape,
            "host_reference": host,
            "criterion": criterion,
            **self.references,
            "ok": self.ok,
        }


def timing_entries(export_report: dict, timing: Timing, clocks: Clocks | None = None) -> list[dict]:
    """The run's figures, each with its source; the Vela estimate beside them (per delegate
    beside the virtual U55's modelled cycles, with their ratio). `clocks`: the board's, for
    the seconds of instructions and modelled cycles."""
    entries = []
    total = export_report.get("vela_estimate_total") or {}
    if export_report.get("delegates"):
        entries.append(
            {
                "what": "NPU delegates",
                "value": total.get("total_cycles"),
                "unit": "cycles",
                "seconds": total.get("inference_time_s"),
                "source": VELA_ESTIMATE,
            }
        )
    if timing.instructions is not None:
        entries.append(
            {"what": "CPU", "value": timing.instructions, "unit": "instructions",
             "source": timing.source}
        )  # fmt: skip
        if clocks is not None:
            entries[-1].update(seconds=clocks.cpu_ms(timing.instructions) / 1e3, at=CPU_TIME)
    elif timing.run_ticks is not None:
        seconds = timing.run_ticks / timing.tick_hz if timing.tick_hz else None
        entries.append(
            {"what": "run" if not timing.virtual_npu else "CPU", "value": timing.run_ticks,
             "unit": f"ticks at {timing.tick_hz} Hz", "seconds": seconds, "source": timing.source}
        )  # fmt: skip
    if timing.npu_modelled is not None:
        entries += modelled_entries(export_report, timing.npu_modelled, clocks)
    elif timing.virtual_npu:
        entries.append({"what": "NPU delegates", "value": None, "source": VIRTUAL_NPU_TIMING})
    if timing.npu_cycles is not None:
        entries.append(
            {"what": "NPU delegates", "value": timing.npu_cycles, "unit": "cycles",
             "source": NPU_PMU}
        )  # fmt: skip
    return entries


def modelled_entries(export_report: dict, npu: ModelledNpu, clocks: Clocks | None) -> list[dict]:
    """A row per delegate the virtual U55 ran: its modelled cycles per inference, Vela's
    estimate of the same delegate and their ratio (a delegate the model could not time: not
    timed, with the reason)."""
    estimates = {
        d["index"]: (d.get("vela_estimate") or {}).get("total_cycles")
        for d in export_report.get("delegates", [])
    }
    entries = []
    for d in npu.delegates:
        what = f"NPU delegate {d.delegate}"
        if d.cycles is None:
            entries.append({"what": what, "delegate": d.delegate, "value": None,
                            "source": VIRTUAL_NPU_TIMING, "problem": d.error})  # fmt: skip
            continue
        vela = estimates.get(d.delegate)
        entries.append(
            {
                "what": what,
                "delegate": d.delegate,
                "value": d.cycles,
                "unit": "cycles",
                "seconds": clocks.npu_ms(d.cycles) / 1e3 if clocks else None,
                **({"at": NPU_TIME} if clocks else {}),
                "source": VIRTUAL_NPU_MODELLED,
                "vela_estimate_cycles": vela,
                "ratio_to_vela": d.cycles / vela if vela else None,
            }
        )
    return entries


def _finite(value: Any) -> Any:
    """JSON has no infinities: they are written as the strings "inf" / "-inf"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


@dataclass
class DeployReport:
    model: str
    board: str
    target: str
    target_why: str
    npu: str
    quant: str
    quantization: dict  # the export report's: sdk.export.quant_options settings, as matched
    passed: bool
    failure: str | None
    steps: list[StepRecord]
    cache: dict
    placement: dict
    npu_run: dict | None  # sdk.targets.base.NpuRun.to_json(): what ran the delegates
    outputs: list[OutputCheck]
    timing: list[dict]
    memory: list[dict]
    arenas: dict | None
    files: dict
    dataset: dict | None = None  # sdk.evaluation.dataset.evaluate(): the --dataset figures
    profile: dict | None = (
        None  # sdk.evaluation.profile.Profile.to_json(): where the run's time went
    )
    board_use: dict | None = None  # a board's place and firmware (kept / flashed), if a board
    warnings: list[str] = field(default_factory=list)  # floors missed: figures, not the verdict
    npu_arena: dict | None = None  # sdk.firmware.memory.ArenaPlacement: where the NPU's arena is
    io: dict | None = None  # the export report's `io`: --io and each I/O's scale/zero-point
    vela: dict | None = None  # the Vela configuration the program was compiled with
    tuning: dict | None = None  # --optimize: sdk.deploy.tune's table and choice
    # sdk.deploy.performance.performance(): latency at the board's clocks, NPU utilisation
    performance: dict | None = None

    def to_json(self) -> dict:
        return _finite(
            {
                "schema": SCHEMA,
                "model": self.model,
                "board": self.board,
                "target": {"name": self.target, "why": self.target_why, **(self.board_use or {})},
                "npu": self.npu,
                "quant": self.quant,
                "quantization": self.quantization,
                "io": self.io,
                "passed": self.passed,
                "failure": self.failure,
                "warnings": self.warnings,
                "steps": [s.to_json() for s in self.steps],
                "cache": self.cache,
                "placement": self.placement,
                "npu_run": self.npu_run,
                "outputs": [o.to_json() for o in self.outputs],
                "timing": self.timing,
                "performance": self.performance,
                "memory": {
                    "regions": self.memory,
                    "arenas_after_load": self.arenas,
                    "npu_arena": self.npu_arena,
                },
                "files": self.files,
                "dataset": self.dataset,
                "profile": self.profile,
                "vela": self.vela,
                **({"tuning": self.tuning} if self.tuning is not None else {}),
            }
        )

    def write(self, path: Path) -> None:
        write_atomically(path, json.dumps(self.to_json(), indent=2) + "\n")

    def junit(self) -> str:
        """One test case per step and per output check (the host reference, the criterion)."""
        cases = []
        for output in self.outputs:
            data = output.to_json()
            for name in ("host_reference", "criterion"):
                ok = data[name] is not None and data[name].get("ok")
                problem = None if ok else json.dumps(_finite(data[name]))
                cases.append((f"output {output.index} vs {name.replace('_', ' ')}", problem))
        if self.dataset is not None:
            cases.append(("data set", None if self.dataset["passed"] else self.dataset["failure"]))
        props = {"board": self.board, "target": self.target, "npu": self.npu, "quant": self.quant}
        if self.board_use and self.board_use.get("place"):
            props["place"] = self.board_use["place"]
        return junit_suite(self.steps, cases, self.failure, props)


def junit_suite(
    steps: list[StepRecord], outputs: list[tuple[str, str | None]], failure: str | None,
    props: dict[str, str],
) -> str:  # fmt: skip
    """JUnit XML: a case per step, one per output check (name, failure message or None), and a
    `result` case carrying the failure when no other case does."""
    suite = ET.Element("testsuite", name="sdk deploy")
    ET.SubElement(suite, "properties")
    counts = {"tests": 0, "failures": 0}

    def case(classname: str, name: str, seconds: float = 0.0) -> ET.Element:
        counts["tests"] += 1
        return ET.SubElement(
            suite, "testcase", classname=classname, name=name, time=f"{seconds:.3f}"
        )

    for record in steps:
        element = case("deploy.step", record.name, record.seconds)
        if record.status == SKIPPED:
            ET.SubElement(element, "skipped", message=record.detail)
        elif record.status == FAILED:
            counts["failures"] += 1
            ET.SubElement(element, "failure", message=failure or record.detail or "failed")
    for name, problem in outputs:
        element = case("deploy.output", name)
        if problem is not None:
            counts["failures"] += 1
            ET.SubElement(element, "failure", message=problem)
    if failure and not counts["failures"]:
        counts["failures"] += 1
        ET.SubElement(case("deploy", "result"), "failure", message=failure)
    for name, value in props.items():
        ET.SubElement(suite.find("properties"), "property", name=f"sdk_{name}", value=str(value))
    suite.set("tests", str(counts["tests"]))
    suite.set("failures", str(counts["failures"]))
    return ET.tostring(suite, encoding="unicode") + "\n"


def error_report(model: str, board: str, steps: list[StepRecord], message: str) -> dict:
    """The JSON of a deploy that stopped with an error: never an old verdict left standing."""
    return {
        "schema": SCHEMA,
        "model": model,
        "board": board,
        "passed": False,
        "failure": message,
        "steps": [s.to_json() for s in steps],
    }


def placement_of(
    program: LoadedProgram,
    export_report: dict,
    npu: str | None,
    npu_executor: str,
    npu_config: str = "ethos-u55-128",
) -> dict:
    """Where each operator ran: the NPU delegates (their graph nodes: on the target's own NPU
    `npu`, else the virtual NPU of `npu_config`'s kind, U55 or U85) and the CPU kernels."""
    from collections import Counter

    from sdk.program.pte import operator_name

    kind = npu_config.split("-")[1].upper()  # "ethos-u85-128" -> "U85"
    executor = npu or (
        f"Ethos-{kind} driver (firmware) on a virtual {kind} "
        f"({executor_text(npu_executor, f'Ethos-{kind}')})"
    )
    delegates = []
    for d in export_report.get("delegates", []):
        ops = Counter(n["target"] for n in d.get("nodes", []))
        delegates.append({"index": d["index"], "ran_on": executor, "operators": dict(ops)})
    calls = Counter(
        operator_name(program.plan.operators[call.op_index]) for _, call in program.kernel_calls()
    )
    return {
        "npu": delegates,
        "cpu": [{"op": op, "calls": n} for op, n in sorted(calls.items())],
        "cpu_nodes": export_report.get("cpu_nodes", []),
    }
