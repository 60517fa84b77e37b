"""Code and data size of the firmware: the runtime core alone, and the whole firmware.

    .venv/bin/python bench/firmware_size.py [--board corstone300] [--pte PROGRAM.pte]

Builds the firmware (for PROGRAM, else with every kernel) and prints .text/.data/.bss:
  - runtime core objects: `arm-none-eabi-size` over firmware/runtime objects (no kernels, no
    delegate, no runner), as compiled (-Os), so shared inline code is counted per object;
  - runtime core linked: what those objects contribute to the linked ELF after
    --gc-sections (from the linker map): the footprint that matters;
  - the whole firmware ELF, and its parts (runner, board, kernels, C library).
Goal: runtime core .text <= 16 KiB.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sdk.environment.paths import BUILD_DIR
from sdk.firmware.boards import load_board
from sdk.firmware.build import build_firmware

CORE_GOAL_TEXT = 16 * 1024
_MAP_ENTRY = re.compile(
    r"^ (\.(?:text|rodata|data|bss|vectors)\S*)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$"
)


def size_totals(tool: str, files: list[Path]) -> tuple[int, int, int]:
    """(text, data, bss) summed by `size` (Berkeley format: text includes read-only data)."""
    out = subprocess.run([tool, "-t", *map(str, files)], capture_output=True, text=True, check=True)
    text, data, bss = out.stdout.strip().splitlines()[-1].split()[:3]
    return int(text), int(data), int(bss)


def part_of(obj: str) -> str:
    if "/core/firmware/runtime/" in obj:
        return "runtime core"
    if "/firmware/runner/" in obj:
        return "runner"
    if "/kernels/" in obj or "kernel_registry" in obj:
        return "kernels"
    if "/boards/" in obj:
        return "board"
    if ".a(" in obj:
        return "C library"
    return "other"


def linked_parts(map_file: Path) -> dict[str, dict[str, int]]:
    """{part: {text, data, bss}} of the input sections the linker kept."""
    text = map_file.read_text().split("Linker script and memory map", 1)[-1]
    parts: dict[str, dict[str, int]] = defaultdict(lambda: {"text": 0, "data": 0, "bss": 0})
    pending: str | None = None
    for line in text.splitlines():
        if re.match(r"^ \.(text|rodata|data|bss|vectors)\S*$", line):
            pending = line.split()[0]  # name alone; address/size/object on the next line
            continue
        match = _MAP_ENTRY.match(line)
        if match is None:
            pending = None
            continue
        section = match.group(1) or pending
        pending = None
        address, size, obj = int(match.group(2), 16), int(match.group(3), 16), match.group(4)
        if section is None or address == 0 or size == 0:
            continue
        kind = section.split(".")[1]
        kind = "text" if kind in ("text", "rodata", "vectors") else kind
        parts[part_of(obj)][kind] += size
    return dict(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="corstone300")
    parser.add_argument("--pte", type=Path, help="program to build for (default: every kernel)")
    args = parser.parse_args(argv)
    board = load_board(args.board)
    tool = f"{board.toolchain_prefix}size"
    with tempfile.TemporaryDirectory() as tmp:
        elf = build_firmware(board.name, args.pte, Path(tmp) / "executor_runner.elf")
        build_dir = BUILD_DIR / board.name
        core_objects = sorted((build_dir / "core" / "firmware" / "runtime").glob("*.o"))
        core = size_totals(tool, core_objects)
        whole = size_totals(tool, [elf])
        parts = linked_parts(elf.with_suffix(".map"))

    what = args.pte.name if args.pte else "every kernel"
    print(f"board {board.name}, program: {what}")
    print(f"{'':34}{'.text':>10}{'.data':>10}{'.bss':>10}")
    print(f"{'runtime core objects (-Os)':34}{core[0]:>10}{core[1]:>10}{core[2]:>10}")
    for name in ("runtime core", "runner", "board", "kernels", "C library", "other"):
        if name in parts:
            p = parts[name]
            print(f"{name + ' (linked)':34}{p['text']:>10}{p['data']:>10}{p['bss']:>10}")
    print(f"{'whole firmware (ELF)':34}{whole[0]:>10}{whole[1]:>10}{whole[2]:>10}")
    linked_core = parts.get("runtime core", {"text": 0})["text"]
    verdict = "met" if linked_core <= CORE_GOAL_TEXT else "missed"
    print(f"goal: runtime core .text <= {CORE_GOAL_TEXT} bytes (linked): {verdict} ({linked_core})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
