"""How fast the deployed program would run on the board: the deploy report's `performance`
section, and the per-operator milliseconds of its profile.

QEMU counts the CPU's instructions and the virtual U55 models the NPU's cycles; neither is a
measurement. The CPU's time is its instructions at the board's CPU clock (one instruction per
cycle assumed: QEMU counts no cycles), the NPU's its modelled cycles at the board's NPU clock;
the CPU waits for each NPU job, so the two add up. Clocks come from board.yaml.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sdk.link.record import ModelledNpu

if TYPE_CHECKING:
    from sdk.ethosu.cycles import MemorySystem
    from sdk.firmware.boards import Board

CPU_TIME = "instructions at the board's CPU clock (1 instruction per cycle assumed)"
NPU_TIME = "modelled cycles at the board's NPU clock"


@dataclass(frozen=True)
class Clocks:
    """The board's CPU and NPU clocks (board.yaml cpu.clock_hz, npu_memories.clock_hz)."""

    cpu_hz: int
    npu_hz: int

    @staticmethod
    def of(board: Board) -> Clocks | None:
        """The board's clocks; None when board.yaml lacks either."""
        if not board.cpu_clock_hz or not board.npu_clock_hz:
            return None
        return Clocks(board.cpu_clock_hz, board.npu_clock_hz)

    def cpu_ms(self, instructions: int) -> float:
        return 1e3 * instructions / self.cpu_hz

    def npu_ms(self, cycles: int) -> float:
        return 1e3 * cycles / self.npu_hz


def latency_ms(clocks: Clocks, cpu_instructions: int, npu_cycles: int) -> float:
    """One inference's time: the CPU's instructions at its clock plus the NPU's modelled cycles
    at its (the CPU waits for each job). The one definition: the deploy's `performance`
    section and the tuner's table (sdk.deploy.tune) both take it from here."""
    return clocks.cpu_ms(cpu_instructions) + clocks.npu_ms(npu_cycles)


def memory_config(systems: Iterable[MemorySystem]) -> dict:
    """The system config and memory mode the delegates were compiled for (one each, or the
    distinct ones joined when delegates differ)."""
    systems = list(systems)

    def distinct(values: Iterable[str]) -> str | None:
        return ", ".join(sorted(set(values))) or None

    return {
        "system_config": distinct(s.system_config for s in systems),
        "memory_mode": distinct(s.memory_mode for s in systems),
    }


def performance(
    instructions: int | None,
    npu: ModelledNpu | None,
    clocks: Clocks | None,
    npu_config: str,
    systems: Iterable[MemorySystem] = (),
    delegates: int = 0,
) -> dict | None:
    """The `performance` section of one inference; None where its parts are not known: no
    instruction count (not QEMU), no board clocks, or `delegates` the virtual U55 did not
    model (`npu` None, or a job it could not time)."""
    unmodelled = npu is None if delegates else False
    if instructions is None or clocks is None or unmodelled or (npu and not npu.complete):
        return None
    from sdk.ethosu.cycles import macs_per_cycle  # Vela's tables: only when there is a section

    cycles = npu.cycles if npu is not None else 0
    timed = [d for d in npu.delegates if d.cycles is not None] if npu is not None else []
    macs = sum(d.macs or 0 for d in timed)
    job_cycles = sum(d.cycles or 0 for d in timed)
    memory_bound = sum(d.memory_bound_cycles or 0 for d in timed)
    cpu_ms, npu_ms = clocks.cpu_ms(instructions), clocks.npu_ms(cycles)
    latency = latency_ms(clocks, instructions, cycles)
    return {
        "cpu_instructions": instructions,
        "npu_cycles_modelled": cycles,
        "npu_macs": macs,
        "npu_mac_utilisation": macs / (cycles * macs_per_cycle(npu_config)) if cycles else None,
        "npu_memory_bound_share": memory_bound / job_cycles if job_cycles else None,
        "cpu_ms": cpu_ms,
        "npu_ms": npu_ms,
        "latency_ms": latency,
        "inferences_per_s": 1e3 / latency if latency else None,
        "cpu_share": cpu_ms / latency if latency else None,
        "npu_cycles_check": None if npu is None else npu.check(),
        "config": {
            "npu": npu_config,
            **memory_config(systems),
            "cpu_clock_hz": clocks.cpu_hz,
            "npu_clock_hz": clocks.npu_hz,
            "cpu_time": CPU_TIME,
            "npu_time": NPU_TIME,
        },
    }


def add_profile_latency(profile: dict, npu: ModelledNpu | None, clocks: Clocks | None) -> None:
    """Each profile row gets `latency_ms` at the board's clocks: its CPU instructions, and a
    delegate row also its modelled NPU cycles per inference (`npu_cycles_modelled`)."""
    cycles = {d.delegate: d.cycles for d in npu.delegates} if npu is not None else {}
    for row in profile["operators"]:
        delegate = row.get("delegate")
        npu_cycles = 0 if delegate is None else cycles.get(delegate)
        if delegate is not None:
            row["npu_cycles_modelled"] = npu_cycles
        # a delegate whose NPU time is not known gets none, not its CPU side alone
        known = clocks is not None and row["instructions"] is not None and npu_cycles is not None
        row["latency_ms"] = (
            clocks.cpu_ms(row["instructions"]) + clocks.npu_ms(npu_cycles) if known else None
        )
