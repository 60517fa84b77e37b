"""Vela's own performance estimate for one delegate, read from its summary CSV.

Vela writes `out_summary_<system_config>.csv` next to its output. These numbers are Vela's
*estimate* from its performance model, never a measurement, and the report labels them so.
"""

from __future__ import annotations

import csv
from pathlib import Path

ESTIMATE_LABEL = "estimate (Vela performance model, not a measurement)"


def _number(row: dict[str, str], key: str) -> float | None:
    try:
        return float(row[key])
    except (KeyError, ValueError):
        return None


def read_vela_summary(output_dir: Path) -> dict | None:
    """The estimate for the Vela run whose --output-dir was `output_dir`; None if absent."""
    files = sorted(output_dir.glob("out_summary_*.csv"))
    if not files:
        return None
    with files[0].open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return None
    row = rows[0]
    flash = sum(
        v for v in (_number(row, "off_chip_flash_memory_used"),
                    _number(row, "on_chip_flash_memory_used")) if v
    )  # fmt: skip
    cycles = _number(row, "cycles_total")
    return {
        "label": ESTIMATE_LABEL,
        "accelerator": row.get("accelerator_configuration"),
        "system_config": row.get("system_config"),
        "memory_mode": row.get("memory_mode"),
        "core_clock_hz": _number(row, "core_clock"),
        "sram_used_kib": _number(row, "sram_memory_used"),
        "dram_used_kib": _number(row, "dram_memory_used"),
        "flash_used_kib": flash,
        "macs": _number(row, "nn_macs"),
        "npu_cycles": _number(row, "cycles_npu"),
        "total_cycles": cycles,
        "inference_time_s": _number(row, "inference_time"),
    }
