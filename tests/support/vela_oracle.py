"""Vela as the decoder's oracle: recompile a delegate's saved TOSA with the flags the program
records, and read the field-decoded listing `--verbose-register-command-stream` prints.

A listing line (regor's format):
    0x0000dc: 80000001 001f 4024 - NPU_SET_OFM_SCALE                 31, shift = 31, scale = ...
    offset    payload  param code - name                           param, field = text, ...
(`payload` is blank for cmd0 commands; `param` is hex before the name, decimal after it.)
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

VELA = Path(sys.executable).parent / "vela"
_LINE = re.compile(
    r"^0x(?P<offset>[0-9a-f]+): (?:(?P<payload>[0-9a-f]{8})| {8}) (?P<param>[0-9a-f]{4}) "
    r"(?P<code>[0-9a-f]{4}) - (?P<name>NPU_\w+)\s+(?P<dec>\d+)(?:, (?P<fields>.*))?$"
)


@dataclass(frozen=True)
class VelaCommand:
    offset: int
    payload: int | None
    param: int
    code: int  # the low 16 bits of the command word (opcode and control bits)
    name: str
    fields: tuple[tuple[str, str], ...]


@dataclass
class VelaCompile:
    cmd_data: bytes
    commands: list[VelaCommand]
    header_words: int  # "Register command stream: N words"


def parse_listing(text: str) -> tuple[list[VelaCommand], int]:
    commands, words = [], -1
    for line in text.splitlines():
        header = re.match(r"Register command stream: (\d+) words", line)
        if header:
            words = int(header.group(1))
        m = _LINE.match(line)
        if not m:
            if line.startswith("0x"):
                raise AssertionError(f"unparsed Vela listing line: {line!r}")
            continue
        assert int(m["param"], 16) == int(m["dec"]), line
        fields = []
        for item in (m["fields"] or "").split(", ") if m["fields"] else []:
            name, sep, value = item.partition(" = ")
            assert sep, line
            fields.append((name, value))
        commands.append(
            VelaCommand(
                int(m["offset"], 16),
                int(m["payload"], 16) if m["payload"] else None,
                int(m["param"], 16),
                int(m["code"], 16),
                m["name"],
                tuple(fields),
            )
        )
    return commands, words


def vela_compile(tosa: Path, flags: list[str], outdir: Path) -> VelaCompile:
    """Run Vela on `tosa` with the program's flags; its cmd_data and printed listing."""
    result = subprocess.run(
        [
            str(VELA),
            *flags,
            f"--output-dir={outdir}",
            "--verbose-register-command-stream",
            str(tosa),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with np.load(outdir / f"{tosa.stem}_vela.npz") as npz:
        cmd_data = npz["cmd_data"].tobytes()
    commands, words = parse_listing(result.stdout)
    return VelaCompile(cmd_data, commands, words)
