"""Asking an installed tool what it is: `tool --version`, as the one line a report shows.

Availability checks and `sdk doctor` name what they found by its own words (QEMU's, gcc's
first line), so a wrong version is visible without knowing each tool's output format.
"""

from __future__ import annotations

import subprocess

VERSION_TIMEOUT_S = 20.0


def tool_output(command: list[str], timeout_s: float = VERSION_TIMEOUT_S) -> str:
    """The tool's stdout (stderr when stdout is empty); OSError when it cannot run or fails."""
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise OSError(f"`{' '.join(command)}` did not finish in {timeout_s:g} s") from exc
    if run.returncode != 0:
        why = (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[-1]
        raise OSError(f"`{' '.join(command)}` failed: {why}")
    return run.stdout if run.stdout.strip() else run.stderr


def version_line(command: list[str]) -> str:
    """The first non-empty line `command` (e.g. [binary, "--version"]) prints."""
    lines = [line.strip() for line in tool_output(command).splitlines() if line.strip()]
    return lines[0] if lines else "(printed nothing)"
