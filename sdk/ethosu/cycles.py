"""A cycle model of a U55 command stream: how long the NPU takes, and what its PMU counts.

The virtual U55 (sdk/ethosu/device.py) computes bit-exactly but in no time; this gives each
job the cycles a U55 would spend, so the firmware's PMU reads (PMCCNTR, PMEVCNTRn) mean what
they mean on a board. The model works on the decoded command stream (the register state at
each operation), not on Vela's graph, so it times exactly what the NPU is asked to do.

Per kernel operation (CONV, DEPTHWISE, POOL, ELEMENTWISE) it follows the cost model Vela
compiles with (regor `ethos_u55_performance.cpp`, Vela 5.1.0; docs/npu-timing.md):
  - MAC cycles per OFM block (OFM_BLK_*) from the micro-blocks it holds, the kernel's 8x8
    sub-kernels, the IFM depth in IFM blocks, weight order and 8/16-bit data;
  - output/activation (AO) cycles per OFM element by operation and fused activation;
  - a command-issue bound from the IFM/OFM block transfers;
  - the memory bound: bytes per memory / that memory's bandwidth;
  the operation takes the larger of its compute and memory bounds.
DMA_START moves DMA0_LEN bytes at the slower of its two memories (plus latency) while the
kernel operations run; DMA_WAIT and KERNEL_WAIT order the two as the stream says.

The NPU configuration's facts (MACs/cycle, micro-block, AO tables) and the memory system's
(bandwidths, latencies, burst lengths, which AXI port serves which region) come from the
installed Vela wheel's ArchitectureFeatures for the system config and memory mode the stream
was compiled with (`memory_system`, `memory_system_from_flags`).

A U85 stream takes the same path (`model_operations`) with the U85's per-command costs
(sdk/ethosu/cycles_u85.py: regor's U85 model, its memories as regor reads Vela's ini).
"""

from __future__ import annotations

import contextlib
import io
import math
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ethosu.vela.architecture_features import ArchitectureFeatures, Block, MemArea, MemPort
from ethosu.vela.ethos_u55_regs.ethos_u55_regs import pmu_event_type, resampling_mode
from ethosu.vela.operation import Kernel
from ethosu.vela.tensor import BandwidthDirection

from sdk.ethosu.cycle_terms import (
    AXI_PORTS,
    CONST_REGION,
    SUB_KERNEL,
    CycleModelError,
    KernelCommands,
    Memory,
    MemorySystem,
    OpTiming,
    Shape,
    _bits,
    _brick,
    command_shapes,
)
from sdk.ethosu.cycles_u85 import U85Model, u85_memory_system
from sdk.ethosu.stream.decode import Operation, decode_cmd_data
from sdk.ethosu.stream.registers import ENUMS

KERNEL_OPS = ("CONV", "DEPTHWISE", "POOL", "ELEMENTWISE")
REDUCE_SUM = 2  # NPU_OP_POOL pooling_mode
# The output-cycles table's rows (Vela's `output_cycles_per_elem` order).
AO_EW32_UNARY, AO_EW32_BINARY, AO_MUL32, AO_MUL_ACC40, AO_ADD, AO_ADD_ADV, AO_MAXPOOL = range(7)
AO_OTHER = 7
ACT_LUT, ACT_RELU, ACT_NONE = range(3)  # the activation table's rows
UNARY_ELEMENTWISE = ("LRELU", "ABS", "CLZ")


def _features(
    npu_config: str, system_config: str, memory_mode: str, config_file: str | None
) -> ArchitectureFeatures:
    files = None
    if config_file is not None:
        path = Path(config_file)
        if not path.is_absolute():
            from ethosu.vela.architecture_features import CONFIG_FILES_PATH  # type: ignore

            path = Path(CONFIG_FILES_PATH) / path
        files = [str(path)]
    with contextlib.redirect_stdout(io.StringIO()):  # Vela prints its defaults and overrides
        return ArchitectureFeatures(
            vela_config_files=files,
            accelerator_config=npu_config,
            system_config=system_config,
            memory_mode=memory_mode,
            max_blockdep=ArchitectureFeatures.MAX_BLOCKDEP,
            verbose_config=False,
            arena_cache_size=None,
        )


@cache
def architecture(npu_config: str) -> ArchitectureFeatures:
    """Vela's description of an NPU configuration (the memory system does not matter here)."""
    default = ArchitectureFeatures.DEFAULT_CONFIG
    return _features(npu_config, default, default, None)


@cache
def memory_system(
    npu_config: str = "ethos-u55-128",
    system_config: str = "Ethos_U55_High_End_Embedded",
    memory_mode: str = "Shared_Sram",
    config_file: str | None = "Arm/vela.ini",
) -> MemorySystem:
    """The memory system of a Vela system config and memory mode, as Vela models it."""
    arch = _features(npu_config, system_config, memory_mode, config_file)
    port_of = {arch.axi0_port: "AXI0", arch.axi1_port: "AXI1"}

    def memory(port: MemPort) -> Memory:
        area: MemArea = arch._mem_port_mapping(port)
        return Memory(
            area.name,
            port_of[area],
            float(arch.memory_bandwidths_per_cycle[area]),
            int(arch.memory_latency[area][BandwidthDirection.Read]),
            int(arch.memory_latency[area][BandwidthDirection.Write]),
            int(arch.memory_burst_length[area]),
        )

    arena = memory(arch.arena_mem_area)
    regions = {CONST_REGION: memory(arch.const_mem_area), 1: arena, 2: arena}
    return MemorySystem(npu_config, system_config, memory_mode, float(arch.core_clock), regions)


def memory_system_from_flags(flags: str | Iterable[str]) -> MemorySystem:
    """The memory system of a delegate's Vela flags (its compile spec's `compile_flags`)."""
    words = shlex.split(flags) if isinstance(flags, str) else list(flags)
    options: dict[str, str] = {}
    for k, word in enumerate(words):
        if word.startswith("--"):
            name, sep, value = word[2:].partition("=")
            if not sep and k + 1 < len(words) and not words[k + 1].startswith("--"):
                value = words[k + 1]
            options[name] = value
    default = ArchitectureFeatures.DEFAULT_CONFIG
    npu_config = options.get("accelerator-config", "ethos-u55-128")
    if npu_config.startswith("ethos-u85-"):
        return u85_memory_system(
            npu_config,
            options.get("system-config", default),
            options.get("memory-mode", default),
            options.get("config"),
        )
    return memory_system(
        npu_config,
        options.get("system-config", default),
        options.get("memory-mode", default),
        options.get("config"),
    )


def _vela_delegates(program) -> list:
    """The program's Ethos-U delegates that say how Vela compiled them (sdk.program.audit)."""
    from sdk.program.audit import read_delegates

    return [
        info
        for info in read_delegates(program)
        if info.vela is not None and "compile_flags" in info.compile_specs
    ]


def program_memory_systems(program) -> dict[int, MemorySystem]:
    """Each Ethos-U delegate's memory system, by delegate index, from its compile spec."""
    return {
        info.index: memory_system_from_flags(info.compile_specs["compile_flags"])
        for info in _vela_delegates(program)
    }


# ---- the operations' shapes, from the register state ------------------------------------------


@dataclass
class StreamTiming:
    """A command stream's modelled time and the PMU's counts for one run of it."""

    npu_config: str
    memory: MemorySystem
    ops: list[OpTiming]
    cycles: int
    macs: int
    mac_active: int
    read_beats: dict[str, int]  # per AXI port, beats of the port width (U55 8 bytes, U85 16)
    write_beats: dict[str, int]

    @property
    def npu_active(self) -> int:
        """The stream runs from start to end: the NPU is active for all of it."""
        return self.cycles

    @property
    def memory_bound_cycles(self) -> int:
        """The job's cycles spent in memory-bound operations (OpTiming.memory_bound): each
        row's `cycles` is its share of the job, so these add up to at most `cycles`."""
        return sum(op.cycles for op in self.ops if op.memory_bound)

    def event_count(self, event: int) -> int:
        """What a PMEVCNTRn set to `event` (PMEVTYPERn.ev_type) counts over the job; events
        the model does not time count 0."""
        counts = {
            pmu_event_type.CYCLE.value: self.cycles,
            pmu_event_type.NPU_ACTIVE.value: self.npu_active,
            pmu_event_type.MAC_ACTIVE.value: self.mac_active,
            pmu_event_type.AXI0_RD_DATA_BEAT_RECEIVED.value: self.read_beats["AXI0"],
            pmu_event_type.AXI0_WR_DATA_BEAT_WRITTEN.value: self.write_beats["AXI0"],
            pmu_event_type.AXI1_RD_DATA_BEAT_RECEIVED.value: self.read_beats["AXI1"],
            pmu_event_type.AXI1_WR_DATA_BEAT_WRITTEN.value: self.write_beats["AXI1"],
        }
        return counts.get(event, 0)

    def counters(self) -> dict[str, int]:
        """The modelled PMU counts by event name (pmu_event_type)."""
        names = (
            "CYCLE", "NPU_ACTIVE", "MAC_ACTIVE",
            "AXI0_RD_DATA_BEAT_RECEIVED", "AXI0_WR_DATA_BEAT_WRITTEN",
            "AXI1_RD_DATA_BEAT_RECEIVED", "AXI1_WR_DATA_BEAT_WRITTEN",
        )  # fmt: skip
        return {name: self.event_count(pmu_event_type[name].value) for name in names}


# Commands of a U85 stream the U85 model does not time: refused by name (regor 5.1.0 costs a
# RESIZE at 0 NPU cycles, "TODO"; a BRANCH makes the stream's path data-dependent).
U85_UNMODELLED_KINDS = ("RESIZE", "BRANCH")


def macs_per_cycle(npu_config: str) -> int:
    """The NPU configuration's MACs per cycle, all cores (Vela's ArchitectureFeatures: the
    figure in the name, e.g. 128 for ethos-u55-128). Vela's Python has no U85 tables (regor
    has them): a U85's is the figure in its name, across its 1-4 cores."""
    if npu_config.startswith("ethos-u85-"):
        return int(npu_config.removeprefix("ethos-u85-"))
    config = architecture(npu_config).config
    return config.macs * config.cores


class _Npu:
    """An NPU configuration's facts, from Vela's ArchitectureFeatures."""

    def __init__(self, npu_config: str) -> None:
        arch = architecture(npu_config)
        if not arch.is_ethos_u55_system:
            raise CycleModelError(f"{npu_config}: the cycle model knows the Ethos-U55 only")
        self.arch = arch
        self.macs = arch.config.macs
        self.cores = arch.config.cores
        u = arch.config.ofm_ublock
        self.ublock = Shape(u.height, u.width, u.depth)
        self.ifm_ublock_depth = arch.config.ifm_ublock.depth
        self.output_cycles = arch.output_cycles_per_elem
        self.activation_cycles = arch.activation_cycles_per_elem
        # Bytes per AXI beat: the port's width as Vela models a U55's (8 bytes per cycle).
        self.beat_bytes = int(
            arch.memory_bandwidths_per_cycle[MemArea.Sram] / arch.memory_clock_scales[MemArea.Sram]
        )


def _transfer_bytes(
    memory: Memory, is_read: bool, brick: bool, bits: int, block: Shape, shape: Shape, size: int
) -> float:
    """`size` bytes as the bus moves them: a block's bursts shorter than the memory's burst
    length cost a whole burst each (regor EstimateMemoryTransfer)."""
    burst = 8  # bits... of one element by default
    if brick:
        if shape.w * bits * 16 // 8 == block.c:
            burst = bits * block.w * block.c
        else:
            burst = 16 * bits * block.w
    else:
        x_stride = shape.c * bits // 8
        if is_read:
            burst = bits * (block.w * block.c if x_stride == block.c else block.c)
        elif block.c <= 16 and x_stride == block.c:
            burst = bits * block.w * block.c
        else:
            burst = min(64 * 8, 16 * bits, block.c * bits)
    burst = max(1, min(memory.burst_length, burst // 8))
    return size * memory.burst_length / burst


@dataclass(frozen=True)
class _Geometry:
    """An operation's shapes: what its costs are computed from."""

    mode: str | None  # pooling or elementwise mode
    kernel: Kernel
    ifm: Shape
    ofm: Shape
    block: Shape  # OFM_BLK_*
    ofm_block: Shape  # the block clipped to the OFM
    ifm_block: Shape


class _Model(KernelCommands):
    def __init__(self, npu_config: str, memory: MemorySystem) -> None:
        self.npu = _Npu(npu_config)
        self.memory = memory
        self.beat_bytes = self.npu.beat_bytes

    # -- shapes ----------------------------------------------------------------------------------

    def geometry(self, op: Operation) -> _Geometry:
        mode, kernel, ifm, ofm, block = command_shapes(op, ENUMS)
        ifm_block = self._ifm_block(op, mode, block, kernel, ifm)
        return _Geometry(mode, kernel, ifm, ofm, block, ofm.min(block), ifm_block)

    def _ublock(self, op: Operation, g: _Geometry) -> Shape:
        """The OFM micro-block; a 2-high one is used 1x4 for 1-high even-width convolutions."""
        u = self.npu.ublock
        one_row = g.ofm.h == 1 and g.ofm.w % 2 == 0 and g.kernel.height == 1
        if u.h == 2 and op.kind == "CONV" and one_row:
            return Shape(1, 4, u.c)
        return u

    def _ifm_block(
        self, op: Operation, mode: str | None, block: Shape, kernel: Kernel, ifm: Shape
    ) -> Shape:
        """The IFM block that feeds one OFM block (regor ArchEthosU55 block config)."""
        bits = _bits(op, "IFM_PRECISION")
        equal_depth = op.kind in ("DEPTHWISE", "ELEMENTWISE") or (
            op.kind == "POOL" and mode != "REDUCE_SUM"
        )
        if equal_depth:
            depth = block.c
        elif bits == 16:
            depth = -(-min(ifm.c, 16) // 4) * 4
        else:
            part_kernel = op.value("KERNEL_STRIDE", "weight_order", 0) == 1
            # as deep as the MAC unit's dot products take in one pass; 16 in part-kernel order
            limit = 16 if part_kernel else self.npu.arch.calc_ifm_block_depth(ifm.c, bits)
            granule = self.npu.ifm_ublock_depth
            depth = -(-min(ifm.c, limit) // granule) * granule
        upscaled = op.value("IFM_UPSCALE", "mode", 0)
        mode_ = resampling_mode.NEAREST if upscaled else resampling_mode.NONE
        b = self.npu.arch.get_ifm_block_size(
            depth, Block(block.w, block.h, block.c), kernel, ifm_resampling_mode=mode_
        )
        return Shape(b.height, b.width, b.depth)

    def _ao_per_element(self, op: Operation, mode: str | None) -> float:
        ifm_bits, ofm_bits = _bits(op, "IFM_PRECISION"), _bits(op, "OFM_PRECISION")
        acc40 = op.value("ACC_FORMAT", "acc_format", 0) == 1
        if op.kind == "ELEMENTWISE" and ifm_bits == 32:
            row = AO_EW32_UNARY if mode in UNARY_ELEMENTWISE else AO_EW32_BINARY
        elif mode == "MUL" and ofm_bits == 32:
            row = AO_MUL32
        elif mode == "MUL" or (op.kind != "ELEMENTWISE" and acc40):
            row = AO_MUL_ACC40
        elif mode in ("ADD", "SUB"):
            row = AO_ADD_ADV
        elif mode == "MAX" and op.kind == "POOL":
            row = AO_MAXPOOL
        else:
            row = AO_OTHER
        # TANH, SIGMOID, a LUT cost the activation table's first row. A clamp (ReLU and
        # friends) or none costs the output row alone: regor charges 1.0/element when nothing
        # is fused (its table index left at 0), but the NPU cannot tell a clamp that clips
        # nothing from no activation, and the KWS anchor (bench/npu_anchors.py, its ops all
        # such clamps) measured 413,814 cycles against 437,038 modelled at 1.0 and 419,185
        # at the output row (docs/npu-timing.md).
        act = ACT_LUT if op.value("ACTIVATION", "activation_function", 0) != 0 else ACT_NONE
        return max(self.npu.output_cycles[row], self.npu.activation_cycles[act])

    def _fm_transfer(
        self, op: Operation, prefix: str, block: Shape, shape: Shape, size: int, is_read: bool
    ) -> tuple[Memory, float]:
        """A feature map's memory and `size` bytes of it as the bus moves them."""
        mem = self.memory.memory(op.value(f"{prefix}_REGION", "region", 1))
        bits, brick = _bits(op, f"{prefix}_PRECISION"), _brick(op, f"{prefix}_PRECISION")
        return mem, _transfer_bytes(mem, is_read, brick, bits, block, shape, size)

    def _min_memory_cycles(self, op: Operation, g: _Geometry, ifm_count: int) -> float:
        """One IFM block in and one OFM block out: the command issue's memory floor."""
        cycles_ifm = 0
        for prefix in ("IFM", "IFM2")[:ifm_count]:
            size = g.ifm.min(g.ifm_block).elements * _bits(op, "IFM_PRECISION") // 8
            mem, tx = self._fm_transfer(op, prefix, g.ifm_block, g.ifm, size, True)
            cycles_ifm = max(cycles_ifm, mem.read_latency + int(tx / mem.bytes_per_cycle))
        size = g.ofm.min(g.block).elements * _bits(op, "OFM_PRECISION") // 8
        mem, tx = self._fm_transfer(op, "OFM", g.block, g.ofm, size, False)
        return cycles_ifm + mem.write_latency + int(tx / mem.bytes_per_cycle)

    # -- operations ------------------------------------------------------------------------------

    def _mac_cycles_per_block(self, op: Operation, g: _Geometry, ublock: Shape) -> int:
        """The MAC unit's cycles for one OFM block (regor EstimateMacCyclesPerBlock)."""
        npu = self.npu
        ifm_bits = _bits(op, "IFM_PRECISION")
        pooling = op.kind == "POOL" and g.mode != "REDUCE_SUM"
        part_kernel = op.kind == "CONV" and op.value("KERNEL_STRIDE", "weight_order", 0) == 1
        acc40 = op.value("ACC_FORMAT", "acc_format", 0) == 1
        ifm_block_c = g.ifm.min(g.ifm_block).c
        u = g.ofm_block.blocks(ublock)
        u_wh = u.h * u.w
        wb = 32 * ublock.c // 8  # cycles to load one micro-block's weights
        mac = 0
        for x in range(0, g.kernel.width, SUB_KERNEL):
            for y in range(0, g.kernel.height, SUB_KERNEL):
                elements = min(g.kernel.height - y, SUB_KERNEL) * min(
                    g.kernel.width - x, SUB_KERNEL
                )
                if pooling:
                    steps = 1
                    cycles = (
                        max(4, elements) * u.elements * (1 if npu.macs == 32 else ifm_bits // 2)
                    )
                elif op.kind == "DEPTHWISE":
                    steps = -(-elements // 4)
                    cycles = max(wb, 4 * u_wh * (ifm_bits // 8)) * steps * u.c
                elif not part_kernel:
                    steps = elements
                    cycles = max(wb, 4 * u_wh) * steps * u.c
                else:
                    steps = -(-elements // (2 if ifm_bits == 16 else 4))
                    cycles = max(wb, 4 * u_wh) * steps * u.c * -(-ifm_block_c // 8)
                # the accumulators' latency shows when a block is a single micro-block in WH
                if npu.macs == 32:
                    per = 7 if acc40 else 3
                else:
                    per = 3 if acc40 and npu.macs <= 128 else 2
                delay = 0
                if u_wh == 1:
                    delay = per * steps if u.c == 1 else per * (steps - 1) * u.c
                if npu.macs == 32 and (u.w == 1 or u.h == 1) and u.c > 1 and acc40:
                    delay += per * u.c
                if part_kernel:
                    delay *= -(-ifm_block_c // 8)
                mac += cycles + delay
        if op.kind == "CONV" or g.mode == "REDUCE_SUM":  # the dot products span the IFM depth
            mac *= -(-g.ifm.c // ifm_block_c)
        return mac // npu.cores

    def _mac_op(self, op: Operation, g: _Geometry, t: OpTiming) -> None:
        """CONV, DEPTHWISE, POOL: MAC and AO work per OFM block, overlapped (regor
        EstimateMacOpCycles)."""
        ublock = self._ublock(op, g)
        mac = self._mac_cycles_per_block(op, g, ublock)
        blocks = g.ofm.blocks(ublock).elements / g.ofm_block.blocks(ublock).elements
        ao_compute = math.ceil(self._ao_per_element(op, g.mode) * g.ofm_block.elements)
        ao = float(ao_compute)
        if op.kind in ("CONV", "DEPTHWISE") and op.value("SCALE_LENGTH", "length", 0):
            scales = self.memory.memory(op.value("SCALE_REGION", "region", CONST_REGION))
            ao = max(ao, 10 * g.ofm_block.c * scales.read_latency / 256)
        cmd = (self._min_memory_cycles(op, g, 1) + mac + ao) / 4
        mac_b, ao_b = max(mac, cmd), max(ao, cmd)
        total = mac_b * blocks + ao_b if mac_b > ao_b else ao_b * blocks + mac_b
        t.compute_cycles = int(total)
        t.mac_cycles = min(int(mac * blocks + ao), t.compute_cycles)
        t.ao_cycles = int(ao_compute * blocks + mac)
        t.cmd_cycles = int(cmd)
        dot = op.kind == "CONV" or g.mode == "REDUCE_SUM"
        t.macs = g.kernel.width * g.kernel.height * g.ofm.elements * (g.ifm.c if dot else 1)

    def _elementwise(self, op: Operation, g: _Geometry, t: OpTiming) -> None:
        """ELEMENTWISE: AO work per element, or the command issue's pace if slower (regor
        EstimateElementwiseCycles)."""
        elements = (g.ofm.round_c(16) if _brick(op, "OFM_PRECISION") else g.ofm).elements
        ao_elem = self._ao_per_element(op, g.mode)
        ao = math.ceil(ao_elem * elements)
        count = 1 if g.mode in UNARY_ELEMENTWISE or _ifm2_scalar(op) else 2
        min_mem = self._min_memory_cycles(op, g, count)
        cmd = math.ceil((min_mem / g.block.elements + ao_elem) / 4 * elements)
        t.compute_cycles = max(cmd, ao)
        t.ao_cycles, t.cmd_cycles = ao, cmd

    def _memory(self, op: Operation, g: _Geometry, t: OpTiming) -> None:
        """The bytes the operation moves per port (the PMU's beats) and, per memory, the cycles
        they take at its bandwidth, short bursts costing whole ones (the memory bound)."""
        read: dict[str, int] = dict.fromkeys(AXI_PORTS, 0)
        write: dict[str, int] = dict.fromkeys(AXI_PORTS, 0)
        cost: dict[str, float] = {}

        def move(mem: Memory, size: int, is_read: bool, on_bus: float) -> None:
            (read if is_read else write)[mem.port] += size
            cost[mem.name] = cost.get(mem.name, 0.0) + on_bus / mem.bytes_per_cycle

        def feature_map(prefix: str, elements: int, block: Shape, shape: Shape) -> None:
            size = elements * _bits(op, f"{prefix}_PRECISION") // 8
            is_read = prefix != "OFM"
            mem, on_bus = self._fm_transfer(op, prefix, block, shape, size, is_read)
            move(mem, size, is_read, on_bus)

        def stored(prefix: str, shape: Shape) -> int:
            return (shape.round_c(16) if _brick(op, f"{prefix}_PRECISION") else shape).elements

        feature_map("OFM", stored("OFM", g.ofm), g.block, g.ofm)
        if op.kind == "ELEMENTWISE":
            feature_map("IFM", stored("IFM", g.ofm), g.ifm_block, g.ifm)
            if g.mode not in UNARY_ELEMENTWISE and not _ifm2_scalar(op):
                feature_map("IFM2", stored("IFM2", g.ofm), g.ifm_block, g.ifm)
        else:
            equal_depth = op.kind == "DEPTHWISE" or (op.kind == "POOL" and g.mode != "REDUCE_SUM")
            blocks = g.ofm.blocks(g.ofm_block)
            # each OFM block (each depth block too, when its dot products span the IFM depth)
            # reads the IFM area its sub-kernels cover, clipped to the IFM: not a whole IFM
            # block at the edges (Vela's estimate charges one per OFM block)
            rows, cols = _ifm_footprint(op, g)
            depth = stored("IFM", Shape(1, 1, g.ifm.c))
            elements = rows * cols * depth * (1 if equal_depth else blocks.c)
            feature_map("IFM", elements, g.ifm_block, g.ifm)
            if op.kind in ("CONV", "DEPTHWISE"):
                refetch = blocks.h * blocks.w  # an OFM block's weights, once per OFM area
                for name in ("WEIGHT", "SCALE"):
                    size = op.value(f"{name}_LENGTH", "length", 0) * refetch
                    mem = self.memory.memory(op.value(f"{name}_REGION", "region", CONST_REGION))
                    move(mem, size, True, size)
        t.read_bytes, t.write_bytes = read, write
        t.memory_cycles = {name: int(cycles) for name, cycles in cost.items() if cycles}

    def dma(self, op: Operation) -> OpTiming:
        """A DMA moves DMA0_LEN bytes at the pace of the slower end (regor MemToMemCycles)."""
        t = OpTiming(op.index, op.stream_offset, "DMA")
        size = op.value("DMA0_LEN", "addr", 0)
        src = self.memory.memory(op.value("DMA0_SRC_REGION", "region", CONST_REGION))
        dst = self.memory.memory(op.value("DMA0_DST_REGION", "region", 1))
        t.busy_cycles = max(
            int(size / src.bytes_per_cycle) + src.read_latency,
            int(size / dst.bytes_per_cycle) + dst.write_latency,
        )
        t.read_bytes = {p: size if src.port == p else 0 for p in AXI_PORTS}
        t.write_bytes = {p: size if dst.port == p else 0 for p in AXI_PORTS}
        t.memory_cycles = {src.name: int(size / src.bytes_per_cycle)}
        if dst.name != src.name:
            t.memory_cycles[dst.name] = int(size / dst.bytes_per_cycle)
        return t


def _axis_footprint(
    ofm_len: int, block: int, stride: int, extent: int, before: int, ifm_len: int, upscale: int
) -> int:
    """IFM lines read along one axis, summed over the OFM blocks: each block's receptive field
    (`extent` taps from `before` lines ahead of its first output) clipped to the IFM."""
    total = 0
    for start in range(0, ofm_len, block):
        end = min(start + block, ofm_len)
        first = max(start * stride - before, 0)
        last = min((end - 1) * stride + extent - before, ifm_len * upscale)
        total += max(-(-last // upscale) - first // upscale, 0)
    return total


def _ifm_footprint(op: Operation, g: _Geometry) -> tuple[int, int]:
    """IFM rows and columns a kernel operation reads over its OFM blocks, per 8x8 sub-kernel."""
    upscale = 2 if op.value("IFM_UPSCALE", "mode", 0) else 1

    def axis(kernel_len: int, dilation: int, stride: int, pad: str, ofm: int, block: int, ifm: int):
        before = op.value(f"IFM_PAD_{pad}", "pad", 0)
        return sum(
            _axis_footprint(
                ofm, block, stride, (min(SUB_KERNEL, kernel_len - k) - 1) * dilation + 1,
                before - k * dilation, ifm, upscale,
            )
            for k in range(0, kernel_len, SUB_KERNEL)
        )  # fmt: skip

    k = g.kernel
    rows = axis(k.height, k.dilation.y, k.stride.y, "TOP", g.ofm.h, g.ofm_block.h, g.ifm.h)
    cols = axis(k.width, k.dilation.x, k.stride.x, "LEFT", g.ofm.w, g.ofm_block.w, g.ifm.w)
    return rows, cols


def _ifm2_scalar(op: Operation) -> bool:
    return op.value("IFM2_BROADCAST", "broadcast_constant", 0) == 1


def _op_field(op: Operation, name: str) -> int:
    return op.fields.get(name, 0)


def model_operations(
    operations: Iterable[Operation], npu_config: str, memory: MemorySystem, stream_bytes: int = 0
) -> StreamTiming:
    """Time decoded operations in stream order. Kernel operations run one after another;
    a DMA runs beside them from where it is issued; DMA_WAIT holds the stream until the DMA
    is done, KERNEL_WAIT until the kernel operations are. `stream_bytes` (the command
    stream's size) is fetched on the constants' port."""
    model = _model(npu_config, memory)
    rows: list[OpTiming] = []
    issue = npu_free = dma_free = 0
    elapsed = 0
    for op in operations:
        kind = op.kind
        if kind in KERNEL_OPS:
            # the stream's own fields (pooling/elementwise mode) ride on the op command
            t = model.kernel_op(_with_op_fields(op))
            t.start = max(issue, npu_free)
            t.end = npu_free = t.start + t.busy_cycles
            issue = t.start
        elif kind == "DMA_START":
            t = model.dma(op)
            t.start = max(issue, dma_free)
            t.end = dma_free = t.start + t.busy_cycles
        elif kind == "DMA_WAIT":
            issue = max(issue, dma_free)
            continue
        elif kind == "KERNEL_WAIT":
            if _op_field(op, "n") == 0:
                issue = max(issue, npu_free)
            continue
        elif kind in U85_UNMODELLED_KINDS:
            raise CycleModelError(f"operation {op.index}: {kind}: not modelled (not timed)")
        else:
            continue
        end = max(npu_free, dma_free)
        t.cycles, elapsed = end - elapsed, end
        rows.append(t)
    total = max(npu_free, dma_free)
    reads = {p: sum(r.read_bytes.get(p, 0) for r in rows) for p in AXI_PORTS}
    writes = {p: sum(r.write_bytes.get(p, 0) for r in rows) for p in AXI_PORTS}
    reads[memory.stream_port] += stream_bytes
    beat = model.beat_bytes
    return StreamTiming(
        npu_config,
        memory,
        rows,
        total,
        sum(r.macs for r in rows),
        sum(r.mac_cycles for r in rows),
        {p: -(-b // beat) for p, b in reads.items()},
        {p: -(-b // beat) for p, b in writes.items()},
    )


class _OpView:
    """An operation whose own command's fields read as registers (NPU_OP_POOL, ...)."""

    def __init__(self, op: Operation) -> None:
        self._op = op
        self.kind, self.index, self.stream_offset = op.kind, op.index, op.stream_offset
        self.fields = op.fields

    def value(self, register: str, name: str, default: int | None = None) -> int | None:
        if register.startswith("NPU_OP_"):
            return self._op.fields.get(name, default)
        return self._op.value(register, name, default)


def _with_op_fields(op: Operation) -> Operation:
    return _OpView(op)  # type: ignore[return-value]


def _model(npu_config: str, memory: MemorySystem) -> _Model | U85Model:
    """The per-command cost model of the NPU configuration (U55 or U85)."""
    if npu_config.startswith("ethos-u85-"):
        return U85Model(npu_config, memory)
    return _Model(npu_config, memory)


def model_stream(cmd_data: bytes, npu_config: str, memory: MemorySystem) -> StreamTiming:
    """Time a delegate's `cmd_data` (its driver actions and command stream); a stream for
    another NPU than `npu_config`'s is refused (CycleModelError)."""
    decoded = decode_cmd_data(cmd_data)
    if decoded.is_u85 != npu_config.startswith("ethos-u85-"):
        stream = "an Ethos-U85" if decoded.is_u85 else "an Ethos-U55"
        raise CycleModelError(f"{stream} command stream timed as {npu_config}: not timed")
    return model_operations(decoded.operations, npu_config, memory, 4 * decoded.stream_words)


def program_timings(
    program, memory: MemorySystem | None = None, untimed: dict[int, str] | None = None
) -> dict[int, StreamTiming]:
    """Each Ethos-U delegate's modelled time, by delegate index: under `memory` (a memory
    system to try, e.g. a tuner's candidate), else under the one its compile spec names (what
    the virtual U55 times a job with; AXI ports change the PMU's beats, not the cycles).
    A delegate the model refuses (CycleModelError: a command it does not model) is left out, so its
    callers show it as not timed; its reason goes into `untimed` when given."""
    timings = {}
    for info in _vela_delegates(program):
        system = memory or memory_system_from_flags(info.compile_specs["compile_flags"])
        try:
            timing = model_stream(info.vela.blocks["cmd_data"], system.npu_config, system)
        except CycleModelError as exc:
            if untimed is not None:
                untimed[info.index] = exc.message
            continue
        timings[info.index] = timing
    return timings
