"""`sdk doctor [--json]`: what this machine has of what the SDK needs, with the fix for each gap.

Exit 1 when something the default target (`sdk deploy`'s auto) needs is missing or wrong;
optional parts (the FVP, a board, pyOCD) are reported and never fail it.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from sdk.cli.boards import add_target_options, target_options

if TYPE_CHECKING:
    from sdk.environment.doctor import Diagnosis


def add_parser(subparsers) -> None:
    from sdk.environment.doctor import SCHEMA
    from sdk.firmware.boards import DEFAULT_BOARD

    p = subparsers.add_parser(
        "doctor",
        help="check this machine: Python pins, toolchain, SCons, flatc, targets, ports, cache",
        description="One line per check: ok, MISSING or WRONG, what, what was found, and the "
        "command that fixes it. Exits 1 when the default target (the FVP when installed, "
        "else QEMU with the virtual NPU) lacks something it needs.",
    )
    p.add_argument("--board", default=DEFAULT_BOARD, help=f"board (default {DEFAULT_BOARD})")
    p.add_argument("--json", action="store_true", help=f"print JSON (schema {SCHEMA})")
    add_target_options(p)
    p.set_defaults(handler=run)


def render_text(diagnosis: Diagnosis) -> str:
    from sdk.cli.columns import columns

    rows = [
        (check.status, check.what, check.found + (f"  fix: {check.fix}" if check.fix else ""))
        for check in diagnosis.checks
    ]
    lines = columns(rows)
    versions = diagnosis.debian_packages
    packages = ", ".join(
        f"{name} {version or 'not installed'}" for name, version in versions.items()
    )
    lines.append(f"debian packages: {packages}")
    lines.append(f"default target (auto) on {diagnosis.board}: {diagnosis.default_target}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from sdk.environment.doctor import diagnose
    from sdk.errors import SdkError

    diagnosis = diagnose(args.board, target_options(args))
    print(json.dumps(diagnosis.to_json(), indent=2) if args.json else render_text(diagnosis))
    failed = [check.what for check in diagnosis.checks if check.fails]
    if failed:
        raise SdkError(
            f"the default target ({diagnosis.default_target}) cannot run here: missing or "
            f"wrong: {', '.join(failed)} (the fix: of each is above)"
        )
    return 0
