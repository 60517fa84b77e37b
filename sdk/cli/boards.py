"""`sdk boards [--json]`: the boards the SDK knows, what each is, and what can run it here."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdk.link.transport import DEFAULT_BAUD

if TYPE_CHECKING:
    from sdk.firmware.boards import Board, Region
    from sdk.targets.base import RunOptions

SCHEMA = "sdk.boards/1"


def add_target_options(p: argparse.ArgumentParser) -> None:
    """What target availability can be asked with (shared with `sdk doctor`)."""
    p.add_argument("--port", help="serial: see whether this pyserial URL opens")
    p.add_argument(
        "--baud", type=int, help=f"serial: baud rate (default the board's, {DEFAULT_BAUD})"
    )
    p.add_argument("--fvp", type=Path, help="fvp: the FVP binary (default $SDK_FVP, else PATH)")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "boards",
        help="list the boards, their memory, NPU and targets, and the serial ports seen",
        description="For each board in boards/: its memory regions and slots, its NPU, its "
        "run targets with whether each is available on this machine (and how to install it "
        "when not), its flash methods; then the serial ports this machine has (for --port).",
    )
    p.add_argument("--json", action="store_true", help=f"print JSON (schema {SCHEMA})")
    add_target_options(p)
    p.set_defaults(handler=run)


def target_options(args: argparse.Namespace) -> RunOptions:
    from sdk.targets.base import RunOptions

    return RunOptions(port=args.port, baud=args.baud, fvp=args.fvp)


def regions(table: dict[str, Region]) -> list[dict[str, Any]]:
    return [{"name": r.name, "base": r.base, "size": r.size} for r in table.values()]


def describe_board(board: Board, options: RunOptions | None = None) -> dict[str, Any]:
    """A board as JSON: its data from board.yaml and each target's availability here."""
    from sdk.targets.run import available_targets

    return {
        "name": board.name,
        "description": board.description,
        "memory": regions(board.memory),
        "slots": regions(board.slots),
        "npu": {
            "kind": board.npu_kind,
            "default_config": board.npu_default_config,
            "configs": list(board.npu_configs),
        },
        "targets": {n: asdict(a) for n, a in available_targets(board, options).items()},
        "flash": [dict(method) for method in board.flash],
    }


def report(options: RunOptions | None = None) -> dict[str, Any]:
    """Every board, then the serial ports seen (what --port can name)."""
    from sdk.firmware.boards import available_boards, load_board
    from sdk.targets.serial import seen_ports

    return {
        "schema": SCHEMA,
        "boards": [describe_board(load_board(name), options) for name in available_boards()],
        "serial_ports": [asdict(port) for port in seen_ports()],
    }


def render_text(data: dict[str, Any]) -> str:
    from sdk.cli.columns import columns
    from sdk.targets.base import Availability
    from sdk.utils.units import human_bytes

    lines = []
    for board in data["boards"]:
        lines.append(f"{board['name']}: {board['description']}")
        for title in ("memory", "slots"):
            lines.append(f"  {title}:")
            rows = [(r["name"], f"0x{r['base']:08x}", human_bytes(r["size"])) for r in board[title]]
            lines += columns(rows, "    ")
        npu = board["npu"]
        lines.append(
            f"  npu: {npu['kind'] or '(kind not given)'}, default {npu['default_config']} "
            f"(configs: {', '.join(npu['configs'])})"
        )
        lines.append("  targets (available here?):")
        rows = [
            (name, "yes" if t["available"] else "no", Availability(**t).describe())
            for name, t in board["targets"].items()
        ]
        lines += columns(rows, "    ")
        methods = ", ".join(str(m.get("method")) for m in board["flash"]) or "none"
        lines.append(f"  flash: {methods}")
    ports = data["serial_ports"]
    lines.append("serial ports seen:" if ports else "serial ports seen: none")
    rows = [(p["device"], p["description"], p["serial_number"] or "-") for p in ports]
    lines += columns(rows, "  ")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    data = report(target_options(args))
    print(json.dumps(data, indent=2) if args.json else render_text(data))
    return 0
