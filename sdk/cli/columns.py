"""Plain-text tables for the CLI: columns padded to their widest cell, the last left free.

Plain text, so the output reads the same in a terminal, a CI log and a pasted bug report.
"""

from __future__ import annotations

from collections.abc import Sequence

GAP = "  "


def columns(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """One line per row; every column but the last padded to the widest cell in it."""
    if not rows:
        return []
    count = max(len(row) for row in rows)
    widths = [max((len(row[i]) for row in rows if i < len(row)), default=0) for i in range(count)]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [row[-1]]
        lines.append((indent + GAP.join(cells)).rstrip())
    return lines
