"""Boards as data: `boards/<name>/board.yaml`, loaded and validated into a `Board`.

Nothing else in the SDK knows a board's addresses or flags: the build turns a `Board` into
`board_config.h` and linker flags, the targets read how to run it. Adding a board is adding a
folder; no Python or SConstruct change.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from sdk import __version__
from sdk.environment.paths import BOARDS_DIR
from sdk.errors import ConfigError, UsageError
from sdk.ethosu.memories import TA_REGISTERS, TA_SPAN, NpuMemories, parse_npu_memories
from sdk.utils.files import read_yaml

BOARD_FILE = "board.yaml"
DEFAULT_BOARD = "corstone300"  # what --board means when not given
SCHEMA_FILE = "board.schema.yaml"
SLOT_NAMES = ("program", "inputs", "planned", "scratch")
# How the firmware ends a run (board.yaml `runtime.exit`, SCons `exit=`): semihosting
# SYS_EXIT_EXTENDED, which QEMU and the FVP turn into their exit status but which faults on
# silicon without a debugger attached; or park the CPU (a wfi loop) and let the record speak.
EXIT_METHODS = ("semihosting", "park")


@dataclass(frozen=True)
class Region:
    """A range of the address space: [base, base + size)."""

    name: str
    base: int
    size: int

    @property
    def end(self) -> int:
        return self.base + self.size

    def contains(self, other: Region) -> bool:
        return self.base <= other.base and other.end <= self.end

    def overlaps(self, other: Region) -> bool:
        return self.base < other.end and other.base < self.end


@dataclass(frozen=True)
class Board:
    name: str
    directory: Path
    description: str
    cpu_flags: tuple[str, ...]
    toolchain_prefix: str
    specs: str
    linker_script: Path
    link_flags: tuple[str, ...]
    source_dirs: tuple[Path, ...]  # the board's folder, then its `sources` (shared code)
    memory: dict[str, Region]
    slots: dict[str, Region]
    metadata_bytes: int
    stack_bytes: int
    exit_method: str
    tick_hz: int
    console_base: int
    console_baud_divider: int
    console_rx_irq: int
    npu_kind: str  # "ethos-u55" or "ethos-u85": the driver's register layout
    npu_base: int
    npu_irq: int
    npu_default_config: str
    npu_configs: tuple[str, ...]
    targets: dict[str, dict[str, Any]] = field(default_factory=dict)
    flash: tuple[dict[str, Any], ...] = ()  # `sdk flash` methods, in order of preference
    npu_memories: NpuMemories | None = None  # the NPU's ports as Vela sees them
    cpu_clock_hz: int | None = None  # cpu.clock_hz (None: board.yaml does not say)
    no_targets: dict[str, str] = field(default_factory=dict)  # target -> why the board has none
    cpu_core: str = "cortex-m55"  # cpu.core: what the reports call the CPU

    @property
    def npu_clock_hz(self) -> int | None:
        """The NPU's clock: npu_memories.clock_hz (None: board.yaml does not say)."""
        return self.npu_memories.clock_hz if self.npu_memories else None

    def target(self, name: str) -> dict[str, Any]:
        """The `targets.<name>` section: how to run this board on an emulator."""
        if name not in self.targets:
            known = ", ".join(self.targets) or "none"
            why = f": {self.no_targets[name]}" if name in self.no_targets else ""
            raise UsageError(
                f"board {self.name} has no {name} target{why}; its targets: {known} "
                "(and host, the reference)"
            )
        return self.targets[name]

    def npu_config(self, name: str | None = None) -> str:
        """`name` checked against the board's NPU configs; None: the default."""
        config = name or self.npu_default_config
        if config not in self.npu_configs:
            raise UsageError(
                f"board {self.name}: unknown NPU config {config!r}; "
                f"choose one of {', '.join(self.npu_configs)}"
            )
        return config

    def config_macros(
        self, npu_config: str | None = None, exit_method: str | None = None
    ) -> dict[str, str]:
        """The C macros of board_config.h: the firmware's only source of board facts."""
        config = self.npu_config(npu_config)
        exit_method = check_exit_method(exit_method or self.exit_method)
        macros = {
            "SDK_BOARD_NAME": f'"{self.name}"',
            "SDK_TICK_HZ": f"{self.tick_hz}u",
            "SDK_CONSOLE_BASE": f"0x{self.console_base:08x}u",
            "SDK_CONSOLE_BAUD_DIVIDER": f"{self.console_baud_divider}u",
            "SDK_CONSOLE_RX_IRQ": f"{self.console_rx_irq}u",
            "SDK_FIRMWARE_VERSION": f'"{__version__}"',
            "SDK_NPU_BASE": f"0x{self.npu_base:08x}u",
            "SDK_NPU_IRQ": f"{self.npu_irq}u",
            "SDK_NPU_CONFIG": f'"{config}"',
            f"SDK_NPU_{self.npu_kind.upper().replace('-', '_')}": "1",  # SDK_NPU_ETHOS_U85
            "SDK_METADATA_BYTES": f"{self.metadata_bytes}u",
            f"SDK_EXIT_{exit_method.upper()}": "1",
        }
        for name, slot in self.slots.items():
            macros[f"SDK_{name.upper()}_SLOT_ADDR"] = f"0x{slot.base:08x}u"
            macros[f"SDK_{name.upper()}_SLOT_SIZE"] = f"0x{slot.size:08x}u"
        macros.update(self.timing_adapter_macros())
        return macros

    def timing_adapter_macros(self) -> dict[str, str]:
        """board_config.h's timing adapters: each port's offset from the NPU's base (the
        driver's register accesses reach them, and the link's virtual U55 sees them), the
        registers' offsets, and per Vela system config and memory mode the values
        (sdk.ethosu.memories.NpuMemories.adapter_modes). A board without adapters: none."""
        memories = self.npu_memories
        if memories is None or not memories.timing_adapters:
            return {}
        ports = list(memories.timing_adapters)
        offsets = [memories.timing_adapters[p] - self.npu_base for p in ports]
        rows = []
        for (system, mode), values in memories.adapter_modes().items():
            per_port = ", ".join(
                "{" + ", ".join(f"{values[p][name]}u" for name in TA_REGISTERS) + "}" for p in ports
            )
            rows.append(f'{{"{system}", "{mode}", {{{per_port}}}}}')
        return {
            "SDK_TA_COUNT": f"{len(ports)}u",
            "SDK_TA_OFFSETS": "{" + ", ".join(f"0x{o:x}u" for o in offsets) + "}",
            "SDK_TA_REGISTER_COUNT": f"{len(TA_REGISTERS)}u",
            "SDK_TA_REGISTER_OFFSETS": "{"
            + ", ".join(f"0x{o:02x}u" for o in TA_REGISTERS.values())
            + "}",
            "SDK_TA_MODE_COUNT": f"{len(rows)}u",
            "SDK_TA_MODES": "{" + ", ".join(rows) + "}",
        }


# The NPU's own register file (the U55's ends with its ID registers below 0x1000): a timing
# adapter the firmware reaches through the NPU's base lies past it.
NPU_REGISTER_SPAN = 0x1000


def _check_timing_adapters(
    where: str, npu_base: int, memories: NpuMemories | None, kind: str = "ethos-u55"
) -> None:
    """The firmware writes the adapters at their offset from the NPU's base (one path for the
    board's NPU and the link's virtual U55): each must lie past the NPU's registers, apart.
    Only a U55's register file is known to end at NPU_REGISTER_SPAN (a U85's PMU lies past it)."""
    if memories is None or not memories.timing_adapters:
        return
    if kind != "ethos-u55":
        raise ConfigError(
            f"{where}: npu_memories.timing_adapters: modelled beside an ethos-u55 only, "
            f"this board's NPU is {kind}"
        )
    spans = sorted(memories.timing_adapters.items(), key=lambda item: item[1])
    for k, (port, base) in enumerate(spans):
        if base - npu_base < NPU_REGISTER_SPAN:
            raise ConfigError(
                f"{where}: npu_memories.timing_adapters.{port} 0x{base:08x} is not past the "
                f"NPU's registers (npu.base 0x{npu_base:08x} + 0x{NPU_REGISTER_SPAN:x})"
            )
        if k and base - spans[k - 1][1] < TA_SPAN:
            raise ConfigError(
                f"{where}: npu_memories.timing_adapters.{port} overlaps {spans[k - 1][0]}'s"
            )


def check_exit_method(method: Any, where: str | None = None) -> str:
    """`method` if it is one of EXIT_METHODS; `where` names the board.yaml it came from."""
    if method not in EXIT_METHODS:
        what = f"{where}: runtime.exit is" if where else "unknown exit method"
        error = ConfigError if where else UsageError  # a board.yaml's, or the caller's
        raise error(f"{what} {method!r}; choose one of {', '.join(EXIT_METHODS)}")
    return str(method)


@functools.cache
def board_schema(boards_dir: Path = BOARDS_DIR) -> dict[str, Any]:
    return read_yaml((boards_dir / SCHEMA_FILE).read_text())


def check_schema(where: str, data: Any, boards_dir: Path = BOARDS_DIR) -> None:
    """board.yaml against boards/board.schema.yaml: the first problem, with where it is and,
    for a misspelt key, the key meant."""
    validator = jsonschema.Draft202012Validator(board_schema(boards_dir))
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return
    path = ".".join(str(part) for part in error.absolute_path) or "(top level)"
    message = error.message
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = list(error.schema.get("properties", {}))
        unknown = [k for k in error.instance if k not in allowed]
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        message = f"unknown key {', '.join(hints)}; known: {', '.join(allowed)}"
    raise ConfigError(f"{where}: {path}: {message}")


def available_boards(boards_dir: Path = BOARDS_DIR) -> list[str]:
    return sorted(p.parent.name for p in boards_dir.glob(f"*/{BOARD_FILE}"))


def _int(where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{where}: expected a non-negative integer, got {value!r}")
    return value


def _section(where: str, data: Any, key: str) -> Any:
    if not isinstance(data, dict) or key not in data:
        raise ConfigError(f"{where}: missing '{key}'")
    return data[key]


def _regions(where: str, data: Any) -> dict[str, Region]:
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{where}: expected a table of regions")
    regions = {}
    for name, entry in data.items():
        base = _int(f"{where}.{name}.base", _section(f"{where}.{name}", entry, "base"))
        size = _int(f"{where}.{name}.size", _section(f"{where}.{name}", entry, "size"))
        if size == 0:
            raise ConfigError(f"{where}.{name}: size is zero")
        regions[str(name)] = Region(str(name), base, size)
    return regions


def _check_layout(where: str, memory: dict[str, Region], slots: dict[str, Region]) -> None:
    missing = [s for s in SLOT_NAMES if s not in slots]
    if missing:
        raise ConfigError(f"{where}: slots lack {', '.join(missing)}")
    items = list(slots.values())
    for i, slot in enumerate(items):
        if not any(region.contains(slot) for region in memory.values()):
            raise ConfigError(f"{where}: slot {slot.name} lies outside every memory region")
        if slot.base % 16:
            raise ConfigError(f"{where}: slot {slot.name} is not 16-byte aligned")
        for other in items[i + 1 :]:
            if slot.overlaps(other):
                raise ConfigError(f"{where}: slots {slot.name} and {other.name} overlap")


def _source_dirs(where: str, directory: Path, boards_dir: Path, names: Any) -> tuple[Path, ...]:
    """The board's folder, then each folder of board.yaml `sources` under boards/ (a copy of a
    board elsewhere, as the tests make, takes the repository's shared folders)."""
    folders = [directory]
    for name in names or ():
        plain = "/" not in str(name) and not str(name).startswith(".")
        candidates = [boards_dir / str(name), BOARDS_DIR / str(name)] if plain else []
        found = next((c for c in candidates if c.is_dir()), None)
        if found is None:
            raise ConfigError(f"{where}: sources: {name!r} is not a folder under boards/")
        folders.append(found)
    return tuple(folders)


def load_board(name: str, boards_dir: Path = BOARDS_DIR) -> Board:
    """Read and validate boards/<name>/board.yaml; an unknown board lists the known ones."""
    directory = boards_dir / name
    path = directory / BOARD_FILE
    if not path.is_file():
        known = ", ".join(available_boards(boards_dir)) or "none"
        raise UsageError(f"unknown board {name!r}; boards: {known}")
    try:
        data = read_yaml(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the board: {exc}") from exc
    where = str(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a table")
    check_schema(where, data, boards_dir if (boards_dir / SCHEMA_FILE).is_file() else BOARDS_DIR)
    if data.get("name") != name:
        raise ConfigError(f"{where}: name is {data.get('name')!r}, expected {name!r}")
    cpu = _section(where, data, "cpu")
    toolchain = _section(where, data, "toolchain")
    runtime = _section(where, data, "runtime")
    console = _section(where, data, "console")
    npu = _section(where, data, "npu")
    memory = _regions(f"{where}: memory", _section(where, data, "memory"))
    slots = _regions(f"{where}: slots", _section(where, data, "slots"))
    _check_layout(where, memory, slots)
    linker_script = directory / str(_section(f"{where}: toolchain", toolchain, "linker_script"))
    if not linker_script.is_file():
        raise ConfigError(f"{where}: linker script {linker_script.name} does not exist")
    flags = _section(f"{where}: cpu", cpu, "flags")
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise ConfigError(f"{where}: cpu.flags must be a list of strings")
    configs = tuple(str(c) for c in _section(f"{where}: npu", npu, "configs"))
    default_config = str(_section(f"{where}: npu", npu, "default_config"))
    kind = str(_section(f"{where}: npu", npu, "kind"))
    foreign = [c for c in configs if not c.startswith(f"{kind}-")]
    if foreign:  # the driver's layout is the kind's; the host's virtual NPU follows the config
        raise ConfigError(f"{where}: npu.configs {foreign} are not {kind} configurations")
    if default_config not in configs:
        raise ConfigError(f"{where}: npu.default_config {default_config} is not in npu.configs")
    clock = cpu.get("clock_hz")
    npu_base = _int(f"{where}: npu.base", npu.get("base"))
    memories = parse_npu_memories(f"{where}: npu_memories", name, data.get("npu_memories"))
    _check_timing_adapters(where, npu_base, memories, str(npu.get("kind")))
    targets = data.get("targets") or {}
    if not isinstance(targets, dict) or not all(isinstance(t, dict) for t in targets.values()):
        raise ConfigError(f"{where}: targets must be a table of tables")
    return Board(
        name=name,
        directory=directory,
        description=str(data.get("description", "")),
        cpu_flags=tuple(flags),
        toolchain_prefix=str(_section(f"{where}: toolchain", toolchain, "prefix")),
        specs=str(toolchain.get("specs", "")),
        linker_script=linker_script,
        link_flags=tuple(str(f) for f in toolchain.get("link_flags") or ()),
        source_dirs=_source_dirs(where, directory, boards_dir, data.get("sources")),
        memory=memory,
        slots=slots,
        metadata_bytes=_int(f"{where}: runtime.metadata_bytes", runtime.get("metadata_bytes")),
        stack_bytes=_int(f"{where}: runtime.stack_bytes", runtime.get("stack_bytes")),
        exit_method=check_exit_method(_section(f"{where}: runtime", runtime, "exit"), where),
        tick_hz=_int(f"{where}: tick_hz", data.get("tick_hz")),
        console_base=_int(f"{where}: console.base", console.get("base")),
        console_baud_divider=_int(f"{where}: console.baud_divider", console.get("baud_divider")),
        console_rx_irq=_int(f"{where}: console.rx_irq", console.get("rx_irq")),
        npu_kind=kind,
        npu_base=npu_base,
        npu_irq=_int(f"{where}: npu.irq", npu.get("irq")),
        npu_default_config=default_config,
        npu_configs=configs,
        targets={str(k): dict(v) for k, v in targets.items()},
        flash=tuple(dict(m) for m in data.get("flash") or ()),
        npu_memories=memories,
        cpu_clock_hz=None if clock is None else _int(f"{where}: cpu.clock_hz", clock),
        no_targets={str(k): str(v) for k, v in (data.get("no_targets") or {}).items()},
        cpu_core=str(cpu.get("core", "cortex-m55")),
    )
