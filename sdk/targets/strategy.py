"""The strategy: how every firmware target gets from off to "firmware running, program loaded"
and runs it over the host link (labgrid's shape: sdk.targets.resources are data,
sdk.targets.drivers do the I/O, this module decides the order).

    off --power.on(image)--> firmware running (a link session, connected)
        --LOAD / LOAD_SLOT--> program loaded --SET_INPUT, RUN, GET_OUTPUT--> outputs

`sdk run`, `sdk deploy`, the pytest plugin's `dut` and the tests all go through `up()` (a
target kept running for many programs) or `run_program()` (one program, one bring-up). The
firmware image comes from the run's options (a built ELF), else the flash driver asks for one:
an emulator boots a firmware built here for the program's operators (or with every kernel when
no program is known yet); a board runs what was flashed on it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sdk.errors import FirmwareRefused, TargetError, UsageError
from sdk.evaluation.profile import Profile, build_profile
from sdk.firmware.boards import Board
from sdk.firmware.build import build_firmware
from sdk.link.session import LinkSession, Timeouts, TransferProgress
from sdk.link.transport import DEFAULT_BAUD, open_port
from sdk.program.layout import program_inputs
from sdk.program.pte import LoadedProgram
from sdk.targets.base import Availability, RunOptions, RunReport
from sdk.targets.drivers import Console, FlashDriver, PowerDriver
from sdk.targets.emulator import Preload
from sdk.targets.linked import missing_kernels, npu_run_of, program_ops, run_linked

FIRMWARE_FILE = "executor_runner.elf"
# What the host flashes when the running firmware lacks a program's kernels: every kernel,
# so that the board keeps it for the programs after this one (a farm's firmware).
KEPT_FIRMWARE_FILE = "every_kernel.elf"


@dataclass(frozen=True)
class BoardUse:
    """What a run on a board used: its place in a farm, and whether the firmware it was
    running was kept (it had every kernel the program calls) or flashed again."""

    place: str | None
    firmware: str | None  # "kept", "flashed", or None (not asked: the board did not list them)
    detail: str

    def to_json(self) -> dict:
        return {"place": self.place, "firmware": self.firmware, "firmware_detail": self.detail}

    @staticmethod
    def describe(data: dict) -> str:
        """One line of `to_json()`'s data (as reports keep it)."""
        place = f"place {data['place']}; " if data["place"] else ""
        return f"{place}firmware {data['firmware'] or 'as found'}: {data['firmware_detail']}"


@dataclass
class Running:
    """A firmware target brought up: its link session (connected on first use), the folder of
    its logs, and the program preloaded at power-on, if any."""

    strategy: LinkStrategy
    session: LinkSession
    workdir: Path
    preloaded: LoadedProgram | None = None
    followed: LoadedProgram | None = None  # the program power.follow last checked
    board_use: BoardUse | None = None  # a board's (None: an emulator booted its image)

    def run(
        self, program: LoadedProgram, inputs: list[np.ndarray], options: RunOptions
    ) -> RunReport:
        """Load `program` (unless it is loaded), run it on `inputs` and check the outputs."""
        if program is not self.followed:  # once per program, not once per sample
            self.strategy.power.follow(program)  # what the running board cannot take is said
            self.followed = program
        arrays, record = run_linked(
            self.session,
            program,
            inputs,
            iterations=options.iterations,
            preloaded=program is self.preloaded,
            tosa_dir=options.tosa_dir,
            npu_executor=options.npu_executor,
        )
        init_ticks, run_ticks, reported_hz = record.ticks()
        virtual_npu = record.result is not None and record.result.virtual_npu_ticks > 0
        return RunReport(
            target=self.strategy.name,
            board=self.strategy.board.name,
            outputs=arrays,
            timing=dataclasses.replace(
                self.strategy.power.timing(
                    init_ticks, run_ticks, reported_hz, virtual_npu, npu_cycles=record.npu_cycles
                ),
                npu_modelled=record.npu_modelled,
            ),
            memory=record.memory,
            npu_run=npu_run_of(self.session, program),
            log_path=self.session.log.path,
            board_use=self.board_use.to_json() if self.board_use else None,
        )

    def watch_transfers(self, progress: TransferProgress) -> None:
        """The session's large transfers over a serial line: `progress` hears of each (its
        expected time before it starts, then its progress); emulators move them outside the
        UART, and a transfer over one is not timed by the line (expected 0)."""
        self.session.on_transfer = progress

    def profile(self, program: LoadedProgram) -> Profile | None:
        """Where the last run's time went, per instruction (its last iteration): the
        firmware's PROFILE events in this target's clock (instructions on QEMU). None when
        the firmware keeps none (older firmware on a board, a program of no instruction)."""
        try:
            header, events = self.session.profile()
        except FirmwareRefused:
            return None
        power = self.strategy.power
        clock = power.timing(0, 0, header["tick_hz"])  # the target's own rate and source

        def instructions(ticks: int) -> int | None:
            return power.timing(0, ticks, header["tick_hz"]).instructions

        header = {**header, "tick_hz": clock.tick_hz or header["tick_hz"]}
        return build_profile(program, header, events, clock.source, instructions)


class LinkStrategy:
    """Brings a firmware target up and runs programs on it over the link."""

    def __init__(self, name: str, board: Board, power: PowerDriver, flash: FlashDriver) -> None:
        self.name = name
        self.board = board
        self.power = power
        self.flash = flash

    @property
    def npu(self) -> str | None:
        return self.power.npu

    @property
    def without_image(self) -> str:
        return self.flash.without_image

    def availability(self, options: RunOptions | None = None) -> Availability:
        return self.power.availability(options)

    def preflight(self, options: RunOptions) -> None:
        """What makes a run impossible, said before anything is read or built."""
        self.check_options(options)
        try:
            self.power.preflight(options)
        except TargetError as exc:
            raise TargetError(f"target {self.name} is not available here: {exc.message}") from None

    def check_options(self, options: RunOptions) -> None:
        if options.npu_executor is not None and self.power.npu is not None:
            raise UsageError(
                f"--npu-executor {options.npu_executor}: {self.name} runs delegates on its own "
                f"NPU ({self.power.npu}); the executor chooses what runs them on a target without "
                "one (qemu)"
            )
        if options.npu_trace is not None:
            raise UsageError("--npu-trace needs --target host --npu-executor command-stream")

    def image(self, options: RunOptions, build: Callable[[], Path]) -> Path | None:
        """The firmware to power on with: the run's own (options.firmware), else what the
        flash driver asks for (`build` makes it), else None (a board runs what it has)."""
        if options.firmware is not None:
            return Path(options.firmware)
        return self.flash.image_for_run(build)

    @contextlib.contextmanager
    def up(
        self,
        options: RunOptions,
        program: LoadedProgram | None = None,
        preloads: Sequence[Preload] = (),
        inputs: Sequence[np.ndarray] | None = None,
    ) -> Iterator[Running]:
        """The target running its firmware (built for `program`'s operators when one is needed
        and none was given; every kernel without a program), with a link session on its
        console, until the block ends. `program` large enough is preloaded where the target
        boots (LOAD_SLOT), and so are its first run's large `inputs` (SET_INPUT_SLOT);
        `preloads` are further files for its memory (tests)."""
        self.preflight(options)
        workdir = Path(options.workdir or tempfile.mkdtemp(prefix=f"sdk-{self.name}-")).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        if program is not None:
            self.power.follow(program)
        image = self.image(options, lambda: self._build(program, workdir))
        placed = list(preloads)
        preloaded = None
        slot_inputs: dict = {}
        if program is not None and image is not None:
            extra = self.power.preloads(program, workdir, options)
            preloaded = program if extra else None
            placed += extra
            if inputs is not None:
                program.check_inputs(inputs)
                files, slot_inputs = self.power.input_preloads(
                    program_inputs(program, inputs), workdir
                )
                placed += files
        with self.power.on(image, workdir, placed, options) as console:
            session = self._session(console, workdir / "link.log", options)
            if slot_inputs:
                assert program is not None
                session.slot_inputs = slot_inputs
                session.slot_program = hashlib.sha256(program.data).digest()
            try:
                use = None
                if image is None:  # a board running what it has: kept, or flashed again
                    use = BoardUse(console.place, None, "the firmware running on the board")
                    if program is not None:
                        use, session = self._keep_or_flash(console, session, program, options)
                yield Running(self, session, workdir, preloaded, board_use=use)
            except TargetError as exc:
                raise console.explain(exc) from None
            finally:
                session.close()

    def _session(self, console: Console, log: Path, options: RunOptions) -> LinkSession:
        try:
            port = open_port(console.url, console.baud or DEFAULT_BAUD, console.emulated)
        except TargetError as exc:
            raise console.explain(exc) from None
        session = LinkSession(
            port,
            board=self.board.name,
            log_path=log,
            timeouts=Timeouts(run=options.timeout_s),
            port_name=console.url,
            console_log=console.console_log,
        )
        session.files_dir = console.files
        if not console.emulated:  # a serial line: 10 bits a byte (8N1)
            session.line_bytes_per_second = (console.baud or DEFAULT_BAUD) / 10
        return session

    def _keep_or_flash(
        self, console: Console, session: LinkSession, program: LoadedProgram, options: RunOptions
    ) -> tuple[BoardUse, LinkSession]:
        """Ask the running firmware which kernels it has: keep it when it has every one the
        program calls; else, where the host may flash the board and reset it, flash the
        firmware with every kernel and reset (the board keeps it for the next programs).
        Otherwise the run names what is missing (sdk.targets.linked.check_kernels)."""
        session.connect()
        missing = missing_kernels(session.info, program)
        if missing is None:
            return BoardUse(console.place, None, "the firmware does not list its kernels"), session
        if not missing:
            detail = (
                f"the running firmware has every kernel the program calls ({program_ops(program)})"
            )
            return BoardUse(console.place, "kept", detail), session
        if not self.flash.can_flash or console.reset is None:
            return BoardUse(console.place, None, "the board cannot be flashed from here"), session
        elf = build_firmware(self.board.name, None, session.log.path.parent / KEPT_FIRMWARE_FILE)
        result = self.flash.flash(elf)
        console.reset()
        log = session.log.path
        session.close()
        log.replace(log.with_name("link.before-flash.log"))  # the INFO that lacked them
        session = self._session(console, log, options)
        try:
            session.connect()
        except BaseException:
            session.close()
            raise
        still = missing_kernels(session.info, program)
        if still:
            session.close()
            raise TargetError(
                f"flashed {elf.name} ({result.method}) and reset the board, but its firmware "
                f"still lacks {', '.join(still)}"
            )
        detail = (
            f"the running firmware lacked {', '.join(missing)}: flashed {elf.name} (every "
            f"kernel, {result.method}) and reset the board"
        )
        return BoardUse(console.place, "flashed", detail), session

    def flash_firmware(self, elf: Path, options: RunOptions, method: str | None = None):
        """Put `elf` on the board while it is held (a farm's place is acquired for it), then
        reset it where it can be (its power switch): `sdk flash --target labgrid`."""
        if not self.flash.without_image:
            raise UsageError(f"{self.name} boots the image it is given: there is nothing to flash")
        self.preflight(options)
        workdir = Path(options.workdir or tempfile.mkdtemp(prefix=f"sdk-{self.name}-")).resolve()
        with self.power.on(None, workdir, [], options) as console:
            result = self.flash.flash(elf, method)
            if console.reset is not None:
                console.reset()
        return result

    def run_program(
        self, program: LoadedProgram, inputs: list[np.ndarray], options: RunOptions
    ) -> RunReport:
        """One program, one bring-up: inputs checked first, then up, run, check, down."""
        program.check_inputs(inputs)
        with self.up(options, program, inputs=inputs) as running:
            return running.run(program, inputs, options)

    def _build(self, program: LoadedProgram | None, workdir: Path) -> Path:
        pte = None
        if program is not None:
            pte = program.path
            if pte is None:
                pte = workdir / "program.pte"
                pte.write_bytes(program.data)
        return build_firmware(self.board.name, pte, workdir / FIRMWARE_FILE)
