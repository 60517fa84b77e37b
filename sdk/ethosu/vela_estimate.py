"""Vela's own per-operation estimate of a delegate, matched to the stream's commands.

Vela (`--enable-debug-db`) writes `<name>_debug.xml`: table `perf` has each scheduled
operation's estimate (op_cycles, npu_cycles, mac_count, access cycles per memory) and table
`queue` the byte offset of each operation's last command in the command stream (after the
driver's header), so the stream's commands can be grouped by the Vela operation they belong
to. The cycle model (sdk/ethosu/cycles.py) is compared with these in tests and the bench.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from sdk.ethosu.cycles import OpTiming

VELA = Path(sys.executable).parent / "vela"
# The header Vela's debug database offsets leave out: the COP1 fourcc and driver actions
# before the command stream's first word (checked: the first operation of every stream).
ESTIMATE_FLAGS = ("--verbose-performance", "--enable-debug-db")


@dataclass
class VelaOp:
    """One scheduled operation as Vela estimates it."""

    id: int
    operator: str
    name: str
    op_cycles: int
    npu_cycles: int
    macs: int
    last_offset: int | None = None  # its last command's byte offset in the stream
    rows: list[OpTiming] = field(default_factory=list)  # the model's rows for its commands

    @property
    def modelled(self) -> int:
        return sum(r.cycles for r in self.rows)


def _table(root: ET.Element, name: str) -> list[dict[str, str]]:
    for table in root.iter("table"):
        if table.get("name") == name:
            return list(csv.DictReader(io.StringIO((table.text or "").strip())))
    return []


def read_debug_db(path: Path) -> list[VelaOp]:
    """Vela's operations in stream order (those with commands), from its debug database."""
    root = ET.parse(path).getroot()
    ops = {
        int(row["id"]): VelaOp(
            int(row["id"]),
            row["operator"],
            row["name"],
            int(row["op_cycles"]),
            int(row["npu_cycles"]),
            int(row["mac_count"]),
        )
        for row in _table(root, "perf")
    }
    ordered: list[VelaOp] = []
    for row in _table(root, "queue"):
        op = ops.get(int(row["scheduled_id"]))
        if op is None:
            continue
        op.last_offset = int(row["offset"])
        if not ordered or ordered[-1] is not op:
            ordered.append(op)
    return ordered


def run_vela(tosa: Path, flags: list[str], outdir: Path) -> tuple[list[VelaOp], dict[str, str]]:
    """Vela on a delegate's saved TOSA with its compile flags: its per-operation estimate
    and its summary CSV row (`cycles_npu`, `cycles_total`, `nn_macs`, ...)."""
    outdir.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [str(VELA), *flags, *ESTIMATE_FLAGS, f"--output-dir={outdir}", str(tosa)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if result.returncode != 0:
        raise RuntimeError(f"vela failed on {tosa}: {result.stdout[-2000:]}{result.stderr[-2000:]}")
    summary = next(outdir.glob(f"{tosa.stem}_summary_*.csv"))
    with summary.open(newline="") as f:
        row = next(csv.DictReader(f))
    return read_debug_db(outdir / f"{tosa.stem}_debug.xml"), row


def match(vela_ops: list[VelaOp], rows: list[OpTiming], header: int) -> list[VelaOp]:
    """Give each Vela operation the model's rows of its commands: those up to its last
    command's offset (`header` bytes: what the debug offsets count before the stream)."""
    k = 0
    for op in vela_ops:
        op.rows = []
    for row in rows:
        while k < len(vela_ops) - 1 and row.stream_offset + header > (vela_ops[k].last_offset or 0):
            k += 1
        if vela_ops:
            vela_ops[k].rows.append(row)
    return vela_ops
