"""`sdk deploy --optimize latency|size` and `sdk tune`: try the Vela configurations the board
allows, check each one's outputs, keep the fastest (or smallest) that passes and fits.

A candidate is a memory configuration (one of the board's npu_memories modes, or ExecuTorch's
default, whose figures are the board's Shared_Sram ones), Vela's `--optimise` and, for a
program whose arena spills out of the board's npu_arena, `--arena-cache-size` set to that slot.
The program's interface stays what the user's firmware expects unless the user lets it vary
(`auto`): its I/O (float, or integer) and, for a model with 4-D inputs, their layout (as the
model takes them, or channels-last: no input transpose on the NPU; sdk.program.layout). Then
placement: the best of those with one of its delegates' operators kept on the CPU instead
(`--cpu-op`), for the operators the firmware has a CPU kernel for. Each candidate is an
ordinary deploy (cached per configuration: its Vela flags and layout are in the program's
key), so its outputs meet the deploy's own verdict, on QEMU's virtual U55 (`qemu`) or on the
host's functional U55 running the same command stream bit-exactly (`host`, for models whose
QEMU runs are too long to have one each).
Its time is its deploy's latency (sdk.deploy.performance: QEMU's instruction count and the
virtual U55's modelled cycles at the board's clocks); checked on the host, the cycle model of
its command stream alone (sdk.ethosu.cycles). The candidates that share a quantized graph
share its quantization (sdk.deploy.references.shared_quantization); docs/tuning.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdk.cache import Cache
from sdk.errors import MismatchError, ResourceError, SdkError, UsageError, check_choice
from sdk.ethosu.memories import EXECUTORCH_DEFAULT
from sdk.firmware.boards import Board
from sdk.program.layout import AS_MODEL, CHANNELS_LAST, INPUT_LAYOUTS, reorderable

if TYPE_CHECKING:  # the deploy pipeline imports the targets: only when a deploy runs
    from sdk.deploy.report import DeployReport
    from sdk.utils.progress import Steps

GOALS = ("latency", "size")
MAX_PLACEMENTS = 3  # operators tried on the CPU instead of the NPU, the most frequent first
VELA_OPTIMISE = ("Performance", "Size")
IOS = ("float", "int")
AUTO = "auto"  # --io auto, --input-layout auto: the tuner may change the program's interface
# Where a candidate's outputs are checked (the deploy target) and how the table says so.
CHECKS = {
    "qemu": "QEMU, virtual U55",
    "host": "host, command stream",
}


def check_goal(goal: str) -> str:
    return check_choice("--optimize", goal, GOALS)


def check_where(check: str) -> str:
    return check_choice("--check", check, CHECKS)


@dataclass(frozen=True)
class Candidate:
    """One configuration to try."""

    memory: str  # a board npu_memories mode, or EXECUTORCH_DEFAULT
    optimise: str = "Performance"
    io: str = "float"
    arena_cache_size: int | None = None
    input_layout: str = AS_MODEL
    cpu_ops: tuple[str, ...] = ()  # operators kept on the CPU (--cpu-op) though the NPU runs them

    @property
    def name(self) -> str:
        layout = f" in={self.input_layout}" if self.input_layout != AS_MODEL else ""
        cache = f" cache={self.arena_cache_size}" if self.arena_cache_size is not None else ""
        cpu = f" cpu={','.join(self.cpu_ops)}" if self.cpu_ops else ""
        return f"{self.memory} {self.optimise} io={self.io}{layout}{cache}{cpu}"

    @property
    def slug(self) -> str:
        """A folder name for the candidate's deploy."""
        return self.name.replace(" ", "_").replace("=", "-")

    def vela_args(self) -> list[str]:
        args = [f"--optimise={self.optimise}"]
        if self.arena_cache_size is not None:
            args.append(f"--arena-cache-size={self.arena_cache_size}")
        return args

    def to_json(self) -> dict:
        return {
            "memory": self.memory,
            "optimise": self.optimise,
            "io": self.io,
            "input_layout": self.input_layout,
            "arena_cache_size": self.arena_cache_size,
            "cpu_ops": list(self.cpu_ops),
            "vela_args": self.vela_args(),
        }


def memory_modes(board: Board) -> list[str]:
    """The memory configurations legal on the board: ExecuTorch's default and the board's."""
    return [EXECUTORCH_DEFAULT, *(board.npu_memories.modes if board.npu_memories else ())]


def candidates(
    board: Board,
    memories: list[str] | None = None,
    optimises: list[str] | None = None,
    ios: list[str] | None = None,
    layouts: list[str] | None = None,
) -> list[Candidate]:
    """Every combination of the given axes, in that order (default: every memory configuration
    and --optimise the board allows; the program's interface kept: float I/O, the input layout
    as the model has it; `model_layouts` gives the layouts a model can take)."""
    legal = memory_modes(board)
    for name, given, known in (
        ("memory", memories, legal), ("optimise", optimises, VELA_OPTIMISE), ("io", ios, IOS),
        ("input layout", layouts, INPUT_LAYOUTS),
    ):  # fmt: skip
        bad = [g for g in given or () if g not in known]
        if bad:
            raise UsageError(f"tune: unknown {name} {bad[0]!r}; known: {', '.join(known)}")
    return [
        Candidate(m, o, i, input_layout=layout)
        for m in memories or legal
        for o in optimises or VELA_OPTIMISE
        for i in ios or IOS[:1]
        for layout in layouts or [AS_MODEL]
    ]


def cpu_placements(export_report: dict, kernel_ops: set[str] | None = None) -> list[str]:
    """The operators a program's NPU delegates hold (as --cpu-op spells them, the most frequent
    first, at most MAX_PLACEMENTS) that the firmware also has a CPU kernel for: each is a
    placement to try on the CPU. Quantize/dequantize are the delegates' edges, not a choice."""
    from collections import Counter

    if kernel_ops is None:
        from sdk.firmware.kernelgen import load_kernel_specs

        kernel_ops = set(load_kernel_specs())
    counts = Counter(n["target"] for d in export_report["delegates"] for n in d["nodes"])
    found = []
    for target, _ in counts.most_common():
        namespace, _, rest = target.partition(".")
        if namespace != "aten":
            continue
        if f"aten::{rest.rsplit('.', 1)[0]}.out" in kernel_ops:
            found.append(target)
    return found[:MAX_PLACEMENTS]


def model_layouts(model: str, given: list[str] | None = None) -> list[str]:
    """The input layouts to try for MODEL: channels-last too when it takes a 4-D input (the
    only rank that has one); `given` (--input-layout) is checked against that."""
    from sdk.export.model_loader import load_model

    four_d = any(reorderable(tuple(t.shape)) for t in load_model(model).example_inputs)
    legal = list(INPUT_LAYOUTS) if four_d else [AS_MODEL]
    if given and CHANNELS_LAST in given and not four_d:
        raise UsageError(f"tune: {model} takes no 4-D input: no {CHANNELS_LAST} layout to try")
    return list(given) if given else legal


def interface(
    model: str, ios: Sequence[str] | None, layouts: Sequence[str] | None
) -> tuple[list[str], list[str]]:
    """The I/O types and input layouts to try: the given ones (`auto`: every one the model can
    take), by default the model's own interface (float I/O, inputs as the model takes them),
    which the firmware written for the model expects."""
    io_list = list(IOS) if AUTO in (ios or ()) else list(ios or IOS[:1])
    if AUTO in (layouts or ()):
        return io_list, model_layouts(model)
    if set(layouts or [AS_MODEL]) == {AS_MODEL}:  # every model takes that: no need to load it
        return io_list, [AS_MODEL]
    return io_list, model_layouts(model, list(layouts or ()))


@dataclass(frozen=True)
class Plan:
    """What a tuning tries: its candidates, then (`placement`) the best with an operator on
    the CPU. `describe` says it before the first export."""

    candidates: tuple[Candidate, ...]
    placement: bool = True

    def describe(self) -> str:
        """One line: the dimensions that vary (with their values), those kept, the count."""
        axes = {
            "memory": [c.memory for c in self.candidates],
            "--optimise": [c.optimise for c in self.candidates],
            "io": [c.io for c in self.candidates],
            "input layout": [c.input_layout for c in self.candidates],
        }
        varied, kept = [], []
        for name, values in axes.items():
            distinct = list(dict.fromkeys(values))
            (varied if len(distinct) > 1 else kept).append(f"{name} {'|'.join(distinct)}")
        hint = [
            flag for flag, name in (("--io auto", "io"), ("--input-layout auto", "input layout"))
            if len(set(axes[name])) == 1
        ]  # fmt: skip
        n = len(self.candidates)
        plural = "s" if n != 1 else ""
        text = f"tune: {n} candidate{plural}, varying {' x '.join(varied) or 'nothing'}"
        if kept:
            text += f"; kept: {', '.join(kept)}"
            if hint:
                text += f" ({' / '.join(hint)} to vary)"
        then = ["a spilling arena bounded to npu_arena"]
        if self.placement:
            then.append(f"up to {MAX_PLACEMENTS} operators of the best on the CPU")
        return f"{text}; then {' and '.join(then)}"


@dataclass
class Trial:
    """A candidate's figures and verdict."""

    candidate: Candidate
    checked_on: str
    passed: bool
    fits: bool
    failure: str | None = None
    # the run's modelled cycles (qemu checks), else the cycle model of the compiled streams
    npu_cycles: int | None = None
    macs: int | None = None
    macs_per_cycle: int | None = None
    vela_cycles: float | None = None  # Vela's own estimate (cycles_total), for comparison
    cpu_instructions: int | None = None  # the deploy's performance section's (qemu checks)
    memory_bytes: int | None = None  # program blob + planned buffers + NPU arena
    arena_slot: str | None = None
    seconds: float | None = None
    deploy_dir: str | None = None
    placements: list[str] = field(default_factory=list)  # cpu_placements of its program
    report: DeployReport | None = field(default=None, repr=False, compare=False)  # its deploy

    @property
    def utilisation(self) -> float | None:
        if not self.npu_cycles or not self.macs or not self.macs_per_cycle:
            return None
        return self.macs / (self.npu_cycles * self.macs_per_cycle)

    def to_json(self) -> dict:
        return {
            "candidate": self.candidate.to_json(),
            "name": self.candidate.name,
            "checked_on": self.checked_on,
            "passed": self.passed,
            "fits": self.fits,
            "failure": self.failure,
            "npu_cycles": self.npu_cycles,
            "macs": self.macs,
            "mac_utilisation": self.utilisation,
            "vela_estimate_cycles": self.vela_cycles,
            "cpu_instructions": self.cpu_instructions,
            "memory_bytes": self.memory_bytes,
            "arena_slot": self.arena_slot,
            "seconds": self.seconds,
            "deploy_dir": self.deploy_dir,
        }


def npu_timing(program) -> tuple[int | None, int, int | None]:
    """(cycles, MACs, MACs per cycle) of every delegate call's command stream, modelled for the
    memory system it was compiled for (sdk.ethosu.cycles.program_timings); cycles None when a
    delegate cannot be timed (such a trial is never chosen: it would look free)."""
    from sdk.ethosu.cycles import macs_per_cycle, program_timings

    timings = program_timings(program)
    cycles = macs = 0
    per_cycle = None
    for _, call in program.delegate_calls():
        timing = timings.get(call.delegate_index)
        if timing is None:
            return None, macs, per_cycle
        cycles, macs = cycles + timing.cycles, macs + timing.macs
        per_cycle = macs_per_cycle(timing.npu_config)
    return cycles, macs, per_cycle


def npu_only_seconds(board: Board, npu_cycles: int) -> float | None:
    """A host-checked candidate's time: the deploy's latency (sdk.deploy.performance) with no
    CPU instruction counted (the host counts none); None without the board's clocks."""
    from sdk.deploy.performance import Clocks, latency_ms

    clocks = Clocks.of(board)
    return None if clocks is None else latency_ms(clocks, 0, npu_cycles) / 1e3


def evaluate(
    model: str, candidate: Candidate, board: Board, check: str, outdir: Path, cache: Cache,
    **deploy_args: Any,
) -> Trial:  # fmt: skip
    """Deploy the candidate (to QEMU, or the host's command stream) and take its figures; a
    candidate the SDK refuses (does not fit, Vela fails) is a trial that did not pass."""
    import json

    from sdk.deploy.pipeline import deploy
    from sdk.firmware.memory import arena_placement, program_needs
    from sdk.program.pte import load_program
    from sdk.reference.executor import VIRTUAL_NPU_EXECUTOR  # both checks: Vela's stream

    folder = outdir / candidate.slug
    trial = Trial(candidate, CHECKS[check], passed=False, fits=True, deploy_dir=str(folder))
    cpu_ops = [*(deploy_args.pop("cpu_ops", None) or []), *candidate.cpu_ops]
    try:
        report = deploy(
            model, board=board, target=check, io=candidate.io, npu_memory=candidate.memory,
            vela_args=candidate.vela_args(), input_layout=candidate.input_layout, outdir=folder,
            cache=cache, npu_executor=VIRTUAL_NPU_EXECUTOR, cpu_ops=cpu_ops, **deploy_args,
        )  # fmt: skip
    except ResourceError as exc:
        trial.fits, trial.failure = False, exc.message
        return trial
    except SdkError as exc:
        trial.failure = exc.message
        return trial
    trial.passed, trial.failure, trial.report = report.passed, report.failure, report
    try:  # a program the cycle model or the memory plan cannot read: this trial fails alone
        program = load_program(Path(report.files["program"]))
        export = json.loads((Path(report.files["program"]).parent / "report.json").read_text())
        trial.npu_cycles, trial.macs, trial.macs_per_cycle = npu_timing(program)
        trial.memory_bytes = sum(u.used for u in program_needs(program, board))
        trial.arena_slot = arena_placement(program, board).slot
    except SdkError as exc:
        trial.passed, trial.failure = False, f"cannot be timed: {exc.message}"
        return trial
    trial.vela_cycles = (export.get("vela_estimate_total") or {}).get("total_cycles")
    perf = report.performance
    if perf is not None:  # the deploy's own figures (QEMU): the table shows what it reports
        trial.cpu_instructions = perf["cpu_instructions"]
        trial.npu_cycles, trial.macs = perf["npu_cycles_modelled"], perf["npu_macs"]
        trial.seconds = perf["latency_ms"] / 1e3
    elif trial.npu_cycles is not None:
        trial.seconds = npu_only_seconds(board, trial.npu_cycles)
    trial.placements = cpu_placements(export)
    return trial


def choose(trials: list[Trial], goal: str) -> Trial | None:
    """The trial that passed and fits with the least time (latency) or memory (size); the
    other figure breaks ties, then the order tried."""
    check_goal(goal)
    ok = [t for t in trials if t.passed and t.fits and t.npu_cycles is not None]
    if not ok:
        return None

    def time(t: Trial) -> float:
        return t.seconds if t.seconds is not None else float(t.npu_cycles or 0)

    if goal == "latency":
        return min(ok, key=lambda t: (time(t), t.memory_bytes or 0))
    return min(ok, key=lambda t: (t.memory_bytes or 0, time(t)))


@dataclass
class Tuning:
    goal: str
    check: str
    trials: list[Trial]
    chosen: Trial | None
    final: dict | None = None  # the chosen one's deploy: {target, passed, failure}

    def to_json(self) -> dict:
        return {
            "goal": self.goal,
            "checked_on": CHECKS[self.check],
            "chosen": None if self.chosen is None else self.chosen.candidate.name,
            "final_deploy": self.final,
            "trials": [t.to_json() for t in self.trials],
        }


@dataclass(frozen=True)
class Session:
    """A tuning's fixed settings: what it optimises for, on which board, where each candidate
    is checked (CHECKS), the folder its deploys go to and the cache their programs share."""

    goal: str
    board: Board
    outdir: Path
    check: str = "qemu"
    cache: Cache | None = None


def _verdict(trial: Trial) -> str:
    """A candidate's outcome in a progress line: its time, or why it is out."""
    if not trial.fits:
        return f"no fit: {(trial.failure or '')[:120]}"
    if not trial.passed:
        return f"FAIL: {(trial.failure or '')[:120]}"
    if trial.seconds is None:
        return "pass, not timed"
    return f"pass, {trial.seconds * 1e3:.3f} ms"


def tune(
    model: str, session: Session, plan: Plan | None = None, steps: Steps | None = None,
    **deploy_args: Any,
) -> Tuning:  # fmt: skip
    """Try each candidate of `plan` (default: every Vela configuration the board allows, the
    program's interface kept), and, for one whose arena spills out of the board's npu_arena,
    the same with Vela's arena bounded to that slot; then (with `plan.placement`, where QEMU
    counts the CPU's instructions) the best of them with each of cpu_placements on the CPU
    instead. `steps` shows the plan before the first export and each candidate as it ends
    (n/N, its name, its time); the candidates share one quantization of the model."""
    from sdk.deploy.references import shared_quantization
    from sdk.utils.progress import Steps

    goal, board, check = session.goal, session.board, session.check
    check_goal(goal)
    check_where(check)
    if board.npu_kind != "ethos-u55":  # its candidates are the U55's memory systems
        raise UsageError(
            f"tune: board {board.name} has an {board.npu_kind}: tune varies the U55's memory "
            "systems (sdk.ethosu.memories), and the U85's are not modelled there yet"
        )
    if check != "host":
        board.target(check)  # a board without it: a UsageError saying why
    cache = session.cache or Cache()
    plan = plan or Plan(tuple(candidates(board)))
    if check == "host":  # no CPU time counted there: a CPU placement would look free
        plan = replace(plan, placement=False)
    progress = steps or Steps(show=False)
    progress.say(plan.describe())
    todo, placement = list(plan.candidates), plan.placement
    fast = board.slots.get("npu_arena")
    trials: list[Trial] = []
    with shared_quantization():
        while todo:
            candidate = todo.pop(0)
            n = len(trials) + 1
            with progress.step("tune", f"[{n}/{n + len(todo)}] {candidate.name}") as step:
                trial = evaluate(model, candidate, board, check, session.outdir / "candidates",
                                 cache, **deploy_args)  # fmt: skip
                (step.note if trial.passed and trial.fits else step.failed)(_verdict(trial))
            trials.append(trial)
            if trial.arena_slot == "scratch" and fast and candidate.arena_cache_size is None:
                todo.insert(0, replace(candidate, arena_cache_size=fast.size))
            if not todo and placement:
                best, placement = choose(trials, goal), False
                # CPU time is counted on QEMU only: elsewhere a CPU placement would look free
                if (
                    best is not None
                    and best.cpu_instructions is not None
                    and not best.candidate.cpu_ops
                ):
                    todo = [replace(best.candidate, cpu_ops=(op,)) for op in best.placements]
    return Tuning(goal, check, trials, choose(trials, goal))


def tune_and_deploy(
    model: str, session: Session, target: str = "auto", plan: Plan | None = None,
    steps: Steps | None = None, **deploy_args: Any,
) -> DeployReport:  # fmt: skip
    """`sdk deploy --optimize`: tune (its progress on `steps`' terminal), then deploy the
    chosen configuration to `target` (its report, with the `tuning` section). None passed: a
    MismatchError naming each failure."""
    from sdk.deploy.pipeline import deploy
    from sdk.deploy.references import shared_quantization
    from sdk.deploy.report import REPORT_FILE
    from sdk.utils.progress import Steps

    session = replace(session, cache=session.cache or Cache())
    with shared_quantization():  # the final deploy too, when there is no cache to read it from
        tuning = tune(model, session, plan, Steps(show=steps.show if steps else False),
                      **deploy_args)  # fmt: skip
        chosen = tuning.chosen
        if chosen is None:
            failures = "; ".join(f"{t.candidate.name}: {t.failure}" for t in tuning.trials)
            raise MismatchError(f"--optimize {session.goal}: no configuration passed ({failures})")
        c = chosen.candidate
        report = _as_final(chosen, session, target, deploy_args.get("fvp"))
        if report is None:
            cpu_ops = [*(deploy_args.pop("cpu_ops", None) or []), *c.cpu_ops]
            report = deploy(
                model, board=session.board, target=target, io=c.io, npu_memory=c.memory,
                vela_args=c.vela_args(), input_layout=c.input_layout, outdir=session.outdir,
                cache=session.cache, steps=steps, cpu_ops=cpu_ops, **deploy_args,
            )  # fmt: skip
        elif steps is not None:
            steps.say(f"deploy: {c.name} ran on {report.target} as a candidate: that run is "
                      f"the deploy ({chosen.deploy_dir})")  # fmt: skip
    tuning.final = {
        "target": report.target, "passed": report.passed, "failure": report.failure,
        "latency_ms": (report.performance or {}).get("latency_ms"),
    }  # fmt: skip
    report.tuning = tuning.to_json()
    report.write(session.outdir / REPORT_FILE)
    return report


def _as_final(
    chosen: Trial, session: Session, target: str, fvp: Path | None
) -> DeployReport | None:
    """The chosen candidate's deploy as the final one, when it ran where the final deploy would
    (`target`, `auto` resolved as the deploy does): the same program, firmware and inputs, so
    running it again would only repeat it (and the timer's phase against the run's start would
    move its figures by a tick: the table would not show the deploy's latency). Its outputs are
    copied into the session's outdir. None: the final deploy must run."""
    import dataclasses
    import shutil

    from sdk.deploy.pipeline import choose_target
    from sdk.deploy.report import REPORT_FILE
    from sdk.targets.base import RunOptions

    ran = chosen.report
    if ran is None or target not in ("auto", ran.target):
        return None
    if (
        target == "auto"
        and choose_target(target, session.board, RunOptions(fvp=fvp))[0] != ran.target
    ):
        return None
    outdir = session.outdir
    outdir.mkdir(parents=True, exist_ok=True)
    outputs = outdir / "outputs.npz"
    shutil.copyfile(ran.files["outputs"], outputs)
    files = {**ran.files, "outputs": str(outputs), "report": str(outdir / REPORT_FILE)}
    return dataclasses.replace(ran, files=files)


def _number(value: float | int | None, form: str = ",.0f") -> str:
    return "-" if value is None else format(value, form)


def render_table(tuning: dict) -> str:
    """What was tried (Tuning.to_json()), one line each; `*` marks the chosen."""
    width = max([len("configuration"), *(len(t["name"]) for t in tuning["trials"])])
    header = (
        f"  {'configuration':{width}} {'verdict':7} {'NPU cycles':>11} {'Vela est.':>11} "
        f"{'MAC util':>8} {'CPU instr':>10} {'ms':>8} {'bytes':>11}"
    )
    lines = [f"tried ({tuning['goal']}; outputs checked on {tuning['checked_on']}):", header]
    for t in tuning["trials"]:
        mark = "*" if t["name"] == tuning["chosen"] else " "
        verdict = "pass" if t["passed"] and t["fits"] else ("no fit" if not t["fits"] else "FAIL")
        ms = None if t["seconds"] is None else t["seconds"] * 1e3
        lines.append(
            f"{mark} {t['name']:{width}} {verdict:7} {_number(t['npu_cycles']):>11} "
            f"{_number(t['vela_estimate_cycles']):>11} {_number(t['mac_utilisation'], '.1%'):>8} "
            f"{_number(t['cpu_instructions']):>10} {_number(ms, '.3f'):>8} "
            f"{_number(t['memory_bytes']):>11}"
        )
        if t["failure"]:
            lines.append(f"    {t['failure'][:160]}")
    lines.append(f"chosen: {tuning['chosen'] or 'none passed'}")
    chosen = next((t for t in tuning["trials"] if t["name"] == tuning["chosen"]), None)
    changed = _interface_change(chosen["candidate"]) if chosen else None
    if changed:
        lines.append(f"NOTE: {changed}")
    final = tuning.get("final_deploy")
    if final is not None:
        verdict = "passed" if final["passed"] else f"FAILED: {final['failure']}"
        latency = final.get("latency_ms")
        at = "" if latency is None else f", latency {latency:.3f} ms"
        lines.append(f"deployed to {final['target']}: {verdict}{at}")
    return "\n".join(lines)


def _interface_change(candidate: dict) -> str | None:
    """What the chosen program's interface changes for the firmware that feeds it (--io auto,
    --input-layout auto let the tuner choose it), or None."""
    changes = []
    if candidate["io"] != IOS[0]:
        changes.append(f"takes and returns {candidate['io']} (quantized) values, not float")
    if candidate["input_layout"] != AS_MODEL:
        changes.append(f"takes its 4-D inputs {candidate['input_layout']}")
    if not changes:
        return None
    return f"the chosen program {' and '.join(changes)}: firmware feeding it must do so too"
