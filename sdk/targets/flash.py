"""`sdk flash`: put a firmware ELF on a board, the way its board.yaml says (`flash:`).

Methods (board data, never board names in code):
- `mps3-usb`: the MPS3's configuration drive (the MCC's USB mass storage, volume label
  `V2M-MPS3`): the image goes to `SOFTWARE/` and the application note's `images.txt` (under
  `MB/HBI0309<rev>/<AN>/`) is rewritten to load it, as Arm's MPS3 documentation lays it out;
  the MCC loads it at the next power-on or `reboot` on its console.
- `pyocd`: a probe-attached board through pyOCD (`pip install 'sdk[flash]'`):
  `pyocd flash --target T [--uid PROBE] fw.elf`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdk.errors import FlashError, UsageError

FLASH_TIMEOUT_S = 300
# Where desktop Linux and macOS mount a USB drive by its volume label.
MOUNT_ROOTS = ("/media/*/{label}", "/media/{label}", "/run/media/*/{label}", "/Volumes/{label}")


@dataclass(frozen=True)
class FlashResult:
    method: str
    detail: str  # what was written where, or the command that ran


def images_txt(image: str, address: int) -> str:
    """The MCC's images.txt for one image (8.3 names, backslash paths, CRLF lines)."""
    path = "\\" + image.replace("/", "\\")
    lines = [
        "TITLE: Arm MPS3 FPGA prototyping board Images Configuration File",
        "",
        "[IMAGES]",
        "TOTALIMAGES: 1                     ;Number of Images (Max: 32)",
        "",
        f"IMAGE0ADDRESS: 0x{address:08X}          ;Please select the required executable program",
        "IMAGE0UPDATE: AUTO                 ;Image Update:NONE/AUTO/FORCE",
        f"IMAGE0FILE: {path:24} ;written by sdk flash",
    ]
    return "\r\n".join(lines) + "\r\n"


def find_drive(label: str) -> Path | None:
    from glob import glob

    for pattern in MOUNT_ROOTS:
        for found in sorted(glob(pattern.format(label=label))):
            if Path(found).is_dir():
                return Path(found)
    return None


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".tmp") as tmp:
        tmp.write(data)
        tmp.flush()
        os.fsync(tmp.fileno())
    os.replace(tmp.name, path)


def flash_mps3_usb(method: dict[str, Any], elf: Path, drive: Path | None) -> FlashResult:
    label = method["volume_label"]
    root = drive or find_drive(label)
    if root is None:
        raise FlashError(
            f"no {label} drive is mounted (is the MPS3 powered and its USB cable connected? "
            "give the drive's folder with --drive)"
        )
    if not root.is_dir():
        raise FlashError(f"--drive {root}: no such folder")
    config_dir = root / method["config_dir"]
    if not config_dir.is_dir():
        raise FlashError(
            f"{root} has no {method['config_dir']}/: not the {label} drive, or the FPGA image "
            "for this board is not installed on it (see Arm's MPS3 documentation)"
        )
    image = root / method["image"]
    try:
        _write_atomically(image, elf.read_bytes())
        text = images_txt(method["image"], int(method.get("address", 0)))
        _write_atomically(config_dir / "images.txt", text.encode("ascii"))
    except OSError as exc:
        raise FlashError(f"cannot write to {root}: {exc}") from exc
    return FlashResult(
        "mps3-usb",
        f"{image} and {config_dir / 'images.txt'} written; power-cycle the board or type "
        "`reboot` on the MCC console to load it",
    )


def pyocd_command(method: dict[str, Any], elf: Path, probe: str | None) -> list[str]:
    command = [sys.executable, "-m", "pyocd", "flash", "--target", method["target"]]
    if probe:
        command += ["--uid", probe]
    if method.get("frequency"):
        command += ["--frequency", str(method["frequency"])]
    return [*command, str(elf)]


def flash_pyocd(method: dict[str, Any], elf: Path, probe: str | None) -> FlashResult:
    from importlib.util import find_spec

    if find_spec("pyocd") is None:
        raise FlashError("pyOCD is not installed: pip install 'sdk[flash]' (or pip install pyocd)")
    command = pyocd_command(method, elf, probe)
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=FLASH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise FlashError(f"pyocd did not finish in {FLASH_TIMEOUT_S} s") from None
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        why = lines[-1] if lines else f"exit status {result.returncode}"
        raise FlashError(f"pyocd flash failed: {why} (command: {' '.join(command)})")
    return FlashResult("pyocd", " ".join(command))


def flash_firmware(
    board_methods: Sequence[dict[str, Any]],
    board_name: str,
    elf: Path,
    *,
    method: str | None = None,
    drive: Path | None = None,
    probe: str | None = None,
) -> FlashResult:
    """Flash `elf` with the board's first flash method, the one named, or the one whose
    place was given (`drive`: mps3-usb, `probe`: pyocd)."""
    elf = Path(elf)
    if not elf.is_file():
        raise UsageError(f"{elf}: no such firmware file")
    if elf.read_bytes()[:4] != b"\x7fELF":
        raise UsageError(f"{elf}: not an ELF file")
    methods = list(board_methods)
    if not methods:
        raise UsageError(f"board {board_name} declares no flash method (board.yaml `flash:`)")
    if method is None and (drive is None) != (probe is None):  # the one the user said where
        wanted = "mps3-usb" if drive is not None else "pyocd"
        if any(m["method"] == wanted for m in methods):
            method = wanted
    if method is not None:
        methods = [m for m in methods if m["method"] == method]
        if not methods:
            known = ", ".join(m["method"] for m in board_methods)
            raise UsageError(f"board {board_name} has no flash method {method!r}; it has {known}")
    chosen = methods[0]
    if chosen["method"] == "mps3-usb":
        return flash_mps3_usb(chosen, elf, drive)
    return flash_pyocd(chosen, elf, probe)
