"""Inputs and outputs of real size on an emulator, without the UART (docs/link.md "Large
inputs and outputs").

QEMU's UART moves about 15 KiB/s (one byte per interrupt), so a 224x224x3 float input (588 KiB)
took 40 s over SET_INPUT. On an emulator the host instead:

- preloads the inputs into the board's inputs slot before boot (QEMU `-device loader`, the FVP
  `--data`), each at the offset where the firmware keeps that input between runs
  (`input_offsets`: in input order, each 16-byte aligned, as `Server::load_program` lays them
  out), and has the firmware take each one with SET_INPUT_SLOT, which checks the bytes there
  against the CRC-32 the host says it preloaded;
- has the firmware write each large output to a file on the host's side with semihosting
  (GET_OUTPUT_FILE; the emulator's working directory), whose length and CRC-32 the host checks
  against the firmware's CRC of the output in its memory.

Small ones (at most `BIG_IO_OVER` bytes, one frame's payload) go over the UART as before.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Inputs and outputs larger than this leave the UART where the target allows it.
BIG_IO_OVER = 4096
SLOT_ALIGN = 16  # the firmware's alignment of each input in the inputs slot


@dataclass(frozen=True)
class SlotInput:
    """An input the host placed in the board's inputs slot: its offset there, its length and
    the CRC-32 of its bytes (what SET_INPUT_SLOT announces and the firmware checks)."""

    offset: int
    nbytes: int
    crc: int


def input_offsets(nbytes: Sequence[int]) -> list[int]:
    """Each input's offset in the inputs slot: the firmware's layout of its inputs copy."""
    offsets, at = [], 0
    for n in nbytes:
        offsets.append(at)
        at = (at + n + SLOT_ALIGN - 1) // SLOT_ALIGN * SLOT_ALIGN
    return offsets


def slot_inputs_blob(
    inputs: Sequence[np.ndarray], slot_size: int, over: int = BIG_IO_OVER
) -> tuple[bytes, dict[int, SlotInput]]:
    """The bytes to preload at the inputs slot's base (every input at its offset; the small
    ones too, harmless) and the inputs over `over` bytes that SET_INPUT_SLOT takes from there.
    Nothing ({}) when no input is that large or they do not all fit the slot (the firmware
    then keeps no copy: the UART it is)."""
    data = [np.ascontiguousarray(a).tobytes() for a in inputs]
    offsets = input_offsets([len(d) for d in data])
    big = {i for i, d in enumerate(data) if len(d) > over}
    end = offsets[-1] + len(data[-1]) if data else 0
    if not big or end > slot_size:
        return b"", {}
    blob = bytearray(end)
    slots = {}
    for i, (offset, d) in enumerate(zip(offsets, data, strict=True)):
        blob[offset : offset + len(d)] = d
        if i in big:
            slots[i] = SlotInput(offset, len(d), zlib.crc32(d))
    return bytes(blob), slots


def output_file_name(session: int, count: int, index: int) -> str:
    """A name no earlier read could have left behind: the session's id and a count."""
    return f"sdk-out-{session:08x}-{count}-{index}.bin"


def write_input_file(path: Path, data: bytes) -> None:
    """The file SET_INPUT_FILE has the firmware read (a function: tests feed wrong bytes)."""
    path.write_bytes(data)


def read_output_file(path: Path) -> bytes:
    """The bytes of an output file the firmware wrote (OSError when there is none)."""
    return path.read_bytes()
