"""Decode a delegate's `cmd_data`: the COP1 driver actions and the command stream in them.

The command set is the one OPTIMIZER_CONFIG's CONFIG word names (product bits 31:28: 0 U55,
1 U65, which shares the U55's set, 2 U85), held to its command stream version; without an
OPTIMIZER_CONFIG the stream is read as a U55's.

The result is typed: register sets with their fields decoded, and operations, each carrying
the register state in effect when it starts (the last set of every register so far), which
is all a command-stream executor needs besides the memory regions. A malformed payload is
refused with a ProgramError naming the byte offset in `cmd_data` and the reason, never
half-decoded: a corrupt stream must not reach an executor.

Driver actions (Vela's `ethosu.vela.driver_actions`, read by Arm's reference driver): fourcc
`COP1`, then 32-bit words, bits 0-7 the action, 8-15 and 16-31 its data. 1 OPTIMIZER_CONFIG +
2 words (CONFIG, ID), 2 COMMAND_STREAM (length in words: bits 8-15 high, 16-31 low) + the stream,
3 READ_APB_REG, 4 DUMP_SHRAM, 5 NOP.
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType

from sdk.errors import ProgramError
from sdk.ethosu.stream.registers import CMD1_CONTROL, OPCODE_MASK, U55, Command, CommandSet
from sdk.ethosu.stream.registers_u85 import U85

FOURCC = b"COP1"
OPTIMIZER_CONFIG, COMMAND_STREAM, READ_APB_REG, DUMP_SHRAM, NOP = 1, 2, 3, 4, 5
ACTION_NAMES = {
    OPTIMIZER_CONFIG: "OPTIMIZER_CONFIG",
    COMMAND_STREAM: "COMMAND_STREAM",
    READ_APB_REG: "READ_APB_REG",
    DUMP_SHRAM: "DUMP_SHRAM",
    NOP: "NOP",
}
# CONFIG's product field -> the command set of its streams
COMMAND_SETS: dict[int, CommandSet] = {0: U55, 1: U55, 2: U85}
PRODUCTS = {0: "Ethos-U55", 1: "Ethos-U65", 2: "Ethos-U85"}


def command_set_for(npu_config: int | None) -> CommandSet:
    """The command set of a stream compiled for CONFIG `npu_config` (None: the U55's)."""
    if npu_config is None:
        return U55
    product = npu_config >> 28
    if product not in COMMAND_SETS:
        raise ProgramError(
            f"NPU command stream: CONFIG 0x{npu_config:08x}: unknown product {product}"
        )
    return COMMAND_SETS[product]


def _refuse(offset: int, reason: str) -> ProgramError:
    return ProgramError(f"NPU command stream: cmd_data byte {offset} (0x{offset:x}): {reason}")


@dataclass(frozen=True)
class DriverAction:
    offset: int  # byte offset in cmd_data
    action: int
    word: int
    operands: tuple[int, ...] = ()  # OPTIMIZER_CONFIG: (CONFIG, ID)

    @property
    def name(self) -> str:
        return ACTION_NAMES[self.action]


@dataclass(frozen=True, eq=False)
class NpuCommand:
    """One decoded command: where it is, its raw words and its fields."""

    offset: int  # byte offset in cmd_data
    stream_offset: int  # byte offset in its command stream (what Vela's disassembly prints)
    command: Command
    param: int  # bits 16-31 of the command word
    payload: int | None  # the second word of a cmd1 command
    fields: Mapping[str, int]

    @property
    def name(self) -> str:
        return self.command.name

    @property
    def register(self) -> str:
        return self.command.register

    @property
    def word(self) -> int:
        control = CMD1_CONTROL if self.command.cmd1 else 0
        return (self.param << 16) | (control << 14) | self.command.code


@dataclass(frozen=True, eq=False)
class RegisterSet(NpuCommand):
    """NPU_SET_*: sets one register (kept under `register`, e.g. IFM_BASE0)."""


class RegisterState(Mapping[str, RegisterSet]):
    """The register state at one operation, read-only: a snapshot shared by many operations
    plus the few registers set since it. A full copy per operation cost kilobytes each, and
    Vela tiles one big copy or transpose into up to 10^6 operations."""

    __slots__ = ("_recent", "_shared")

    def __init__(self, shared: dict[str, RegisterSet], recent: dict[str, RegisterSet]) -> None:
        self._shared = shared  # neither dict is changed after this (the decoder makes new ones)
        self._recent = recent

    def __getitem__(self, name: str) -> RegisterSet:
        reg = self._recent.get(name)
        return self._shared[name] if reg is None else reg

    def get(self, name: str, default=None):  # type: ignore[override]
        reg = self._recent.get(name)
        return self._shared.get(name, default) if reg is None else reg

    def __contains__(self, name: object) -> bool:
        return name in self._recent or name in self._shared

    def __iter__(self) -> Iterator[str]:
        yield from self._shared
        yield from (name for name in self._recent if name not in self._shared)

    def __len__(self) -> int:
        return len(self._shared) + sum(name not in self._shared for name in self._recent)

    def __repr__(self) -> str:
        return f"RegisterState({dict(self)!r})"


@dataclass(frozen=True, eq=False)
class Operation(NpuCommand):
    """NPU_OP_*: CONV, DEPTHWISE, POOL, ELEMENTWISE, DMA_START, DMA_WAIT, KERNEL_WAIT,
    PMU_MASK, STOP, IRQ; `state` maps each register set so far to its last RegisterSet."""

    index: int = 0  # position among the stream's operations
    state: Mapping[str, RegisterSet] = field(default_factory=dict)
    # The registers set since the previous operation (each once, possibly to the value it
    # had); None when not known. An executor tells runs of like operations by it.
    changed: frozenset[str] | None = None

    @property
    def kind(self) -> str:
        return self.command.register

    def value(self, register: str, name: str, default: int | None = None) -> int | None:
        """A field of the register state (`default` when the register was never set)."""
        reg = self.state.get(register)
        return default if reg is None else reg.fields[name]


@dataclass
class DecodedCmdData:
    actions: list[DriverAction]
    commands: list[NpuCommand]
    stream_words: int
    npu_config: int | None = None
    npu_id: int | None = None
    command_set: CommandSet = U55

    @property
    def is_u85(self) -> bool:
        return self.command_set is U85

    @property
    def operations(self) -> list[Operation]:
        return [c for c in self.commands if isinstance(c, Operation)]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Decoding makes millions of small objects and no reference cycles: the cyclic garbage
    collector's passes over them cost more than the decoding (2-3x on a 10 MB stream)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def command_stream_bytes(data: bytes) -> bytes:
    """The command stream a driver hands the NPU (QBASE, QSIZE): the words of cmd_data's
    COMMAND_STREAM driver action, without the driver actions around them."""
    decoded = decode_cmd_data(data)
    action = next(a for a in decoded.actions if a.action == COMMAND_STREAM)
    return data[action.offset + 4 : action.offset + 4 + 4 * decoded.stream_words]


def decode_cmd_data(data: bytes) -> DecodedCmdData:
    """Decode a whole `cmd_data` block (driver actions and every command stream in it)."""
    if len(data) < 4 or data[:4] != FOURCC:
        if data[:3] == FOURCC[:3] and len(data) >= 4:
            raise _refuse(3, f"unsupported payload version {data[:4]!r} (knows COP1)")
        raise _refuse(0, f"does not start with the fourcc {FOURCC.decode()}")
    if len(data) % 4:
        raise _refuse(len(data) - len(data) % 4, f"truncated word ({len(data) % 4} bytes)")
    words = struct.unpack(f"<{len(data) // 4}I", data)
    out = DecodedCmdData([], [], 0)
    pos = 1
    while pos < len(words):
        word, at = words[pos], pos * 4
        action = word & 0xFF
        if action == OPTIMIZER_CONFIG:
            if pos + 3 > len(words):
                raise _refuse(at, "driver action OPTIMIZER_CONFIG: its 2 words run past the end")
            cfg, npu_id = words[pos + 1], words[pos + 2]
            if out.commands:
                raise _refuse(at, "OPTIMIZER_CONFIG after a command stream")
            if cfg >> 28 not in COMMAND_SETS:
                raise _refuse(at + 4, f"CONFIG 0x{cfg:08x}: unknown NPU product {cfg >> 28}")
            commands = command_set_for(cfg)
            version = (cfg >> 4) & 0xF
            if version != commands.stream_version:
                raise _refuse(
                    at + 4,
                    f"command stream version {version} for {PRODUCTS[cfg >> 28]} (knows "
                    f"{commands.stream_version})",
                )
            out.actions.append(DriverAction(at, action, word, (cfg, npu_id)))
            out.npu_config, out.npu_id, out.command_set = cfg, npu_id, commands
            pos += 3
        elif action == COMMAND_STREAM:
            length = (((word >> 8) & 0xFF) << 16) | (word >> 16)
            if pos + 1 + length > len(words):
                over = pos + 1 + length - len(words)
                raise _refuse(
                    at, f"driver action COMMAND_STREAM: {length} words, {over} past the end"
                )
            out.actions.append(DriverAction(at, action, word))
            stream = words[pos + 1 : pos + 1 + length]
            with _collector_paused():
                out.commands += decode_commands(
                    stream, at + 4, len(out.operations), out.command_set
                )
            out.stream_words += length
            pos += 1 + length
        elif action in (READ_APB_REG, DUMP_SHRAM, NOP):
            out.actions.append(DriverAction(at, action, word))
            pos += 1
        else:
            raise _refuse(at, f"unknown driver action {action} (word 0x{word:08x})")
    if not any(a.action == COMMAND_STREAM for a in out.actions):
        raise _refuse(len(data), "no COMMAND_STREAM driver action")
    return out


# The field values of a command that sets no address, by (command, parameter, payload):
# streams repeat the same few settings (an address differs at nearly every set).
# (keyed by the command's identity: the U55 and U85 sets share names, not layouts)
_FIELDS: dict[tuple[int, int, int], Mapping[str, int]] = {}
_ADDRESS_FIELD = "addr"


def _fields(command: Command, param: int, payload: int) -> Mapping[str, int]:
    fields = command.fields
    if len(fields) == 1 and fields[0].address:
        return MappingProxyType({_ADDRESS_FIELD: ((param & 0xFF) << 32) | payload})
    key = (id(command), param, payload)
    found = _FIELDS.get(key)
    if found is None:
        found = MappingProxyType({f.name: f.extract(param, payload) for f in fields})
        if len(_FIELDS) < 1 << 16:
            _FIELDS[key] = found
    return found


SNAPSHOT_AFTER = 16  # registers set since the shared snapshot before a new one is made


def decode_commands(
    words: Sequence[int], base: int = 0, first_op: int = 0, commands_of: CommandSet = U55
) -> list[NpuCommand]:
    """Decode one command stream (32-bit words) of the set `commands_of`; `base` is its byte
    offset in cmd_data.

    The register state starts empty: registers never set are absent from `state` (their
    hardware reset values are the executor's business). Vela writes one stream per payload."""
    commands: list[NpuCommand] = []
    shared: dict[str, RegisterSet] = {}  # the snapshot operations share (never changed)
    recent: dict[str, RegisterSet] = {}  # set since the snapshot
    changed: dict[str, None] = {}  # set since the previous operation, in order
    state = RegisterState(shared, {})
    pos, n_ops, count = 0, first_op, len(words)
    stopped = False
    while pos < count:
        word, at = words[pos], base + pos * 4
        if stopped:
            raise _refuse(at, f"{count - pos} words after NPU_OP_STOP")
        code, control = word & OPCODE_MASK, (word >> 14) & 0x3
        if (word >> 10) & 0xF:
            raise _refuse(at, f"reserved bits 10-13 set in command word 0x{word:08x}")
        if control > CMD1_CONTROL:
            raise _refuse(at, f"control bits {control} (neither cmd0 nor cmd1) in 0x{word:08x}")
        command = commands_of.lookup(code, control == CMD1_CONTROL)
        if command is None:
            kind = "cmd1" if control else "cmd0"
            raise _refuse(at, f"unknown {kind} opcode 0x{code:03x} (word 0x{word:08x})")
        payload = None
        if command.cmd1:
            if pos + 1 >= count:
                raise _refuse(at, f"{command.name} (cmd1) without its payload word")
            payload = words[pos + 1]
        param = word >> 16
        where = (at, at - base, command, param, payload, _fields(command, param, payload or 0))
        if command.is_operation:
            if changed:  # else the previous operation's state is this one's
                if len(recent) > SNAPSHOT_AFTER:
                    shared, recent = {**shared, **recent}, {}
                state = RegisterState(shared, dict(recent))
            op = Operation(*where, index=n_ops, state=state, changed=frozenset(changed))
            commands.append(op)
            changed.clear()
            n_ops += 1
            stopped = command.name == "NPU_OP_STOP"
        else:
            reg = RegisterSet(*where)
            recent[command.register] = reg
            changed[command.register] = None
            commands.append(reg)
        pos += 2 if command.cmd1 else 1
    if not stopped:
        raise _refuse(base + count * 4, "command stream ends without NPU_OP_STOP")
    return commands
