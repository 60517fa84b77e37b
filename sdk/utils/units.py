"""Byte counts as people read them (memory maps, cache sizes): binary units, exact when whole."""

from __future__ import annotations

UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def human_bytes(n: int) -> str:
    """512 KiB, 32 MiB, 1.5 MiB, 511.98 KiB (two decimals at most, so a region's odd size
    never reads as a round one), 100 B."""
    for unit, scale in UNITS:
        if n >= scale:
            text = f"{n / scale:.2f}".rstrip("0").rstrip(".")
            return f"{text} {unit}"
    return f"{n} B"
