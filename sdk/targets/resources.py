"""What a target is made of, as data (labgrid's shape: resources are data, drivers do the I/O,
a strategy brings the target up: sdk.targets.drivers, sdk.targets.strategy).

Nothing here starts, opens or copies anything; every value comes from the board's board.yaml
and from what the user gave (--port, --fvp, --drive, --probe).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdk.firmware.boards import Board


@dataclass(frozen=True)
class EmulatorBinary:
    """An emulator binary and the board parameters it runs with (board.yaml `targets.<kind>`).
    `npu`: what executes the NPU delegates on it (board.yaml `npu_label`); None: the emulated
    board has no NPU, so the host's virtual U55 answers the firmware's driver."""

    kind: str  # the board.yaml section: "qemu", "fvp"
    binary: str
    board: Board
    params: Mapping[str, Any]
    npu: str | None


@dataclass(frozen=True)
class SerialPort:
    """A board's console UART as a pyserial URL (/dev/ttyACM0, socket://, rfc2217://,
    hwgrep://); None when the user gave none. `npu` as for EmulatorBinary."""

    url: str | None
    baud: int
    npu: str | None


@dataclass(frozen=True)
class LabgridPlace:
    """A place in a labgrid farm (its coordinator's name for a board and its resources),
    board.yaml `targets.labgrid` (`params`: power_off_s, acquire_timeout_s). None: the user
    gave none (--place, --coordinator; default $LG_COORDINATOR)."""

    place: str | None
    coordinator: str | None
    board_name: str
    params: Mapping[str, Any]
    npu: str | None


@dataclass(frozen=True)
class FlashMethods:
    """How the board takes a firmware image (board.yaml `flash`: an MPS3 USB drive, a probe
    through pyOCD) and where the user said it is."""

    methods: tuple[Mapping[str, Any], ...]
    drive: Path | None = None
    probe: str | None = None


@dataclass(frozen=True)
class HostReference:
    """The host's reference execution (ExecuTorch's runtime + the TOSA reference model)."""

    modules: tuple[str, ...] = field(default=())
