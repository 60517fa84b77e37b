"""The NPU's memories as the board has them (board.yaml `npu_memories`), turned into a Vela ini.

Vela's cycle estimate and its placement depend on the bandwidth and latency of each AXI port;
the stock vela.ini describes a generic system, not the board. This keeps the board's figures
(with their sources) as data and writes the system configs Vela compiles with, so that no
configuration assumes a faster memory than the board has.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdk.errors import ConfigError, UsageError

PORTS = ("axi0", "axi1")
# Vela's memory labels per port: the arena's (AXI0) must be Sram, the constants' (AXI1) a flash.
VELA_LABELS = {"axi0": "Sram", "axi1": "OffChipFlash"}
U55_PORT_BYTES_PER_CYCLE = 8.0  # Vela: a U55 AXI port moves 8 bytes per cycle at clock_scale 1
# Vela's C++ core (regor.cpp, `isU55`) takes that 8-byte port width only for a system config
# whose name starts with this; under any other name it prices every memory at 16 bytes per
# cycle per clock_scale, twice the ini's figure. So the board's sections carry the prefix.
VELA_U55_SECTION_PREFIX = "Ethos_U55"
# The name of ExecuTorch's own Vela configuration (Ethos_U55_High_End_Embedded, Shared_Sram,
# the stock vela.ini) beside the board's modes: what an export used before the board had any.
EXECUTORCH_DEFAULT = "executorch"
# Under the cache root: the board's Vela ini files, which compiled programs name in their flags.
VELA_CONFIG_DIR = "vela-config"
_PORT_KEYS = ("bytes_per_cycle", "read_latency", "write_latency", "burst_length", "max_reads")
# A timing adapter's registers that set a port's speed, at their offsets from its base (Arm's
# timing-adapter driver in core_platform, drivers/timing_adapter; MLEK
# scripts/cmake/timing_adapter/ta_config_*.cmake names the same fields). The firmware writes
# them in this order (board_config.h SDK_TA_REGISTER_OFFSETS); the virtual U55 reads them back.
TA_REGISTERS = {
    "MAXR": 0x00,  # outstanding reads (0: unlimited)
    "MAXW": 0x04,  # outstanding writes
    "MAXRW": 0x08,  # outstanding reads + writes
    "RLATENCY": 0x0C,  # cycles from address to read data
    "WLATENCY": 0x10,  # cycles from the last write data to the response
    "PULSE_ON": 0x14,  # cycles of a period that let addresses through
    "PULSE_OFF": 0x18,  # cycles of a period that block them
    "BWCAP": 0x1C,  # 64-bit words per period (0: unlimited)
    "MODE": 0x28,  # bit 0: dynamic clocking (as MLEK sets it)
}
TA_WORD_BYTES = 8  # BWCAP counts 64-bit words
TA_SPAN = 0x40  # the registers' extent from an adapter's base
_VELA_NAME = re.compile(r"[A-Za-z0-9_]+")  # a Vela section name (also a C string literal)
_ADAPTER_KEYS = ("maxr", "maxw", "pulse_on", "pulse_off", "bwcap", "mode")
_ADAPTER_LIMITS = {"maxr": 0x3F, "maxw": 0x3F}  # 6-bit fields; the rest are 16-bit


@dataclass(frozen=True)
class Adapter:
    """A timing adapter's setting: BWCAP 64-bit words per PULSE_ON + PULSE_OFF cycles, at most
    MAXR/MAXW transactions outstanding (0: unlimited; MLEK's figures, which need not be the
    limits Vela's ini models), MODE as MLEK writes it."""

    maxr: int
    maxw: int
    pulse_on: int
    pulse_off: int
    bwcap: int
    mode: int

    @property
    def bytes_per_cycle(self) -> float:
        """The port's bandwidth under this setting; BWCAP 0 (no cap) leaves the U55 port's
        own 8 bytes per cycle, which no setting exceeds."""
        period = self.pulse_on + self.pulse_off
        if self.bwcap == 0 or period == 0:
            return U55_PORT_BYTES_PER_CYCLE
        return min(self.bwcap * TA_WORD_BYTES / period, U55_PORT_BYTES_PER_CYCLE)

    @staticmethod
    def of_registers(values: dict[str, int]) -> Adapter:
        """The setting an adapter's registers (TA_REGISTERS' names) hold."""
        return Adapter(
            *(values.get(k, 0) for k in ("MAXR", "MAXW", "PULSE_ON", "PULSE_OFF", "BWCAP", "MODE"))
        )


@dataclass(frozen=True)
class PortTiming:
    """One NPU AXI port as its timing adapter makes it look, in NPU cycles. `adapter`: the
    adapter's bandwidth registers, when board.yaml gives them (bytes_per_cycle follows)."""

    bytes_per_cycle: float
    read_latency: int
    write_latency: int
    burst_length: int
    max_reads: int
    max_writes: int
    source: str
    adapter: Adapter | None = None

    def adapter_registers(self) -> dict[str, int]:
        """The timing adapter's registers that give this timing (TA_REGISTERS' names)."""
        if self.adapter is None:
            raise ConfigError("internal: a port timing without its adapter's registers")
        a = self.adapter
        return {
            "MAXR": a.maxr,
            "MAXW": a.maxw,
            "MAXRW": 0,
            "RLATENCY": self.read_latency,
            "WLATENCY": self.write_latency,
            "PULSE_ON": a.pulse_on,
            "PULSE_OFF": a.pulse_off,
            "BWCAP": a.bwcap,
            "MODE": a.mode,
        }


@dataclass(frozen=True)
class MemoryMode:
    """A Vela memory mode the board supports and the timing each port needs for it."""

    name: str
    const_port: str
    arena_port: str
    timings: dict[str, PortTiming]  # port -> its timing in this mode
    source: str
    # Vela's stock (system config, memory mode) with this mode's figures, if one has them: a
    # program compiled for it (ExecuTorch's default) runs at this mode's port timings.
    stock: tuple[str, str] | None = None


@dataclass(frozen=True)
class NpuMemories:
    """The board's NPU ports and legal memory modes (`default`: what the SDK compiles with)."""

    board: str
    clock_hz: int
    ports: dict[str, PortTiming]
    modes: dict[str, MemoryMode]
    default: str | None  # None: ExecuTorch's default Vela configuration
    # port -> its timing adapter's base address (board.yaml npu_memories.timing_adapters);
    # empty: the board has none to program (its ports' speeds are what they are).
    timing_adapters: dict[str, int] = field(default_factory=dict)

    def adapter_registers_at(self, npu_base: int) -> dict[int, tuple[str, str]]:
        """Each adapter register's offset from the NPU's base (where the firmware's driver
        writes it) -> (its port, its name): what the link's virtual U55 takes them by."""
        return {
            base - npu_base + offset: (port, name)
            for port, base in self.timing_adapters.items()
            for name, offset in TA_REGISTERS.items()
        }

    def adapter_modes(self) -> dict[tuple[str, str], dict[str, dict[str, int]]]:
        """Per Vela (system config, memory mode) a program may be compiled for, per port, the
        adapter registers the firmware writes before its job: the port timings the board's
        mode documents (`timing`), no other. A pair not here has no timing the board knows."""
        table = {}
        for name, mode in self.modes.items():
            registers = {p: mode.timings[p].adapter_registers() for p in self.timing_adapters}
            section = self.section_name(name)
            table[(section, section)] = registers
            if mode.stock is not None:
                table[mode.stock] = registers
        return table

    def section_name(self, mode: str) -> str:
        """The system config and memory mode name for `mode`, e.g.
        Ethos_U55_Corstone300_Sram_Only (the prefix keeps Vela's C++ core at the U55's port
        width: VELA_U55_SECTION_PREFIX)."""
        return f"{VELA_U55_SECTION_PREFIX}_{self.board.capitalize()}_{mode}"

    def mode(self, name: str) -> MemoryMode:
        if name not in self.modes:
            raise ConfigError(
                f"board {self.board}: no NPU memory mode {name!r}; known: {', '.join(self.modes)}"
            )
        return self.modes[name]

    def vela_ini(self) -> str:
        """A Vela ini with one system config and one memory mode per legal mode."""
        lines = [f"; Written by the SDK from boards/{self.board}/board.yaml npu_memories.", ""]
        for mode in self.modes.values():
            name = self.section_name(mode.name)
            lines += [f"; {mode.source}", f"[System_Config.{name}]", f"core_clock={self.clock_hz}"]
            for port in PORTS:
                lines.append(f"{port}_port={VELA_LABELS[port]}")
            for port in PORTS:
                t = mode.timings[port]
                label = VELA_LABELS[port]
                lines += [
                    f"{label}_clock_scale={t.bytes_per_cycle / U55_PORT_BYTES_PER_CYCLE!r}",
                    f"{label}_burst_length={t.burst_length}",
                    f"{label}_read_latency={t.read_latency}",
                    f"{label}_write_latency={t.write_latency}",
                    f"{label}_max_reads={t.max_reads}",
                    f"{label}_max_writes={t.max_writes}",
                ]
            lines += [
                "",
                f"[Memory_Mode.{name}]",
                f"const_mem_area={mode.const_port.capitalize()}",
                f"arena_mem_area={mode.arena_port.capitalize()}",
                f"cache_mem_area={mode.arena_port.capitalize()}",
                "",
            ]
        return "\n".join(lines)

    def write_vela_ini(self, directory: Path) -> Path:
        """Write the ini, content-named: a compiled program names it in its Vela flags (the
        cycle model reads it back), so a file once named never changes."""
        text = self.vela_ini()
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        path = directory / f"{self.board}_vela_{digest}.ini"
        directory.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text() != text:
            from sdk.utils.files import write_atomically

            write_atomically(path, text)  # a concurrent export never reads half of it
        return path


@dataclass(frozen=True)
class VelaMemory:
    """The memory configuration an export compiles with: one of the board's modes (its ini
    and section) or ExecuTorch's default (no ini)."""

    name: str  # a board mode, or EXECUTORCH_DEFAULT
    ini: Path | None = None
    section: str | None = None

    @property
    def spec(self) -> tuple[str, str] | None:
        """compile_spec's `memories`."""
        return None if self.ini is None or self.section is None else (str(self.ini), self.section)

    def key(self) -> dict:
        """What a program's cache key holds of it: the name and the ini's figures."""
        text = self.ini.read_text() if self.ini is not None else None
        return {
            "memory": self.name,
            "section": self.section,
            "ini_sha256": hashlib.sha256(text.encode()).hexdigest() if text else None,
        }


def adapter_timing(values: dict[str, int]) -> tuple[float, int, int]:
    """(bytes per cycle, read latency, write latency) of a port whose timing adapter holds
    `values` (TA_REGISTERS' names; one never written reads 0)."""
    return (
        Adapter.of_registers(values).bytes_per_cycle,
        values.get("RLATENCY", 0),
        values.get("WLATENCY", 0),
    )


def vela_memory(memories: NpuMemories | None, name: str | None, directory: Path) -> VelaMemory:
    """The configuration `name` names (None: the board's default, else ExecuTorch's), its ini
    written into `directory` (the cache root's: a cached program refers to it)."""
    if name is None:
        name = memories.default if memories is not None else None
    if name is None or name == EXECUTORCH_DEFAULT:
        return VelaMemory(EXECUTORCH_DEFAULT)
    if memories is None:
        raise UsageError(f"NPU memory {name!r}: the board describes no npu_memories")
    if name not in memories.modes:
        known = ", ".join([*memories.modes, EXECUTORCH_DEFAULT])
        raise UsageError(f"unknown NPU memory mode {name!r} for {memories.board}; known: {known}")
    return VelaMemory(name, memories.write_vela_ini(directory), memories.section_name(name))


def _number(where: str, entry: dict[str, Any], key: str, positive: bool) -> float:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(f"{where}.{key}: expected a non-negative number, got {value!r}")
    if positive and value == 0:
        raise ConfigError(f"{where}.{key}: must be greater than zero")
    return value


def _port(where: str, entry: Any) -> PortTiming:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a table of the port's timing")
    source = entry.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(f"{where}.source: every figure needs its source")
    adapter = _adapter(f"{where}.adapter", entry)
    if adapter is not None:  # as set, before the port's own limit (a faster one is an error)
        bandwidth = adapter.bwcap * TA_WORD_BYTES / (adapter.pulse_on + adapter.pulse_off)
    else:
        bandwidth = _number(where, entry, "bytes_per_cycle", positive=True)
    if bandwidth > U55_PORT_BYTES_PER_CYCLE:
        raise ConfigError(
            f"{where}.bytes_per_cycle: {bandwidth} exceeds the U55 port's "
            f"{U55_PORT_BYTES_PER_CYCLE:g} bytes per cycle"
        )
    ints = {}
    for key in (*_PORT_KEYS[1:], "max_writes"):
        value = _number(where, entry, key, positive=key in ("burst_length", "max_reads"))
        if value != int(value):
            raise ConfigError(f"{where}.{key}: expected an integer, got {value!r}")
        ints[key] = int(value)
    return PortTiming(bytes_per_cycle=float(bandwidth), source=source, adapter=adapter, **ints)


def _adapter(where: str, entry: dict[str, Any]) -> Adapter | None:
    """A port's `adapter` (its timing adapter's bandwidth registers), which says the port's
    bandwidth itself: written once, never beside a bytes_per_cycle."""
    raw = entry.get("adapter")
    if raw is None:
        return None
    if "bytes_per_cycle" in entry:
        raise ConfigError(f"{where}: give the adapter's registers or bytes_per_cycle, not both")
    if not isinstance(raw, dict) or sorted(raw) != sorted(_ADAPTER_KEYS):
        raise ConfigError(f"{where}: expected exactly {', '.join(_ADAPTER_KEYS)}")
    values = {}
    for key in _ADAPTER_KEYS:
        value = _number(where, raw, key, positive=key in ("pulse_on", "bwcap"))
        limit = _ADAPTER_LIMITS.get(key, 0xFFFF)
        if value != int(value) or value > limit:
            raise ConfigError(f"{where}.{key}: expected an integer up to {limit}, got {value!r}")
        values[key] = int(value)
    return Adapter(**values)


def _timing_adapters(where: str, data: Any, ports: dict[str, PortTiming]) -> dict[str, int]:
    """npu_memories.timing_adapters: each port's adapter base address (every port then gives
    its adapter's registers), or nothing."""
    if data is None:
        return {}
    if not isinstance(data, dict) or sorted(k for k in data if k != "source") != sorted(PORTS):
        raise ConfigError(f"{where}: expected a base address per port ({', '.join(PORTS)})")
    source = data.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(f"{where}.source: every figure needs its source")
    bases = {}
    for port in PORTS:
        base = data[port]
        if isinstance(base, bool) or not isinstance(base, int) or base <= 0 or base % 4:
            raise ConfigError(f"{where}.{port}: expected a word-aligned address, got {base!r}")
        if ports[port].adapter is None:
            raise ConfigError(f"{where}: ports.{port} gives no adapter registers to program")
        bases[port] = base
    return bases


def parse_npu_memories(where: str, board: str, data: Any) -> NpuMemories | None:
    """board.yaml's `npu_memories`, validated (None when the board has none)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a table")
    clock = data.get("clock_hz")
    if isinstance(clock, bool) or not isinstance(clock, int) or clock <= 0:
        raise ConfigError(f"{where}.clock_hz: expected a positive integer, got {clock!r}")
    raw_ports = data.get("ports")
    if not isinstance(raw_ports, dict) or sorted(raw_ports) != sorted(PORTS):
        raise ConfigError(f"{where}.ports: expected exactly {', '.join(PORTS)}")
    ports = {p: _port(f"{where}.ports.{p}", raw_ports[p]) for p in PORTS}
    raw_modes = data.get("modes")
    if not isinstance(raw_modes, dict) or not raw_modes:
        raise ConfigError(f"{where}.modes: expected a table of memory modes")
    modes = {}
    for name, entry in raw_modes.items():
        at = f"{where}.modes.{name}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{at}: expected a table")
        for key in ("const", "arena"):
            if entry.get(key) not in PORTS:
                raise ConfigError(f"{at}.{key}: expected one of {', '.join(PORTS)}")
        if entry["arena"] != "axi0":
            raise ConfigError(f"{at}.arena: Vela needs the U55's arena on axi0 (its Sram)")
        timing = entry.get("timing") or {}
        if not isinstance(timing, dict) or any(
            k not in PORTS or v not in PORTS for k, v in timing.items()
        ):
            raise ConfigError(f"{at}.timing: expected port: port (whose adapter setting it takes)")
        source = entry.get("source")
        if not isinstance(source, str) or not source.strip():
            raise ConfigError(f"{at}.source: every mode needs its source")
        stock = entry.get("stock")
        if stock is not None and (
            not isinstance(stock, dict)
            or sorted(stock) != ["memory_mode", "system_config"]
            or not all(isinstance(v, str) and _VELA_NAME.fullmatch(v) for v in stock.values())
        ):
            raise ConfigError(f"{at}.stock: expected system_config and memory_mode (Vela's names)")
        modes[str(name)] = MemoryMode(
            name=str(name),
            const_port=entry["const"],
            arena_port=entry["arena"],
            timings={p: ports[timing.get(p, p)] for p in PORTS},
            source=source,
            stock=None if stock is None else (stock["system_config"], stock["memory_mode"]),
        )
    default = data.get("default")
    if default is not None and default not in modes:
        raise ConfigError(f"{where}.default: {default!r} is not one of {', '.join(modes)}")
    stocks = [m.stock for m in modes.values() if m.stock is not None]
    if len(set(stocks)) != len(stocks):
        raise ConfigError(f"{where}.modes: two modes name the same stock configuration")
    adapters = _timing_adapters(f"{where}.timing_adapters", data.get("timing_adapters"), ports)
    return NpuMemories(board, clock, ports, modes, default, adapters)
