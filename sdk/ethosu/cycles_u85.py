"""The Ethos-U85's cycle model: sdk/ethosu/cycles.py's per-command structure with regor's U85
cost model (Vela 5.1.0, `ethosu/regor/architecture/ethosu85/ethos_u85_performance.cpp`).

The U85's facts live in regor's C++ only (the Vela wheel's Python has no U85 tables), so the
few this model needs are written here once, from `ethos_u85.cpp` (`s_EthosU85Configs`,
`s_EthosU85PerfInfo`, `SetupOfmUBlockToIfmAuTable`). The memories come from the delegate's
Vela ini as regor reads them (`regor.cpp`: bandwidth = clock_scale x 16-byte AXI x ports_used).
What differs from the U55 (docs/npu-timing.md, "The U85"):
  - the micro-block is in the stream (ACC_FORMAT.microblock); the IFM block is regor's choice
    for it (fixed IFM block depths, allocation units per micro-block);
  - MAC cycles per OFM block scale with the IFM block's depth and bits, weight decode at
    32 x micro-block depth / (8 x cores); 2:4 sparse weights halve them;
  - AO cycles by OFM bits, with a transpose or reverse as the activation term;
  - memory reads and writes per channel at regor's ChannelBW (outstanding transactions,
    read buffers per channel, latency), a memory's time the larger of its bytes at its
    bandwidth and its busiest channel.
"""

from __future__ import annotations

import configparser
import math
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from ethosu.vela.operation import Kernel

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
from sdk.ethosu.stream.decode import Operation
from sdk.ethosu.stream.registers_u85 import ENUMS

AXI_BYTES = 16  # regor.cpp axiWidthBytes for a non-U55 system config: one AXI beat
# regor MemChannel order past None: the index into a configuration's channel read buffers
MEM2MEM, IFM_STREAM, WEIGHT, FAST_WEIGHT, IFM, SCALE = range(6)
WRITE = -1  # MemChannel::Write: no read-buffer limit, the memory's max writes
UNARY = ("LRELU", "ABS", "CLZ", "NOT")
# transposes that swap H and W, and a W reverse, run the AO at half rate
# (EthosU85Performance::GetActivationCyclesPerElement)
HALF_RATE_TRANSPOSES = ("WHC", "WCH", "CWH")
# regor's LUT memory (ethos_u85.cpp: `_lutRam->SetParameters(1, 0, 0, 1, 1, 1000, 1000)`)
LUT_RAM = Memory("LutRam", "", 1.0, 0, 0, 1, ports_used=1, max_reads=1000, max_writes=1000)


@dataclass(frozen=True)
class U85Config:
    """One U85 configuration's performance facts (regor `ethos_u85.cpp`)."""

    macs: int
    cores: int
    ublocks: tuple[Shape, ...]
    channel_rbs: tuple[int, ...]  # read buffers: Mem2Mem, IFMStream, Weight, FastWeight, IFM, Scale
    output_cycles: tuple[float, ...]  # AO cycles/element by output kind (GetOutputCyclesPerElement)
    activation_cycles: tuple[float, float]  # full rate, half rate
    ifm_au: dict[Shape, tuple[Shape, Shape, Shape]]  # per micro-block, by IFM depth bits


def _s(h: int, w: int, c: int) -> Shape:
    return Shape(h, w, c)


_AU_2X2 = (_s(2, 2, 1), _s(1, 2, 2), _s(1, 1, 4))
CONFIGS = {
    c.macs: c
    for c in (
        U85Config(128, 1, (_s(1, 2, 8), _s(1, 1, 16)), (64, 64, 128, 128, 104, 16),
                  (0.5, 0.5, 0.5, 1.0, 1.0, 1.0), (0.5, 1.0),
                  dict.fromkeys((_s(1, 2, 8), _s(1, 1, 16)),
                                (_s(1, 2, 1), _s(1, 1, 2), _s(1, 1, 2)))),
        U85Config(256, 1, (_s(1, 2, 16), _s(1, 4, 8), _s(2, 2, 8)), (104, 104, 128, 128, 128, 16),
                  (0.25, 0.25, 0.25, 0.5, 0.5, 0.5), (0.25, 0.5),
                  {_s(2, 2, 8): _AU_2X2, _s(1, 2, 16): _AU_2X2,
                   _s(1, 4, 8): (_s(1, 4, 1), _s(1, 2, 2), _s(1, 1, 4))}),
        U85Config(512, 2, (_s(2, 2, 16), _s(1, 4, 16)), (128, 128, 256, 256, 128, 16),
                  (0.125, 0.125, 0.25, 0.5, 0.25, 0.25), (0.125, 0.25),
                  {_s(2, 2, 16): _AU_2X2,
                   _s(1, 4, 16): (_s(1, 4, 1), _s(1, 2, 2), _s(1, 1, 4))}),
        U85Config(1024, 4, (_s(2, 2, 32), _s(1, 4, 32), _s(2, 4, 16)),
                  (256, 256, 416, 208, 256, 16), (0.0625, 0.125, 0.25, 0.5, 0.125, 0.25),
                  (0.0625, 0.125),
                  {**dict.fromkeys((_s(2, 2, 32), _s(2, 4, 16)),
                                   (_s(2, 4, 1), _s(2, 2, 2), _s(1, 2, 4))),
                   _s(1, 4, 32): (_s(2, 4, 1), _s(1, 4, 2), _s(1, 2, 4))}),
        U85Config(2048, 4, (_s(2, 2, 64), _s(1, 4, 64), _s(4, 4, 16)),
                  (256, 256, 512, 256, 256, 16), (0.03125, 0.0625, 0.125, 0.25, 0.0625, 0.125),
                  (0.03125, 0.0625),
                  {**dict.fromkeys((_s(2, 2, 64), _s(4, 4, 16)),
                                   (_s(4, 4, 1), _s(2, 4, 2), _s(2, 2, 4))),
                   _s(1, 4, 64): (_s(4, 4, 1), _s(2, 4, 2), _s(1, 4, 4))}),
    )
}  # fmt: skip


def u85_config(npu_config: str) -> U85Config:
    macs = int(npu_config.removeprefix("ethos-u85-"))
    if macs not in CONFIGS:
        raise CycleModelError(f"{npu_config}: not an Ethos-U85 configuration ({sorted(CONFIGS)})")
    return CONFIGS[macs]


# ---- memories ------------------------------------------------------------------------------


@cache
def u85_memory_system(
    npu_config: str, system_config: str, memory_mode: str, config_file: str | None
) -> MemorySystem:
    """A U85 system config and memory mode as regor models them (regor.cpp reads Vela's ini:
    each memory's bandwidth = clock_scale x 16 bytes x ports_used; unset keys take regor's
    defaults). The memory on axi0_port is reached over the SRAM port (AXI0 in the counters'
    names), the other over EXT (AXI1)."""
    from ethosu.vela.architecture_features import CONFIG_FILES_PATH  # type: ignore

    path = Path(config_file or "Arm/vela.ini")
    if not path.is_absolute():
        path = Path(CONFIG_FILES_PATH) / path
    ini = configparser.ConfigParser()
    ini.read(path)
    system, mode = f"System_Config.{system_config}", f"Memory_Mode.{memory_mode}"
    if system not in ini or mode not in ini:
        raise CycleModelError(
            f"{npu_config}: {system_config}/{memory_mode} not in {path.name}: the U85 model "
            "needs the delegate's system config and memory mode"
        )
    sys_, mode_ = ini[system], ini[mode]
    ports = {"Axi0": sys_.get("axi0_port", "Sram"), "Axi1": sys_.get("axi1_port", "Dram")}
    port_name = {"Axi0": "AXI0", "Axi1": "AXI1"}

    def memory(axi: str) -> Memory:
        name = ports[axi]

        def get(key: str, default: float) -> float:
            return float(sys_.get(f"{name}_{key}", str(default)))

        used = int(get("ports_used", 1))
        return Memory(
            name,
            port_name[axi],
            get("clock_scale", 1) * AXI_BYTES * used,
            int(get("read_latency", 1)),
            int(get("write_latency", 1)),
            int(get("burst_length", 64)),
            ports_used=used,
            max_reads=int(get("max_reads", 1)),
            max_writes=int(get("max_writes", 1)),
        )

    const, arena = memory(mode_["const_mem_area"]), memory(mode_["arena_mem_area"])
    regions = {CONST_REGION: const, 1: arena, 2: memory(mode_["cache_mem_area"])}
    clock = float(sys_.get("core_clock", "1e9"))
    return MemorySystem(npu_config, system_config, memory_mode, clock, regions)


def channel_bandwidth(config: U85Config, mem: Memory, channel: int) -> float:
    """Bytes/cycle one channel gets from a memory: its bandwidth, or what its outstanding
    transactions carry per latency, at 80% (regor EthosU85Performance::ChannelBW)."""
    words = max(mem.burst_length // 16, 1)
    if channel == WRITE:
        outstanding, latency, rb_limit = mem.max_writes, mem.write_latency, math.inf
    else:
        outstanding, latency = mem.max_reads, mem.read_latency
        rb_limit = config.channel_rbs[channel] / words
    util = min(rb_limit, outstanding * mem.ports_used * 0.8)
    if latency == 0:
        return mem.bytes_per_cycle
    return min(mem.bytes_per_cycle, mem.burst_length * util / latency * 0.8)


def _transfer(
    cores: int,
    mem: Memory,
    is_read: bool,
    brick: bool,
    bits: int,
    block: Shape,
    shape: Shape,
    count: float,
) -> float:
    """`count` as the bus moves it: bursts shorter than the memory's cost whole ones (regor
    EstimateMemoryTransfer, U85: writes burst across cores)."""
    burst = 8
    if brick:
        if shape.w * bits * 16 // 8 == block.c:
            burst = bits * block.w * block.c
        elif is_read:
            burst = 16 * bits * block.w
        else:
            burst = 16 * bits * block.w * cores
    else:
        x_stride = shape.c * bits // 8
        if is_read:
            burst = bits * (block.w * block.c if x_stride == block.c else block.c)
        elif block.c <= 16 and x_stride == block.c:
            burst = bits * block.w * block.c
        else:
            burst = min(64 * 8, 16 * bits * cores, block.c * bits)
    burst = max(1, min(mem.burst_length, burst // 8))
    return count * mem.burst_length / burst


# ---- the model --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Geometry:
    mode: str | None
    ifm: Shape
    ofm: Shape
    block: Shape  # OFM_BLK_*
    ofm_block: Shape  # clipped to the OFM
    ublock: Shape
    ifm_block: Shape  # regor's IFM block for the OFM block (unclipped)
    kernel: Kernel
    part_kernel: bool
    sparse: bool


class U85Model(KernelCommands):
    """Per-command costs of a U85 stream (the interface of cycles._Model)."""

    def __init__(self, npu_config: str, memory: MemorySystem) -> None:
        self.config = u85_config(npu_config)
        self.memory = memory
        self.beat_bytes = AXI_BYTES

    # -- shapes ----------------------------------------------------------------------------------

    def geometry(self, op: Operation) -> _Geometry:
        mode, kernel, ifm, ofm, block = command_shapes(op, ENUMS)
        transpose = _transpose(op)
        if transpose != "HWC":  # regor costs the OFM in its transposed (written) shape
            dims = {"H": ofm.h, "W": ofm.w, "C": ofm.c}
            ofm = Shape(*(dims[axis] for axis in transpose))
        ublock = self._ublock(op)
        part_kernel = op.kind == "CONV" and op.value("KERNEL_STRIDE", "weight_order", 0) == 1
        sparse = op.value("WEIGHT_FORMAT", "weight_sparsity", 0) == 1
        g = _Geometry(
            mode, ifm, ofm, block, ofm.min(block), ublock, block, kernel, part_kernel, sparse
        )
        if op.kind != "ELEMENTWISE":
            g = replace(g, ifm_block=self._ifm_block(op, g))
        return g

    def _ublock(self, op: Operation) -> Shape:
        """ACC_FORMAT.microblock names the micro-block's H x W; its depth is the
        configuration's for that H x W."""
        name = ENUMS["microblock"][op.value("ACC_FORMAT", "microblock", 0)]
        h, w = (int(n) for n in name.removeprefix("U").split("X"))
        for u in self.config.ublocks:
            if (u.h, u.w) == (h, w):
                return u
        raise CycleModelError(
            f"operation {op.index}: micro-block {name} is not one of ethos-u85-{self.config.macs}'s"
        )

    def _au(self, depth: int, bits: int, ublock: Shape) -> Shape:
        """The IFM allocation unit (regor CalcIfmAUSize)."""
        depth_bits = depth * bits
        au = self.config.ifm_au[ublock][2 if depth_bits > 256 else 1 if depth_bits > 128 else 0]
        return Shape(au.h, au.w, au.c * 128 // bits)

    def _ifm_block(self, op: Operation, g: _Geometry) -> Shape:
        """The IFM block regor pairs with the OFM block (ArchEthosU85 block config: a fixed
        IFM depth for dot products over the IFM depth, the OFM block's for the others)."""
        bits = _bits(op, "IFM_PRECISION")
        dot = op.kind == "CONV" or g.mode == "REDUCE_SUM"
        depth = 0
        if dot:
            if g.part_kernel:
                depth = 16
            elif bits == 32 or (
                self.config.macs in (128, 256) and g.ublock.c == 16 and not g.sparse
            ):
                depth = 32
            elif g.sparse and bits == 8:
                depth = 128
            else:
                depth = 64
        au = self._au(depth or g.block.c, bits, g.ublock)
        upscale = 2 if dot and op.value("IFM_UPSCALE", "mode", 0) else 1
        k = g.kernel

        def size(out: int, stride: int, dilated: int, unit: int) -> int:
            n = math.ceil(((out - 1) * stride + min(dilated, SUB_KERNEL)) / upscale)
            return -(-n // unit) * unit

        h = size(g.block.h, k.stride.y, (k.height - 1) * k.dilation.y + 1, au.h)
        w = size(g.block.w, k.stride.x, (k.width - 1) * k.dilation.x + 1, au.w)
        return Shape(h, w, depth if dot else -(-g.block.c // au.c) * au.c)

    # -- compute ---------------------------------------------------------------------------------

    def _ao_per_element(self, op: Operation, mode: str | None) -> float:
        """regor EstimateAOCyclesPerElement for one command: its output's rate, and a
        transpose/reverse or LUT as the activation pass (a clamp costs no more than the
        output at 8 bits on any configuration; its own rate where larger)."""
        if mode == "DIV":
            return 33.0
        ifm_bits, ofm_bits = _bits(op, "IFM_PRECISION"), _bits(op, "OFM_PRECISION")
        chained = _storage(op, "OFM_PRECISION") == "CHAINED"
        binary = op.kind == "ELEMENTWISE" and mode not in UNARY
        if chained and 32 in (ifm_bits, ofm_bits):
            row = 4
        elif ofm_bits == 64:
            row = 3
        elif binary and ifm_bits == 32:
            row = 5 if ofm_bits == 32 else 4
        else:
            row = {32: 2, 16: 1}.get(ofm_bits, 0)
        out = self.config.output_cycles[row]
        transpose = _transpose(op)
        reverse = ENUMS["activation_reverse"][op.value("OFM_PRECISION", "activation_reverse", 0)]
        lut = op.value("ACTIVATION", "activation_function", 0) != 0
        clamp = _clamps(op, ofm_bits)
        if transpose in HALF_RATE_TRANSPOSES or reverse == "W":
            return max(out, self.config.activation_cycles[1])
        if lut or clamp or transpose != "HWC" or reverse != "NONE":
            return max(out, self.config.activation_cycles[0])
        return out

    def _mac_cycles_per_block(self, op: Operation, g: _Geometry) -> int:
        """regor EthosU85Performance::EstimateMacCyclesPerBlock."""
        bits = _bits(op, "IFM_PRECISION")
        ifm_block = g.ifm.min(g.ifm_block)
        u = g.ofm_block.blocks(g.ublock)
        u_wh = u.h * u.w
        acc48 = op.value("ACC_FORMAT", "acc_format", 0) == 1
        wb = 32 * g.ublock.c // (8 * self.config.cores)
        dot = op.kind == "CONV" or g.mode == "REDUCE_SUM"
        k = g.kernel
        total = 0
        for x in range(0, k.width, SUB_KERNEL):
            for y in range(0, k.height, SUB_KERNEL):
                elements = min(k.height - y, SUB_KERNEL) * min(k.width - x, SUB_KERNEL)
                if op.kind == "POOL" and not dot:
                    steps = 1
                    cycles = max(4, elements) * u.elements * (bits // 2)
                elif op.kind == "DEPTHWISE":
                    steps = -(-elements // 4)
                    cycles = max(wb, 4 * u_wh * (bits // 8)) * steps * u.c
                elif dot and not g.part_kernel:
                    steps = elements
                    cycles = max(wb, ifm_block.c // 8 * u_wh) * steps * u.c * (bits // 8)
                    cycles //= 2 if g.sparse else 1
                else:
                    steps = -(-elements // (2 if bits == 16 else 4))
                    cycles = max(wb, 4 * u_wh) * steps * u.c * -(-ifm_block.c // 8)
                    cycles //= 2 if g.sparse else 1
                delay = 3 if acc48 and self.config.macs <= 128 else 2
                delays = 0
                if u_wh == 1:
                    if u.c == 1:
                        delays = delay * steps
                    elif steps > 1:
                        delays = delay * (steps - 1) * u.c
                if g.part_kernel:
                    delays *= -(-ifm_block.c // 8)
                total += cycles + delays
        if dot:
            total *= -(-g.ifm.c // ifm_block.c)
        return total

    def _min_cycles(self, op: Operation, g: _Geometry, prefix: str) -> int:
        """One block in (IFM, IFM2) or out (OFM): latency + its bytes at the memory's
        bandwidth (regor MinimumIfmCycles/MinimumOfmCycles)."""
        is_read = prefix != "OFM"
        shape, block = (g.ifm, g.ifm_block) if is_read else (g.ofm, g.block)
        bits = _bits(op, f"{prefix}_PRECISION")
        mem = self.memory.memory(op.value(f"{prefix}_REGION", "region", 1))
        size = shape.min(block).elements * bits // 8
        tx = _transfer(
            self.config.cores,
            mem,
            is_read,
            _brick(op, f"{prefix}_PRECISION"),
            bits,
            block,
            shape,
            size,
        )
        latency = mem.read_latency if is_read else mem.write_latency
        return latency + int(tx / mem.bytes_per_cycle)

    def _mac_op(self, op: Operation, g: _Geometry, t: OpTiming) -> None:
        """regor EthosU85Performance::EstimateMacOpCycles, the command as a single slice
        (its first IFM block in and last OFM block out added)."""
        blocks = g.ofm.blocks(g.ublock).elements / g.ofm_block.blocks(g.ublock).elements
        ao_compute = math.ceil(self._ao_per_element(op, g.mode) * g.ofm_block.elements)
        ao = float(ao_compute)
        if op.kind in ("CONV", "DEPTHWISE") and op.value("SCALE_LENGTH", "length", 0):
            scales = self.memory.memory(op.value("SCALE_REGION", "region", CONST_REGION))
            ao = max(ao, 10 * g.ofm_block.c * scales.read_latency / 256)
        mac = self._mac_cycles_per_block(op, g)
        ifm_cycles, ofm_cycles = self._min_cycles(op, g, "IFM"), self._min_cycles(op, g, "OFM")
        min_mem = abs(ofm_cycles - ifm_cycles) if blocks > 1 else 0
        cmd = (min_mem + mac + ao) / 4
        mac_b, ao_b = max(mac, cmd), max(ao, cmd)
        total = int(int(mac_b * blocks) + ao_b) if mac_b > ao_b else int(ao_b * blocks + mac_b)
        t.compute_cycles = total + ofm_cycles + ifm_cycles
        t.mac_cycles = min(int(mac * blocks + ao), t.compute_cycles)
        t.ao_cycles = int(ao_compute * blocks + mac)
        t.cmd_cycles = int(cmd)
        dot = op.kind == "CONV" or g.mode == "REDUCE_SUM"
        t.macs = g.kernel.width * g.kernel.height * g.ofm.elements * (g.ifm.c if dot else 1)
        t.macs //= 2 if g.sparse else 1

    def _elementwise(self, op: Operation, g: _Geometry, t: OpTiming) -> None:
        """regor EthosU85Performance::EstimateElementwiseCycles: AO per element, or the
        command issue's pace with the block transfers overlapped."""
        elements = (g.ofm.round_c(16) if _brick(op, "OFM_PRECISION") else g.ofm).elements
        ao_elem = self._ao_per_element(op, g.mode)
        ao = math.ceil(ao_elem * elements)
        inputs = ("IFM",) if g.mode in UNARY or _ifm2_scalar(op) else ("IFM", "IFM2")
        block_cycles = max(self._min_cycles(op, g, p) for p in ("OFM", *inputs))
        cmd = math.ceil((block_cycles / g.block.elements + ao_elem) / 4 * elements)
        t.compute_cycles = max(cmd, ao)
        t.ao_cycles, t.cmd_cycles = ao, cmd

    # -- memory ----------------------------------------------------------------------------------

    def _memory(self, op: Operation, g: _Geometry, t: OpTiming) -> None:
        """Bytes per port (the PMU's beats) and per memory its time: the larger of all its
        bytes at its bandwidth and its busiest channel's (regor MeasureElementAccess,
        ElementTransferToBytes, MeasureAccessCycles; bytes, where regor counts elements)."""
        read = dict.fromkeys(AXI_PORTS, 0)
        write = dict.fromkeys(AXI_PORTS, 0)
        # memory name -> channel -> group -> bytes on the bus; and the memories by name
        moved: dict[str, dict[int, dict[str, float]]] = {}
        mems: dict[str, Memory] = {}

        def move(mem: Memory, size: int, channel: int, group: str, on_bus: float) -> None:
            (write if channel == WRITE else read)[mem.port] += size
            mems[mem.name] = mem
            per = moved.setdefault(mem.name, {}).setdefault(channel, {})
            per[group] = per.get(group, 0.0) + on_bus

        def feature_map(prefix: str, elements: int, block: Shape, shape: Shape, ch: int) -> None:
            if _storage(op, f"{prefix}_PRECISION") == "CHAINED":
                return  # the chaining buffer, inside the NPU
            bits = _bits(op, f"{prefix}_PRECISION")
            mem = self.memory.memory(op.value(f"{prefix}_REGION", "region", 1))
            size = elements * bits // 8
            on_bus = _transfer(
                self.config.cores,
                mem,
                ch != WRITE,
                _brick(op, f"{prefix}_PRECISION"),
                bits,
                block,
                shape,
                size,
            )
            move(mem, size, ch, "fm", on_bus)

        def stored(prefix: str, shape: Shape) -> Shape:
            return shape.round_c(16) if _brick(op, f"{prefix}_PRECISION") else shape

        feature_map("OFM", stored("OFM", g.ofm).elements, g.block, g.ofm, WRITE)
        if op.kind == "ELEMENTWISE":
            feature_map("IFM", stored("IFM", g.ofm).elements, g.block, g.ifm, IFM_STREAM)
            if g.mode not in UNARY and not _ifm2_scalar(op):
                feature_map("IFM2", stored("IFM2", g.ofm).elements, g.block, g.ifm, IFM_STREAM)
        else:
            equal_depth = op.kind == "DEPTHWISE" or (op.kind == "POOL" and g.mode != "REDUCE_SUM")
            ofm_blocks = g.ofm.blocks(g.ofm_block)
            count = ofm_blocks.h * ofm_blocks.w * (1 if equal_depth else ofm_blocks.c)
            k = g.kernel
            subkernels = -(-k.width // SUB_KERNEL) * -(-k.height // SUB_KERNEL)
            ifm_block = g.ifm.min(g.ifm_block)
            fetch = ifm_block.h * ifm_block.w * stored("IFM", g.ifm).c
            feature_map("IFM", fetch * subkernels * count, g.ifm_block, g.ifm, IFM)
            if op.kind in ("CONV", "DEPTHWISE"):
                refetch = ofm_blocks.h * ofm_blocks.w
                fast = op.value("WEIGHT_FORMAT", "weight_format", 0) == 1
                weights = sum(
                    op.value(f"WEIGHT{n}_LENGTH", "length", 0) for n in ("", "1", "2", "3")
                )
                mem = self.memory.memory(op.value("WEIGHT_REGION", "region", CONST_REGION))
                move(
                    mem,
                    weights * refetch,
                    FAST_WEIGHT if fast else WEIGHT,
                    "weights",
                    weights * refetch,
                )
                scales = op.value("SCALE_LENGTH", "length", 0) * refetch
                mem = self.memory.memory(op.value("SCALE_REGION", "region", CONST_REGION))
                move(mem, scales, SCALE, "scales", scales)
        t.read_bytes, t.write_bytes = read, write
        cycles: dict[str, int] = {}
        for name, channels in moved.items():
            mem = mems[name]
            busiest = max(
                sum(int(b / channel_bandwidth(self.config, mem, ch)) for b in groups.values())
                for ch, groups in channels.items()
            )
            total = sum(b for groups in channels.values() for b in groups.values())
            cycles[name] = max(int(total / mem.bytes_per_cycle), busiest)
        t.memory_cycles = {name: c for name, c in cycles.items() if c}

    def dma(self, op: Operation) -> OpTiming:
        """A contiguous DMA at the slower end (regor MemToMemCycles: the source's mem-to-mem
        channel, the destination's write channel; a LUT goes to the LUT RAM). Strided and
        indexed DMAs are not modelled."""
        t = OpTiming(op.index, op.stream_offset, "DMA")
        for side in ("SRC", "DST"):
            if op.value(f"DMA0_{side}_REGION", "idx_mode", 0):
                raise CycleModelError(
                    f"DMA {op.index}: an indexed (gather/scatter) U85 DMA is not modelled"
                )
        if op.value("DMA0_SRC_REGION", "stride_mode", 0):
            raise CycleModelError(f"DMA {op.index}: a strided U85 DMA is not modelled")
        size = op.value("DMA0_LEN", "addr", 0)
        src = self.memory.memory(op.value("DMA0_SRC_REGION", "region", CONST_REGION))
        to_lut = op.value("DMA0_DST_REGION", "region_mode", 0) == 1
        dst = LUT_RAM if to_lut else self.memory.memory(op.value("DMA0_DST_REGION", "region", 1))
        t.busy_cycles = max(
            int(size / channel_bandwidth(self.config, src, MEM2MEM)) + src.read_latency,
            int(size / channel_bandwidth(self.config, dst, WRITE)) + dst.write_latency,
        )
        t.read_bytes = {p: size if src.port == p else 0 for p in AXI_PORTS}
        t.write_bytes = {p: size if dst.port == p else 0 for p in AXI_PORTS}
        t.memory_cycles = {src.name: int(size / src.bytes_per_cycle)}
        if not to_lut and dst.name != src.name:
            t.memory_cycles[dst.name] = int(size / dst.bytes_per_cycle)
        return t


def _ifm2_scalar(op: Operation) -> bool:
    """IFM2 is OP_SCALAR: nothing read for it."""
    mode = op.value("IFM2_BROADCAST", "broadcast_mode", 0)
    return ENUMS["broadcast_mode"].get(mode) == "SCALAR"


def _transpose(op: Operation) -> str:
    """The OFM's transpose ("HWC": none; "CHW": the compute's C, H, W as the OFM's H, W, C)."""
    return ENUMS["activation_transpose"][op.value("OFM_PRECISION", "activation_transpose", 0)]


def _storage(op: Operation, register: str) -> str:
    return ENUMS["activation_storage"][op.value(register, "activation_storage", 0)]


def _clamps(op: Operation, ofm_bits: int) -> bool:
    """A clamp narrower than the OFM type's range: an activation pass regor fuses."""
    lo = op.value("ACTIVATION_MIN", "clip_boundary", None)
    hi = op.value("ACTIVATION_MAX", "clip_boundary", None)
    if lo is None or hi is None:
        return False
    signed = op.value("OFM_PRECISION", "activation_type", 1) == 1
    type_lo = -(1 << (ofm_bits - 1)) if signed else 0
    type_hi = (1 << (ofm_bits - 1)) - 1 if signed else (1 << ofm_bits) - 1
    lo = lo - (1 << 16) if lo >= 1 << 15 else lo
    hi = hi - (1 << 16) if hi >= 1 << 15 else hi
    return lo > type_lo or hi < type_hi
