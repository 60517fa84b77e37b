"""The Ethos-U55 command set (every command's opcode and bit fields, the field enums) and
what every command set shares: the field layout language, Field, Command and CommandSet.
The U85's set, written the same way, is in registers_u85.py.

Opcodes and names come from the installed Vela wheel (`ethosu.vela.ethos_u55_regs`, enums
`cmd0`/`cmd1`) at import time, so they cannot drift from the compiler that wrote the stream.
The wheel's per-command structs are coarser than the hardware (one `param` per command), so
the field layouts are written once here, in the names and order of the field-decoded
disassembly `vela --verbose-register-command-stream` prints (regor's `ethos_u65_interface.hpp`,
which U55 shares; in the upstream Vela source).

A command is a 32-bit word: opcode bits 0-9, control bits 14-15 (0 = cmd0, 1 = cmd1), a 16-bit
parameter bits 16-31; a cmd1 command carries one more 32-bit payload word.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from ethosu.vela.ethos_u55_regs import ethos_u55_regs as _wheel

OPCODE_MASK = 0x3FF
CMD1_CONTROL = 1  # bits 14-15 of the command word

# Field enums: value -> name. Printed as ENUM_NAME (upper) + "_" + name, as Vela prints them.
ENUMS: dict[str, dict[int, str]] = {
    "acc_format": {0: "I32", 1: "I40", 2: "F16"},
    "activation_clip_range": {
        0: "OFM_PRECISION",
        2: "FORCE_UINT8",
        3: "FORCE_INT8",
        5: "FORCE_INT16",
    },
    "activation_format": {0: "NHWC", 1: "NHCWB16"},
    "activation_function": {
        0: "RELU",  # "no function": only the clip to ACTIVATION_MIN/MAX applies
        3: "TANH",
        4: "SIGMOID",
        **{16 + i: f"TABLE_{i}" for i in range(8)},
    },
    "activation_precision": {0: "B8", 1: "B16", 2: "B32", 3: "B64"},
    "activation_type": {0: "UNSIGNED", 1: "SIGNED"},
    "broadcast_mode": {0: "DISABLE", 1: "ENABLE"},
    "dma_region_mode": {0: "EXTERNAL", 1: "INTERNAL"},
    "dma_stride_mode": {0: "D1", 1: "D2", 2: "D3"},
    "elementwise_mode": dict(
        enumerate(("MUL", "ADD", "SUB", "MIN", "MAX", "LRELU", "ABS", "CLZ", "SHR", "SHL"))
    ),
    "ifm2_operand_order": {0: "ORDER_B", 1: "ORDER_A"},
    "ifm_scale_mode": {0: "OPA_OPB_16", 1: "OPA_32", 2: "OPB_32"},
    "ifm_upscale_mode": {0: "NONE", 1: "NEAREST", 2: "ZEROS"},
    "kernel_decomposition": {0: "D8X8", 1: "D4X4"},
    "kernel_dilation": {0: "NONE", 1: "X2"},
    "ofm_scale_mode": {0: "PER_CHANNEL", 1: "GLOBAL"},
    "parallel_mode": {0: "SINGLE_CORE", 1: "DUAL_CORE_DEPTH"},
    "pooling_mode": {0: "MAX", 1: "AVERAGE", 2: "REDUCE_SUM"},
    "round_mode": {0: "DBL", 1: "TRUNCATE", 2: "NATURAL"},
    "weight_order": {0: "DEPTH_FIRST", 1: "PART_KERNEL_FIRST"},
}

# Field layouts, low bit first. `name:bits` a field (`_` reserved), `name:bits=enum` an enum
# field; for cmd1 commands `|` separates the 16-bit parameter from the 32-bit payload.
# `@addr` is an address: payload bits 0-31, parameter bits 0-7 above them (U65's high byte,
# zero on U55). Commands not listed have no fields.
_LAYOUTS = """
NPU_OP_STOP                 mask:16
NPU_OP_IRQ                  mask:16
NPU_OP_POOL                 pooling_mode:3=pooling_mode
NPU_OP_ELEMENTWISE          elementwise_mode:6=elementwise_mode
NPU_OP_DMA_WAIT             k:1
NPU_OP_KERNEL_WAIT          n:2
NPU_OP_PMU_MASK             enable:1
NPU_SET_IFM_PAD_TOP         pad:7
NPU_SET_IFM_PAD_LEFT        pad:7
NPU_SET_IFM_PAD_RIGHT       pad:8
NPU_SET_IFM_PAD_BOTTOM      pad:8
NPU_SET_IFM_DEPTH_M1        depth_m1:16
NPU_SET_IFM_PRECISION       activation_type:1=activation_type _:1
                            activation_precision:2=activation_precision _:2
                            activation_format:2=activation_format scale_mode:2=ifm_scale_mode
                            _:4 round_mode:2=round_mode
NPU_SET_IFM_UPSCALE         mode:2=ifm_upscale_mode
NPU_SET_IFM_ZERO_POINT      zero_point:16
NPU_SET_IFM_WIDTH0_M1       width_m1:16
NPU_SET_IFM_HEIGHT0_M1      height_m1:16
NPU_SET_IFM_HEIGHT1_M1      height_m1:16
NPU_SET_IFM_IB_END          ib_end:6
NPU_SET_IFM_REGION          region:3
NPU_SET_OFM_WIDTH_M1        width_m1:16
NPU_SET_OFM_HEIGHT_M1       height_m1:16
NPU_SET_OFM_DEPTH_M1        depth_m1:16
NPU_SET_OFM_PRECISION       activation_type:1=activation_type
                            activation_precision:2=activation_precision _:3
                            activation_format:2=activation_format scale_mode:1=ofm_scale_mode
                            _:5 round_mode:2=round_mode
NPU_SET_OFM_BLK_WIDTH_M1    width_m1:6
NPU_SET_OFM_BLK_HEIGHT_M1   height_m1:5
NPU_SET_OFM_BLK_DEPTH_M1    depth_m1:7
NPU_SET_OFM_ZERO_POINT      zero_point:16
NPU_SET_OFM_WIDTH0_M1       width_m1:16
NPU_SET_OFM_HEIGHT0_M1      height_m1:16
NPU_SET_OFM_HEIGHT1_M1      height_m1:16
NPU_SET_OFM_REGION          region:3
NPU_SET_KERNEL_WIDTH_M1     width_m1:16
NPU_SET_KERNEL_HEIGHT_M1    height_m1:16
NPU_SET_KERNEL_STRIDE       stride_x_lsb:1 stride_y_lsb:1 weight_order:1=weight_order
                            dilation_x:1=kernel_dilation dilation_y:1=kernel_dilation
                            decomposition:1=kernel_decomposition stride_x_msb:1 _:2
                            stride_y_msb:1
NPU_SET_PARALLEL_MODE       parallel_mode:1=parallel_mode
NPU_SET_ACC_FORMAT          acc_format:2=acc_format
NPU_SET_ACTIVATION          activation_function:5=activation_function _:7
                            activation_clip_range:3=activation_clip_range
NPU_SET_ACTIVATION_MIN      clip_boundary:16
NPU_SET_ACTIVATION_MAX      clip_boundary:16
NPU_SET_WEIGHT_REGION       region:3
NPU_SET_SCALE_REGION        region:3
NPU_SET_AB_START            ab_start:6
NPU_SET_BLOCKDEP            blockdep:2
NPU_SET_DMA0_SRC_REGION     region:3 _:5 region_mode:1=dma_region_mode stride_mode:2=dma_stride_mode
NPU_SET_DMA0_DST_REGION     region:3 _:5 region_mode:1=dma_region_mode stride_mode:2=dma_stride_mode
NPU_SET_DMA0_SIZE0          size:16
NPU_SET_DMA0_SIZE1          size:16
NPU_SET_IFM2_BROADCAST      broadcast_h:1=broadcast_mode broadcast_w:1=broadcast_mode
                            broadcast_c:1=broadcast_mode _:3 operand_order:1=ifm2_operand_order
                            broadcast_constant:1=broadcast_mode
NPU_SET_IFM2_SCALAR         scalar:16
NPU_SET_IFM2_PRECISION      activation_type:1=activation_type _:1
                            activation_precision:2=activation_precision _:2
                            activation_format:2=activation_format
NPU_SET_IFM2_ZERO_POINT     zero_point:16
NPU_SET_IFM2_WIDTH0_M1      width_m1:16
NPU_SET_IFM2_HEIGHT0_M1     height_m1:16
NPU_SET_IFM2_HEIGHT1_M1     height_m1:16
NPU_SET_IFM2_IB_START       ib_start:6
NPU_SET_IFM2_REGION         region:3
NPU_SET_IFM_BASE0           @addr
NPU_SET_IFM_BASE1           @addr
NPU_SET_IFM_BASE2           @addr
NPU_SET_IFM_BASE3           @addr
NPU_SET_IFM_STRIDE_X        @addr
NPU_SET_IFM_STRIDE_Y        @addr
NPU_SET_IFM_STRIDE_C        @addr
NPU_SET_OFM_BASE0           @addr
NPU_SET_OFM_BASE1           @addr
NPU_SET_OFM_BASE2           @addr
NPU_SET_OFM_BASE3           @addr
NPU_SET_OFM_STRIDE_X        @addr
NPU_SET_OFM_STRIDE_Y        @addr
NPU_SET_OFM_STRIDE_C        @addr
NPU_SET_WEIGHT_BASE         @addr
NPU_SET_WEIGHT_LENGTH       _:16 | length:32
NPU_SET_SCALE_BASE          @addr
NPU_SET_SCALE_LENGTH        _:16 | length:20
NPU_SET_OFM_SCALE           shift:6 _:10 | scale:32
NPU_SET_OPA_SCALE           shift:6 _:10 | scale:32
NPU_SET_OPB_SCALE           _:16 | scale:16
NPU_SET_DMA0_SRC            @addr
NPU_SET_DMA0_DST            @addr
NPU_SET_DMA0_LEN            @addr
NPU_SET_DMA0_SKIP0          @addr
NPU_SET_DMA0_SKIP1          @addr
NPU_SET_IFM2_BASE0          @addr
NPU_SET_IFM2_BASE1          @addr
NPU_SET_IFM2_BASE2          @addr
NPU_SET_IFM2_BASE3          @addr
NPU_SET_IFM2_STRIDE_X       @addr
NPU_SET_IFM2_STRIDE_Y       @addr
NPU_SET_IFM2_STRIDE_C       @addr
NPU_SET_WEIGHT1_BASE        @addr
NPU_SET_WEIGHT1_LENGTH      _:16 | length:32
NPU_SET_SCALE1_BASE         @addr
NPU_SET_SCALE1_LENGTH       _:16 | length:20
"""


@dataclass(frozen=True)
class Field:
    """One bit field. `word` 0 = the 16-bit parameter, 1 = the 32-bit payload."""

    name: str
    word: int
    lsb: int
    width: int
    enum: str | None = None
    address: bool = False
    # the enum's value -> name table (its command set's); not part of equality
    names: Mapping[int, str] | None = field(default=None, compare=False, repr=False)

    def extract(self, param: int, payload: int) -> int:
        if self.address:
            return ((param & 0xFF) << 32) | payload
        source = param if self.word == 0 else payload
        return (source >> self.lsb) & ((1 << self.width) - 1)

    def text(self, value: int) -> str:
        """The value as Vela's disassembly prints it (`****` for an undefined enum value)."""
        if self.address:
            return f"0x{value:x}"
        if self.enum is not None:
            name = (self.names or {}).get(value)
            return f"{self.enum.upper()}_{name}" if name is not None else "****"
        return str(value)


@dataclass(frozen=True)
class Command:
    """One command of the set: its opcode (10 bits), kind and fields."""

    name: str  # NPU_OP_CONV, NPU_SET_IFM_BASE0, ...
    code: int
    cmd1: bool
    fields: tuple[Field, ...]

    @cached_property  # read once per command of a stream: decoding streams of 10^6 commands
    def register(self) -> str:
        """The short name a register set is kept under (IFM_BASE0); the op's kind for ops."""
        return self.name.removeprefix("NPU_SET_").removeprefix("NPU_OP_")

    @cached_property
    def is_operation(self) -> bool:
        return self.name.startswith("NPU_OP_")


def _parse_fields(spec: str, enums: Mapping[str, Mapping[int, str]]) -> tuple[Field, ...]:
    if spec.strip() == "@addr":
        return (Field("addr", 1, 0, 32, address=True),)
    fields = []
    for word, part in enumerate(spec.split("|")):
        lsb = 0
        for token in part.split():
            name, _, rest = token.partition(":")
            bits, _, enum = rest.partition("=")
            if name != "_":
                names = enums[enum] if enum else None
                fields.append(Field(name, word, lsb, int(bits), enum or None, names=names))
            lsb += int(bits)
        if lsb > (16 if word == 0 else 32):
            raise AssertionError(f"layout overflows its word: {spec}")
    return tuple(fields)


def parse_layouts(text: str) -> dict[str, str]:
    """A layout table (`NAME spec`, continued on indented lines) -> {name: spec}."""
    specs: dict[str, str] = {}
    name = ""
    for line in text.strip().splitlines():
        if line.startswith("NPU_"):
            name, _, rest = line.partition(" ")
            specs[name] = rest
        else:
            specs[name] += " " + line
    return specs


@dataclass(frozen=True)
class CommandSet:
    """One architecture's commands: by opcode (cmd0, cmd1) and by name, and its enums.

    `stream_version` is the CONFIG register's cmd_stream_version a stream for it carries."""

    name: str  # "Ethos-U55", "Ethos-U85"
    stream_version: int
    cmd0: Mapping[int, Command]
    cmd1: Mapping[int, Command]
    enums: Mapping[str, Mapping[int, str]]

    @cached_property
    def by_name(self) -> dict[str, Command]:
        return {c.name: c for c in (*self.cmd0.values(), *self.cmd1.values())}

    def lookup(self, code: int, cmd1: bool) -> Command | None:
        return (self.cmd1 if cmd1 else self.cmd0).get(code)


def build_command_set(
    name: str,
    stream_version: int,
    opcodes: tuple[Mapping[str, int], Mapping[str, int]],
    layouts: dict[str, str],
    enums: Mapping[str, Mapping[int, str]],
) -> CommandSet:
    """A CommandSet from (cmd0, cmd1) opcodes by name and a layout per command name; a layout
    for a command without an opcode is refused (the table is stale)."""
    specs = dict(layouts)
    tables: list[dict[int, Command]] = []
    for names, is_cmd1 in ((opcodes[0], False), (opcodes[1], True)):
        tables.append(
            {
                code: Command(command, code, is_cmd1, _parse_fields(specs.pop(command, ""), enums))
                for command, code in names.items()
            }
        )
    if specs:
        raise ImportError(f"{name} command set: layouts for unknown commands {sorted(specs)}")
    return CommandSet(name, stream_version, tables[0], tables[1], enums)


U55 = build_command_set(
    "Ethos-U55",
    0,
    ({e.name: e.value for e in _wheel.cmd0}, {e.name: e.value for e in _wheel.cmd1}),
    parse_layouts(_LAYOUTS),
    ENUMS,
)
# The U55's set under the names the U55-only code reads it by.
CMD0, CMD1, BY_NAME = U55.cmd0, U55.cmd1, U55.by_name
lookup = U55.lookup


def as_signed(value: int, bits: int) -> int:
    """A register value read as two's complement (zero points, clip bounds, strides)."""
    return value - (1 << bits) if value & (1 << (bits - 1)) else value
