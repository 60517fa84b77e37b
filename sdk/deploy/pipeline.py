"""`sdk deploy` as Python: model -> program -> registrations -> memory check -> firmware ->
run on the target -> compare with the host reference and both PyTorch models -> report.

    report = deploy("examples/yolo_attention.py", board="corstone300", quant="int16")
    report.passed, report.to_json()

Each step is the library's own code (export, kernelgen, the memory check, the firmware build,
the run targets, the host reference); this module only orders them, caches what can be
cached (the program and the firmware, content-addressed: sdk.cache) and records what ran
where. Everything that can be refused (unknown board, target unavailable, a model that does
not fit) is refused before the long steps that do not need it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sdk.cache import Cache, digest
from sdk.deploy.evaluation import (
    DATASET_OUTPUTS_FILE,
    dataset_note,
    join_vela_estimates,
    profile_of,
    validate_dataset,
)
from sdk.deploy.keys import (
    FIRMWARE_KIND,
    PROGRAM_KIND,
    REFERENCE_KIND,
    firmware_key_parts,
    program_key_parts,
    reference_key_parts,
    vela_key,
)
from sdk.deploy.performance import Clocks, add_profile_latency, performance
from sdk.deploy.references import (
    EXPORT_DIR,
    HOST_OUTPUTS_FILE,
    INPUTS_FILE,
    REFERENCE_FILES,
    export_into,
    reference_into,
)
from sdk.deploy.report import REPORT_FILE, DeployReport, placement_of, timing_entries
from sdk.deploy.verdict import HOST_MISMATCH, judge_outputs
from sdk.errors import ModelLoadError, SdkError, UsageError, check_choice
from sdk.ethosu.config import NpuConfig, QuantMode
from sdk.ethosu.memories import VELA_CONFIG_DIR, vela_memory
from sdk.evaluation.accuracy import REFERENCES, Tolerance
from sdk.evaluation.compare import DEFAULT_RTOL
from sdk.evaluation.dataset import Thresholds, content_digest
from sdk.export import ETRECORD_FILE
from sdk.export.model_loader import ModelSpec
from sdk.export.quant_options import QuantOptions
from sdk.firmware.boards import DEFAULT_BOARD, Board, load_board
from sdk.program.integer_io import IoSection, check_io
from sdk.program.layout import AS_MODEL, check_input_layout
from sdk.program.pte import load_program
from sdk.reference.executor import NPU_EXECUTORS, VIRTUAL_NPU_EXECUTOR
from sdk.targets.base import RunOptions, Target
from sdk.targets.run import (
    DEPLOY_TARGETS,
    REFERENCE_TARGET,
    auto_target,
    auto_targets,
    make_target,
    require_available,
)
from sdk.utils.npz import read_arrays, write_arrays
from sdk.utils.progress import FAILED, StepHandle, StepRecord, Steps

FIRMWARE_FILE = "executor_runner.elf"
REGISTRATIONS_DIR = "registrations"  # inside a firmware entry: the kernels it was built with

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Entry:
    path: Path
    key: str
    hit: bool


def choose_target(name: str, board: Board, options: RunOptions) -> tuple[str, str, Target]:
    """(name, why, target): `auto` is the FVP when installed, else QEMU with the virtual NPU.
    The target must be available here; said before anything is exported or built.

    `host` only with the command-stream executor: Vela's command stream on the host's
    functional U55 (the bits QEMU's virtual U55 computes), held to the TOSA host reference;
    what `sdk tune` checks candidates with when a QEMU run each is too dear."""
    if name == REFERENCE_TARGET:
        if options.npu_executor != VIRTUAL_NPU_EXECUTOR:
            raise UsageError(
                f"target {REFERENCE_TARGET} is the reference itself: deploy to it only with "
                f"--npu-executor {VIRTUAL_NPU_EXECUTOR} (Vela's command stream on the host)"
            )
        return name, "given: the command stream on the host", make_target(name, board, options)
    if name not in DEPLOY_TARGETS:
        raise UsageError(
            f"unknown deploy target {name!r}; choose one of {', '.join(DEPLOY_TARGETS)}"
        )
    why = "given"
    if name == "auto":
        found = {
            t: make_target(t, board, options).strategy.availability(options)
            for t in auto_targets(board)
        }
        name = auto_target(found, board)
        why = "auto: " + ", ".join(
            f"{t} {'found' if a.available else 'not found'}" for t, a in found.items()
        )
    chosen = make_target(name, board, options)
    chosen.strategy.preflight(options)  # what the user must give (--port, --place) first
    require_available(chosen, options)
    return name, why, chosen


def cached(cache: Cache, kind: str, parts: dict, fill, scratch: Path) -> Entry:
    """The entry for `parts` from the cache, or filled now (atomically); without a cache,
    filled into `scratch` (replaced whole)."""
    key = digest(parts)
    if not cache.enabled:
        shutil.rmtree(scratch, ignore_errors=True)  # --no-cache: a working folder, not an entry
        scratch.mkdir(parents=True)
        fill(scratch)
        return Entry(scratch, key, False)
    hit = cache.get(kind, key)
    if hit is not None:
        return Entry(hit, key, True)
    return Entry(cache.put(kind, key, fill, parts), key, False)


def build_into(folder: Path, board: Board, kernels: list, npu: str) -> None:
    """A firmware entry: the kernel registrations the deploy selected (made once, here) and
    the firmware SCons builds from them."""
    from sdk.firmware.build import build_firmware
    from sdk.firmware.kernelgen import write_registrations

    write_registrations(kernels, folder / REGISTRATIONS_DIR)
    build_firmware(
        board.name, None, folder / FIRMWARE_FILE, npu=npu, registrations=folder / REGISTRATIONS_DIR
    )


def deploy(
    model: str,
    *,
    board: str | Board = DEFAULT_BOARD,
    target: str = "auto",
    npu: str | None = None,
    quant: str = "int8",
    io: str = "float",
    cpu_ops: list[str] | None = None,
    inputs: Path | None = None,
    port: str | None = None,
    baud: int | None = None,
    fvp: Path | None = None,
    timeout_s: float = 120.0,
    outdir: Path | None = None,
    cache: Cache | None = None,
    steps: Steps | None = None,
    host_rtol: float = DEFAULT_RTOL,
    tolerance: Tolerance | None = None,
    npu_executor: str | None = None,
    quant_options: QuantOptions | None = None,
    dataset: Path | None = None,
    dataset_thresholds: Thresholds | None = None,
    npu_memory: str | None = None,
    vela_args: list[str] | None = None,
    input_layout: str = AS_MODEL,
    calibration: Path | None = None,
    **farm,
) -> DeployReport:
    """Deploy MODEL (file.py[:Name]) to BOARD and check it. Errors a user can cause are
    SdkErrors before the step that needs them; a run whose outputs fail the verdict
    (sdk.deploy.verdict: equal to the host reference within `host_rtol`, within `tolerance`
    of the quantized model) returns a report with `passed=False` and `failure` naming the
    output (the CLI exits 4).

    `npu_executor` is what runs the delegates on a target without an NPU (QEMU's virtual NPU,
    sdk.reference.executor.NPU_EXECUTORS; default `command-stream`); the host reference always runs
    the saved TOSA, so by default a deploy checks Vela's command stream against the TOSA
    graph it was compiled from.

    `dataset` (sdk.evaluation.dataset): also run every sample of D.npz on the loaded program and
    report the data-set figures; the deploy then passes only when they meet
    `dataset_thresholds` too.

    `io="int"`: the program takes and returns integers (sdk.export.integer_io); the user's
    float inputs are quantized here with the program's input scale/zero-point, its integer
    outputs must equal the host reference's, and dequantized they are held to the quantized
    PyTorch model as float outputs are.

    `npu_memory`: the board's NPU memory mode Vela compiles for (board.yaml npu_memories; None:
    the board's default, else ExecuTorch's default configuration, `executorch`); `vela_args`:
    extra Vela flags (e.g. --optimise=Size). Both are in the program's cache key.

    `input_layout="channels-last"`: the program takes its 4-D inputs channels-last (NHWC), so
    the NPU needs no input transpose (sdk.program.layout); the user's inputs stay NCHW, and the
    firmware and the host reference are handed them in the program's dim order.

    `calibration`: a .npz or a folder of images to calibrate the quantization with
    (sdk.export.calibration; default the model's calibration_inputs(), else its example inputs),
    in the program's cache key by content.

    `farm`: RunOptions fields for a board in a labgrid farm (place, coordinator,
    acquire_timeout_s) and for the host flashing a board itself (drive, probe)."""
    from sdk.ethosu.cycles import program_memory_systems
    from sdk.firmware.kernelgen import (
        load_kernel_specs,
        program_kernel_uses,
        render_manifest,
        select_kernels,
    )
    from sdk.firmware.memory import arena_placement, check_fits, elf_region_use, program_needs

    spec = board if isinstance(board, Board) else load_board(board)
    npu_config = NpuConfig.parse(spec.npu_config(npu))
    quant_mode = QuantMode.parse(quant)
    check_io(io)
    check_input_layout(input_layout)
    quant_options = quant_options or QuantOptions()
    model_spec = ModelSpec.parse(model)
    if not model_spec.path.is_file():
        raise ModelLoadError(f"{model_spec.path}: model file not found")
    if inputs is not None and not Path(inputs).is_file():
        raise UsageError(f"{inputs}: inputs file not found")
    cache = cache or Cache()
    steps = steps or Steps(show=False)
    cpu_ops = list(cpu_ops or [])
    vela_args = list(vela_args or [])
    memory = vela_memory(spec.npu_memories, npu_memory, cache.root / VELA_CONFIG_DIR)
    if npu_executor is not None:
        check_choice("--npu-executor", npu_executor, NPU_EXECUTORS, quoted=False)
    outdir = Path(outdir or Path("out") / "deploy" / model_spec.stem).resolve()
    (outdir / REPORT_FILE).unlink(missing_ok=True)  # a failed deploy leaves no old verdict
    reach = {"port": port, "baud": baud, "fvp": fvp, **farm}  # how the target is reached
    options = RunOptions(
        timeout_s=timeout_s, workdir=outdir / "run", npu_executor=npu_executor, **reach
    )
    target_name, target_why, chosen = choose_target(target, spec, options)

    with steps.step("export", "export + quantize + Vela") as step:
        parts = program_key_parts(
            model_spec,
            inputs,
            npu_config.value,
            quant_mode.value,
            cpu_ops,
            quant_options.to_json(),
            io,
            vela_key(memory, vela_args),
            input_layout,
            calibration,
        )
        if dataset is not None:  # a .npz or a folder of images
            parts["dataset"] = content_digest(dataset)
        fill = lambda folder: export_into(  # noqa: E731
            folder,
            model_spec,
            inputs,
            npu_config,
            quant_mode,
            cpu_ops,
            outdir,
            quant_options,
            dataset,
            io,
            memories=memory.spec,
            vela_args=vela_args,
            input_layout=input_layout,
            calibration=calibration,
            progress=step.progress,
        )
        program_entry = cached(cache, PROGRAM_KIND, parts, fill, outdir / "program")
        if program_entry.hit:
            step.cached("the program from the cache")
    export_dir = program_entry.path / EXPORT_DIR
    program = load_program(export_dir / "model.pte")
    export_report = _read_json(export_dir / "report.json")
    io_section = IoSection.from_json(export_report.get("io"))
    # The user's inputs as the program takes them (quantized here with --io int).
    run_inputs = io_section.quantize_inputs(read_arrays(program_entry.path / INPUTS_FILE))

    with steps.step("kernels", "kernel registrations") as step:
        kernels = select_kernels(program_kernel_uses(program), load_kernel_specs())
        step.note(", ".join(k.spec.op for k in kernels) or "no CPU kernels")

    with steps.step("memory", "memory check") as step:
        needs = program_needs(program, spec)
        check_fits(needs, spec)
        arena = arena_placement(program, spec)
        if arena.delegate is not None:
            step.note(f"NPU arena in {arena.memory} (slot {arena.slot}): {arena.why}")

    firmware_entry = None
    elf_use = []
    with steps.step("build", "firmware build") as step:

        def build() -> Path:
            """The firmware for this program, from the cache or built now."""
            nonlocal firmware_entry
            fw_parts = firmware_key_parts(spec, render_manifest(kernels), npu_config.value)
            firmware_entry = cached(
                cache, FIRMWARE_KIND, fw_parts,
                lambda f: build_into(f, spec, kernels, npu_config.value),
                outdir / "firmware",
            )  # fmt: skip
            if firmware_entry.hit:
                step.cached("the firmware from the cache")
            return firmware_entry.path / FIRMWARE_FILE

        # An emulator boots the image (built here); a board runs what it has (the reason).
        image = chosen.strategy.image(options, build)
        if image is None:
            step.skip(chosen.strategy.without_image)
        else:
            elf_use = elf_region_use(image, spec)
            check_fits(elf_use, spec)

    run_options = dataclasses.replace(options, firmware=image)
    clocks = Clocks.of(spec)
    program.check_inputs(run_inputs)
    dataset_section = None
    profile = None
    # What failed after the target ran: the report says it beside what ran (a later step's
    # error never drops the run's outputs, its profile or its timing).
    late = _LateFailures(steps)
    with chosen.strategy.up(run_options, program, inputs=run_inputs) as running:
        running.watch_transfers(steps.transfer)  # a serial line: expected time, progress
        with steps.step("run", f"run on {target_name}"):
            run = running.run(program, run_inputs, run_options)
            write_arrays(outdir / "outputs.npz", run.outputs)
        with late.step("profile", "profile of the run", shown=False):
            profile = profile_of(running, program, outdir)
            if profile is not None:  # the export's ETRecord: Inspector names the operators
                profile["etrecord"] = str(export_dir / ETRECORD_FILE)
                join_vela_estimates(profile, export_report)
                add_profile_latency(profile, run.timing.npu_modelled, clocks)
        if dataset is not None:
            with late.step("dataset", f"data set on {target_name}") as step:
                dataset_section = validate_dataset(
                    running, program, program_entry.path, run_options, dataset_thresholds,
                    steps.show, outdir / DATASET_OUTPUTS_FILE, io_section,
                )  # fmt: skip
                dataset_section["file"] = str(dataset)  # the user's, not the cache's copy
                step.note(dataset_note(dataset_section))

    reference_entry = None
    host_outputs = None
    with late.step("reference", "host reference") as step:
        # The host reference is a function of the program, its saved TOSA, the inputs and the
        # reference's code and packages (the key): an unchanged deploy reads its outputs back.
        reference_entry = cached(
            cache, REFERENCE_KIND,
            reference_key_parts(export_dir, program_entry.path / INPUTS_FILE),
            lambda f: reference_into(f, program, run_inputs),
            outdir / "reference",
        )  # fmt: skip
        if reference_entry.hit:
            step.cached("the host reference's outputs from the cache")
        host_outputs = read_arrays(reference_entry.path / HOST_OUTPUTS_FILE)

    checks, failure, warnings = [], None, []
    with late.step("compare", "compare") as step:
        if host_outputs is None:
            step.skip("no host reference to compare with")
        else:
            references = {
                r: read_arrays(program_entry.path / REFERENCE_FILES[r]) for r in REFERENCES
            }
            checks, failure, warnings = judge_outputs(
                run.outputs, host_outputs, references, quant_mode.value, tolerance or Tolerance(),
                host_rtol, io_section.output_scales(program), io_section,
            )  # fmt: skip
    if failure is not None and failure.startswith(HOST_MISMATCH) and program.plan.delegates:
        failure += (
            f" (which side: `sdk run --target host --npu-executor command-stream {program.path}` "
            "runs Vela's command stream on the host; equal to the target, the stream is not the "
            "TOSA graph it was compiled from, a Vela miscompile: keep its operator on the CPU "
            "with --cpu-op)"
        )
    if late.failures:
        failure = "; ".join(
            [f"the target ran (its outputs in {outdir / 'outputs.npz'}), then " + late.failures[0]]
            + late.failures[1:]
            + ([failure] if failure else [])
        )

    report = DeployReport(
        model=model,
        board=spec.name,
        target=target_name,
        target_why=target_why,
        board_use=run.board_use,
        npu=npu_config.value,
        quant=quant_mode.value,
        io=io_section.to_json(),
        vela=vela_key(memory, vela_args),
        quantization=export_report.get("quantization", quant_options.to_json()),
        passed=failure is None
        and not late.failures
        and bool(checks)
        and all(c.ok for c in checks)
        and (dataset_section is None or dataset_section["passed"]),
        failure=failure or (dataset_section or {}).get("failure"),
        warnings=warnings,
        steps=steps.records,
        cache={
            "root": str(cache.root),
            "enabled": cache.enabled,
            PROGRAM_KIND: {"key": program_entry.key, "hit": program_entry.hit},
            FIRMWARE_KIND: None
            if firmware_entry is None
            else {"key": firmware_entry.key, "hit": firmware_entry.hit},
            REFERENCE_KIND: None
            if reference_entry is None
            else {"key": reference_entry.key, "hit": reference_entry.hit},
        },
        placement=placement_of(
            program,
            export_report,
            # A target that has an NPU but whose firmware drove the host's virtual one (the
            # FVP stand-in) ran its delegates there: the run says so.
            None if run.npu_run is not None and run.npu_run.executor else chosen.npu,
            npu_executor or VIRTUAL_NPU_EXECUTOR,
            npu_config.value,
        ),
        npu_run=run.npu_run.to_json() if run.npu_run else None,
        dataset=dataset_section,
        profile=profile,
        outputs=checks,
        timing=timing_entries(export_report, run.timing, clocks),
        performance=performance(
            run.timing.instructions,
            run.timing.npu_modelled,
            clocks,
            npu_config.value,
            program_memory_systems(program).values(),
            len(program.plan.delegates),
        ),
        memory=[u.to_json() for u in [*needs, *elf_use]],
        npu_arena=arena.to_json() if arena.delegate is not None else None,
        arenas=None if run.memory is None else vars(run.memory),
        files={
            "program": str(program.path),
            "firmware": str(firmware_entry.path / FIRMWARE_FILE) if firmware_entry else None,
            "log": str(run.log_path) if run.log_path else None,
            "outputs": str(outdir / "outputs.npz"),
            "report": str(outdir / REPORT_FILE),
        },
    )
    report.write(outdir / REPORT_FILE)
    return report


class _LateFailures:
    """The steps after the target ran: each one's error is kept (the step marked failed, its
    reason for the report), not raised, so the deploy still reports what ran."""

    def __init__(self, steps: Steps) -> None:
        self.steps = steps
        self.failures: list[str] = []

    @contextlib.contextmanager
    def step(self, name: str, label: str, shown: bool = True) -> Iterator[StepHandle]:
        """steps.step(name, label), whose error becomes a failure; `shown=False`: no step of
        its own in the report unless it fails (the profile is part of the run step)."""
        try:
            if shown:
                with self.steps.step(name, label) as handle:
                    yield handle
            else:
                yield StepHandle(StepRecord(name))
        except Exception as exc:  # whatever failed, the run's results stay
            if not shown:
                self.steps.records.append(StepRecord(name, FAILED, 0.0, str(exc)))
            else:
                self.steps.records[-1].detail = str(exc)
            what = str(exc) if isinstance(exc, SdkError) else f"{type(exc).__name__}: {exc}"
            self.failures.append(f"{label} failed: {what}")
            if not isinstance(exc, SdkError):
                log.warning("%s failed after the run", label, exc_info=True)


def _read_json(path: Path) -> dict:
    import json

    return json.loads(path.read_text())
