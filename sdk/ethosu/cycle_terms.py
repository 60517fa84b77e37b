"""What the U55 and the U85 cycle models (sdk.ethosu.cycles, sdk.ethosu.cycles_u85) share:
a memory as the NPU sees it, a command's shapes from the register state, an operation's cost."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ethosu.vela.operation import Kernel

from sdk.errors import SdkError
from sdk.ethosu.stream.decode import Operation

AXI_PORTS = ("AXI0", "AXI1")
# Regions a Vela stream addresses: 0 its constants (weights, scales, LUTs), 1 the scratch
# arena, 2 the fast scratch (the same arena on this firmware: sdk/ethosu/device.py).
CONST_REGION = 0
SUB_KERNEL = 8  # kernels are walked in 8x8 sub-kernels (Vela's ArchitectureFeatures.SubKernelMax)


@dataclass(frozen=True)
class Memory:
    """One memory as the NPU sees it: Vela's figures for it in the compiled system config."""

    name: str
    port: str  # the AXI port that reaches it ("AXI0", "AXI1")
    bytes_per_cycle: float
    read_latency: int
    write_latency: int
    burst_length: int  # bytes
    # regor's U85 channel model (cycles_u85.channel_bandwidth) reads these; the U55's does not
    ports_used: int = 1
    max_reads: int = 1
    max_writes: int = 1


@dataclass(frozen=True)
class MemorySystem:
    """The memories a compiled stream's regions live in, and the NPU configuration."""

    npu_config: str
    system_config: str
    memory_mode: str
    core_clock: float
    regions: dict[int, Memory]  # base-pointer region -> its memory
    command_port: str = ""  # the port the command stream is fetched on ("": the constants')

    def memory(self, region: int) -> Memory:
        return self.regions.get(region, self.regions[1])  # Vela's other regions are arena

    @property
    def stream_port(self) -> str:
        return self.command_port or self.regions[CONST_REGION].port

    def with_port_timings(self, timings: dict[str, tuple[float, int, int]]) -> MemorySystem:
        """The same memories at the speed of their AXI port as a board's timing adapter sets
        it: (bytes per cycle, read latency, write latency) per port ("AXI0", "AXI1")."""

        def timed(m: Memory) -> Memory:
            if m.port not in timings:
                return m
            bandwidth, read_latency, write_latency = timings[m.port]
            return replace(
                m,
                bytes_per_cycle=bandwidth,
                read_latency=read_latency,
                write_latency=write_latency,
            )

        return replace(self, regions={r: timed(m) for r, m in self.regions.items()})

    def with_ports(self, ports: dict[int, str], command_port: str) -> MemorySystem:
        """The same memories reached through other AXI ports (a driver's REGIONCFG/QCONFIG):
        ports decide which PMU beat counters a transfer adds to, not its speed."""
        regions = {r: replace(m, port=ports.get(r, m.port)) for r, m in self.regions.items()}
        return replace(self, regions=regions, command_port=command_port)


@dataclass(frozen=True)
class Shape:
    h: int
    w: int
    c: int

    @property
    def elements(self) -> int:
        return self.h * self.w * self.c

    def min(self, other: Shape) -> Shape:
        return Shape(min(self.h, other.h), min(self.w, other.w), min(self.c, other.c))

    def blocks(self, block: Shape) -> Shape:
        """How many `block`s cover this shape, per dimension."""
        return Shape(-(-self.h // block.h), -(-self.w // block.w), -(-self.c // block.c))

    def round_c(self, granule: int) -> Shape:
        return Shape(self.h, self.w, -(-self.c // granule) * granule)


def _bits(op: Operation, register: str) -> int:
    return 8 << op.value(register, "activation_precision", 0)


def _brick(op: Operation, register: str) -> bool:
    """NHCWB16: feature maps stored in 16-channel bricks (depth rounded to 16)."""
    return op.value(register, "activation_format", 0) == 1


def _m1(op: Operation, register: str, name: str) -> int:
    return op.value(register, name, 0) + 1


def _stride(op: Operation, axis: str) -> int:
    lsb = op.value("KERNEL_STRIDE", f"stride_{axis}_lsb", 0)
    return (lsb | (op.value("KERNEL_STRIDE", f"stride_{axis}_msb", 0) << 1)) + 1


def _kernel(op: Operation) -> Kernel:
    if op.kind == "ELEMENTWISE":
        return Kernel(1, 1)
    return Kernel(
        _m1(op, "KERNEL_WIDTH_M1", "width_m1"),
        _m1(op, "KERNEL_HEIGHT_M1", "height_m1"),
        _stride(op, "x"),
        _stride(op, "y"),
        op.value("KERNEL_STRIDE", "dilation_x", 0) + 1,
        op.value("KERNEL_STRIDE", "dilation_y", 0) + 1,
    )


def _ofm(op: Operation) -> Shape:
    return Shape(
        _m1(op, "OFM_HEIGHT_M1", "height_m1"),
        _m1(op, "OFM_WIDTH_M1", "width_m1"),
        _m1(op, "OFM_DEPTH_M1", "depth_m1"),
    )


def _ifm(op: Operation, ofm: Shape, kernel: Kernel) -> Shape:
    """The IFM area the operation reads: the OFM's receptive field less the padding."""
    depth = _m1(op, "IFM_DEPTH_M1", "depth_m1")
    if op.kind == "ELEMENTWISE":
        return Shape(ofm.h, ofm.w, depth)
    upscale = 2 if op.value("IFM_UPSCALE", "mode", 0) else 1
    pads = {s: op.value(f"IFM_PAD_{s}", "pad", 0) for s in ("TOP", "BOTTOM", "LEFT", "RIGHT")}
    dh = (kernel.height - 1) * kernel.dilation.y + 1
    dw = (kernel.width - 1) * kernel.dilation.x + 1
    h = ((ofm.h - 1) * kernel.stride.y + dh - pads["TOP"] - pads["BOTTOM"]) // upscale
    w = ((ofm.w - 1) * kernel.stride.x + dw - pads["LEFT"] - pads["RIGHT"]) // upscale
    return Shape(max(h, 1), max(w, 1), depth)


# ---- timing -------------------------------------------------------------------------------------


@dataclass
class OpTiming:
    """One operation's modelled cost. `cycles` is what it adds to the job (its own time and
    any wait for a DMA before it), so the rows add up to the job's total."""

    index: int
    stream_offset: int
    kind: str
    macs: int = 0
    mac_cycles: int = 0  # the MAC unit busy (MAC_ACTIVE)
    ao_cycles: int = 0
    cmd_cycles: int = 0
    compute_cycles: int = 0  # the NPU's own bound (Vela's "NPU" column)
    memory_cycles: dict[str, int] = field(default_factory=dict)  # per memory: bytes/bandwidth
    busy_cycles: int = 0  # max(compute, memory): the operation's own time
    cycles: int = 0
    start: int = 0
    end: int = 0
    read_bytes: dict[str, int] = field(default_factory=dict)  # per AXI port
    write_bytes: dict[str, int] = field(default_factory=dict)

    @property
    def memory_bound(self) -> bool:
        """Its time is set by memory: a DMA, or a kernel operation whose memory bound exceeds
        its compute bound (MAC, AO, command issue)."""
        return self.kind == "DMA" or max(self.memory_cycles.values(), default=0) > (
            self.compute_cycles
        )


class CycleModelError(SdkError):
    """A stream this model cannot time (an NPU configuration it does not know)."""


def command_shapes(op: Operation, enums: dict) -> tuple[str | None, Kernel, Shape, Shape, Shape]:
    """A kernel command's pooling or elementwise mode (`enums`: its NPU's register enums),
    kernel, IFM and OFM shapes and OFM block, from the register state (U55 and U85 alike)."""
    mode = None
    if op.kind == "POOL":
        mode = enums["pooling_mode"][op.value("NPU_OP_POOL", "pooling_mode", 0)]
    elif op.kind == "ELEMENTWISE":
        mode = enums["elementwise_mode"][op.value("NPU_OP_ELEMENTWISE", "elementwise_mode", 0)]
    kernel = _kernel(op)
    ofm = _ofm(op)
    ifm = _ifm(op, ofm, kernel)
    block = Shape(
        _m1(op, "OFM_BLK_HEIGHT_M1", "height_m1"),
        _m1(op, "OFM_BLK_WIDTH_M1", "width_m1"),
        _m1(op, "OFM_BLK_DEPTH_M1", "depth_m1"),
    )
    return mode, kernel, ifm, ofm, block


class KernelCommands:
    """A cycle model's kernel command: its MAC (or elementwise) cost and its memory cost, the
    larger of them its own time. The U55 and U85 models give `geometry`, `_mac_op`,
    `_elementwise` and `_memory`."""

    def kernel_op(self, op: Operation) -> OpTiming:
        timing = OpTiming(op.index, op.stream_offset, op.kind)
        g = self.geometry(op)  # type: ignore[attr-defined]
        if op.kind == "ELEMENTWISE":
            self._elementwise(op, g, timing)  # type: ignore[attr-defined]
        else:
            self._mac_op(op, g, timing)  # type: ignore[attr-defined]
        self._memory(op, g, timing)  # type: ignore[attr-defined]
        timing.busy_cycles = max(timing.compute_cycles, *timing.memory_cycles.values(), 0)
        return timing
