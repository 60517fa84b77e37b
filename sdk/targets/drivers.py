"""Drivers: the I/O of a target, each bound to its resources (sdk.targets.resources).

- A power driver brings the board's CPU up running a firmware image and down again, and gives
  the console UART the link runs on (`Console`): an emulator's process (sdk.targets.qemu,
  sdk.targets.fvp) or a board that is simply on (sdk.targets.serial).
- A flash driver puts a firmware image where the board runs it from: an emulator boots the
  image it is handed at power-on (`BootImage`); a board keeps what was flashed on it until
  `sdk flash` replaces it (`BoardFlash`, board.yaml `flash:`).

The strategy (sdk.targets.strategy) is the one user of both; no caller asks what kind of driver
it has.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from sdk.errors import TargetError
from sdk.link.bigio import SlotInput
from sdk.program.pte import LoadedProgram
from sdk.targets.base import Availability, RunOptions, Timing
from sdk.targets.emulator import Preload
from sdk.targets.resources import FlashMethods

if TYPE_CHECKING:
    from sdk.targets.flash import FlashResult


@dataclass
class Console:
    """The console UART of a running board, for the link: a pyserial URL, and where the
    emulator copies the UART's output (None for a board). `explain` words a link failure
    (an emulator that exited says so); `reset` power-cycles the board (None: it cannot be)."""

    url: str
    baud: int | None  # None: the link's default (a TCP socket has none)
    console_log: Path | None = None
    explain: Callable[[TargetError], TargetError] = lambda exc: exc
    reset: Callable[[], None] | None = None
    place: str | None = None  # the farm's name for the board (labgrid), if it has one
    # Where the firmware's semihosting file writes land (an emulator's working directory):
    # large outputs come back there (GET_OUTPUT_FILE). None: no semihosting (a board).
    files: Path | None = None

    @property
    def emulated(self) -> bool:
        """An emulator's UART (it copies the output to console_log): a socket the emulator
        serves to this host alone, closed with the emulator."""
        return self.console_log is not None


class PowerDriver(Protocol):
    """Brings the board up running an image, and down again, around a `with` block."""

    npu: str | None  # what runs NPU delegates itself (None: the host's virtual U55)

    def availability(self, options: RunOptions | None = None) -> Availability:
        """Can it run here (binary installed, port open)? Cheap, nothing started."""
        ...

    def preflight(self, options: RunOptions) -> None:
        """A TargetError/UsageError, before anything is built, when a run cannot start."""
        ...

    def follow(self, program: LoadedProgram) -> None:
        """Take what the program asks of the board (the FVP: its NPU's MAC count)."""
        ...

    def preloads(self, program: LoadedProgram, workdir: Path, options: RunOptions) -> list[Preload]:
        """Files to place in memory before boot for `program` (none where nothing is booted;
        `options.bundle`: the .bpte it came from, whose program the firmware reads in place)."""
        ...

    def input_preloads(
        self, inputs: Sequence[np.ndarray], workdir: Path
    ) -> tuple[list[Preload], dict[int, SlotInput]]:
        """Files to place in the board's inputs slot before boot for a run on `inputs`, and
        the inputs the firmware then takes from there (SET_INPUT_SLOT); none on a board."""
        ...

    def on(
        self, image: Path | None, workdir: Path, preloads: Sequence[Preload], options: RunOptions
    ) -> contextlib.AbstractContextManager[Console]:
        """The board running `image` (None: what it runs already) until the block ends."""
        ...

    def timing(
        self,
        init_ticks: int,
        run_ticks: int,
        reported_hz: int,
        virtual_npu: bool = False,
        npu_cycles: int | None = None,
    ) -> Timing:
        """The firmware's ticks as this board clocks them, labelled by their source."""
        ...


class FlashDriver(Protocol):
    def image_for_run(self, build: Callable[[], Path]) -> Path | None:
        """The image the power driver boots for a run (calling `build` when it needs one), or
        None when the board runs what was flashed on it (`without_image` says so)."""
        ...

    without_image: str
    # The host may flash the board by itself (the user said where: --drive, --probe): done
    # when a program needs kernels the running firmware lacks (sdk.targets.strategy).
    can_flash: bool

    def flash(self, elf: Path, method: str | None = None) -> FlashResult: ...


class BootImage:
    """An emulator's flash: the image is handed to the emulator at every power-on."""

    without_image = ""
    can_flash = False  # nothing to flash: every power-on boots the image it is handed

    def image_for_run(self, build: Callable[[], Path]) -> Path | None:
        return build()

    def flash(self, elf: Path, method: str | None = None) -> FlashResult:
        raise TargetError("an emulator boots the image it is given: nothing to flash")


class BoardFlash:
    """A board's flash (board.yaml `flash:`): the firmware stays on the board between runs;
    `flash(elf)` replaces it (`sdk flash`)."""

    without_image = "the board runs the firmware flashed on it (sdk build + sdk flash)"

    def __init__(self, resource: FlashMethods, board_name: str) -> None:
        self.resource = resource
        self.board_name = board_name
        self.can_flash = resource.drive is not None or resource.probe is not None

    def image_for_run(self, build: Callable[[], Path]) -> Path | None:
        return None

    def flash(self, elf: Path, method: str | None = None) -> FlashResult:
        from sdk.targets.flash import flash_firmware  # `sdk flash` only: not a run's import

        return flash_firmware(
            self.resource.methods, self.board_name, elf, method=method,
            drive=self.resource.drive, probe=self.resource.probe,
        )  # fmt: skip
