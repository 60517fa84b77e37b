"""The virtual Ethos-U55 and Ethos-U85: the host's model of the NPU's register file, behind
the host link.

A board without an NPU (QEMU; the Corstone-320 FVP stand-in) runs the firmware's unchanged
Ethos-U driver against it (docs/link.md "Virtual U55"): the link's platform sends the driver's
register writes in batches and each read (NPU_REGS); `handle` applies them here and answers the
read and the state of the NPU's IRQ line. Which NPU: the firmware's NPU configuration (INFO's
`npu_config`, one of its board's, so board.yaml npu.kind): VirtualU55 or VirtualU85, one model
with the register layout (NpuLayout) as the difference. The U55's register offsets, bit fields
and ID/CONFIG come from the installed Vela wheel (`ethos_u55_regs`, `driver_actions`); the U85
keeps the U55's control registers (SHARED) and has its own MEM_ATTR0-3, AXI_SRAM, AXI_EXT,
STATUS.branch_fault and its PMU at 0x1180 (regor's ethos_u85_interface.hpp), and reports the
ID/CONFIG words Vela 5.1.0 writes into a U85 payload (the wheel's Python builds U55 words only).

When the driver starts the NPU (CMD.transition_to_running_state), the model does what the NPU
would, through the target's memory:
  1. the command stream at QBASE (QSIZE bytes) is found among the program's delegates by its
     SHA-256, computed by the firmware in place (NPU_HASH: the stream is never copied); a
     stream that is none of them is refused as the NPU's cmd_parse_error (this model runs the
     command streams of the program it was given, and needs their I/O records);
  2. region 0 (BASEP0) must hold that delegate's weights (hashed in place the same way); other
     bytes there are a fault (a real NPU would compute with them: a quiet wrong result);
  3. the delegate's inputs are read at BASEP1 + their record offsets, the executor runs the
     job (by default the command stream on sdk.ethosu.functional's U55), the outputs are written
     at BASEP1 + theirs; the rest of the scratch is the NPU's own and is not copied back;
  4. STATUS gets cmd_end_reached and irq_raised, QREAD = QSIZE, and the IRQ line rises.
Memory the firmware will not let the NPU reach is the NPU's bus_status; a job the executor
refuses is cmd_parse_error. Either way `fault` keeps the reason for the host's error message.

Each job is also timed (sdk/ethosu/cycles.py: the command stream's cycle model, for the memory
system the delegate was compiled for, with the AXI port of each region as REGIONCFG/QCONFIG
say), and its PMU counts as a U55's would: PMCR (cnt_en, the counter resets), PMCNTENSET/CLR,
the 48-bit cycle counter PMCCNTR_LO/HI, PMEVTYPERn/PMEVCNTRn (CYCLE, NPU_ACTIVE, MAC_ACTIVE and
the AXI0/AXI1 read and write beats; other events count 0), overflow flags in PMOVSSET. The
counters advance by the job's modelled cycles when it ends; time between jobs is not modelled
(the cycle counter counts jobs only, NPU_IDLE stays 0). `job_log` keeps each finished job's
record (NpuJob: delegate, modelled cycles, MACs, event counts) for the host's report.
The U85's jobs are timed by the U85 cycle model (sdk/ethosu/cycles_u85.py), its PMU counting
as the U55's (the U85's event numbers for these are the U55's: SRAM beats where the U55 has
AXI0's, EXT beats where AXI1's); a job whose stream holds a command that model does not time
(RESIZE, BRANCH, a strided or indexed DMA) says why in its NpuJob, with no cycles, and its PMU
keeps what the driver wrote: no made-up figure.

The firmware waits for the host inside the exchange that started the job and gives up after
kNpuTimeoutSeconds (firmware/link/server.h: 60 s of its own time) without a request from it.
A long job (the functional model on 10^5-10^6 operations takes minutes) keeps it alive: the
executor reports progress between operations, and at most every KEEPALIVE_SECONDS of host time
the model reads one byte of the command stream (`KeepAlive`), a request the firmware answers.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from ethosu.vela.ethos_u55_regs import ethos_u55_regs as regs

from sdk.errors import FirmwareRefused, SdkError, UsageError
from sdk.ethosu.cycles import (
    MemorySystem,
    StreamTiming,
    model_stream,
    program_memory_systems,
)
from sdk.ethosu.memories import adapter_timing
from sdk.ethosu.payload import NpuTensor, VelaStream, parse_vela_stream
from sdk.ethosu.stream.decode import command_stream_bytes
from sdk.link import protocol as p
from sdk.program.pte import LoadedProgram
from sdk.reference.command_stream import ELEMENT_DTYPES
from sdk.reference.executor import VIRTUAL_NPU_EXECUTOR, NpuExecutor, boundary_view

if TYPE_CHECKING:
    from sdk.link.session import LinkSession

# Host seconds between the requests that keep a long job's exchange alive: well inside the
# firmware's 60 s (of its time, which on QEMU may run faster than the host's).
KEEPALIVE_SECONDS = 2.0
SCRATCH_REGIONS = (1, 2)  # Vela's scratch and fast scratch: one arena on this firmware
# CMD bits the register keeps (clock_q_enable, power_q_enable); the others are actions.
CMD_KEPT = 0xC


def _word(union, **fields: int) -> int:
    value = union()
    for name, bit in fields.items():
        setattr(value.bits, name, bit)
    return value.word


def _bits(union, word: int):
    value = union()
    value.word = word
    return value.bits


# ---- the register files ------------------------------------------------------------------
# The U55's from the wheel (ethos_u55_regs). The U85 keeps the control registers at the U55's
# offsets (regor's ethos_u85_interface.hpp, Vela 5.1.0): these are written once, here.
_U55 = {
    r.name: r.value
    for e in (regs.BASE, regs.BASE_POINTERS, regs.PMU)
    for r in e
    if r.name != "SIZE"  # the enum's end, no register
}
SHARED = {
    name: _U55[name]
    for name in ("ID", "STATUS", "CMD", "RESET", "QBASE0", "QBASE1", "QREAD", "QCONFIG", "QSIZE",
                 "PROT", "CONFIG", "REGIONCFG")
} | {name: offset for name, offset in _U55.items() if name.startswith("BASEP")}  # fmt: skip
# The PMU's control registers (PMCR .. PMCAXI_CHAN) relative to PMCR, the event counters'
# and their type registers' first offsets relative to it too: the same on both NPUs.
_PMU_CONTROL = {
    name: offset - _U55["PMCR"]
    for name, offset in _U55.items()
    if offset >= _U55["PMCR"] and not name.startswith("PMEV")
}
_PMEVCNTR, _PMEVTYPER = _U55["PMEVCNTR0"] - _U55["PMCR"], _U55["PMEVTYPER0"] - _U55["PMCR"]
U55_PMU, U85_PMU = _U55["PMCR"], 0x1180  # where PMCR is (the U85's: regor NPU_REG_PMCR)
U55_EVENT_COUNTERS = sum(name.startswith("PMEVCNTR") for name in _U55)
U85_EVENT_COUNTERS = 8  # regor: PMEVCNTR/PMEVTYPER arrays of 8


def _pmu(base: int, counters: int) -> dict[str, int]:
    """The PMU's registers with PMCR at `base` and `counters` event counters."""
    pmu = {name: base + offset for name, offset in _PMU_CONTROL.items()}
    for n in range(counters):
        pmu[f"PMEVCNTR{n}"] = base + _PMEVCNTR + 4 * n
        pmu[f"PMEVTYPER{n}"] = base + _PMEVTYPER + 4 * n
    return pmu


# STATUS: bits 0-6 and ecc_fault (8) are the same on both (the wheel's status_r); bit 7 is the
# U55's wd_fault and reserved on the U85, bit 9 the U85's branch_fault (NPU_OP_BRANCH).
STATUS_WD_FAULT = _word(regs.status_r, wd_fault=1)
STATUS_BRANCH_FAULT = 1 << 9
_FAULTS = _word(regs.status_r, bus_status=1, cmd_parse_error=1, ecc_fault=1)


@dataclass(frozen=True)
class NpuLayout:
    """What differs between the register files of the NPUs a virtual NPU models: the
    registers by name (SHARED, the NPU's own, its PMU), its event counters, the STATUS bits
    that are faults."""

    product: str  # "Ethos-U55", as sdk.ethosu.stream.decode.PRODUCTS names it
    reg: dict[str, int]
    event_counters: int
    faults: int

    @property
    def short(self) -> str:
        """ "U85": the name in the host's messages ("the host's virtual U85")."""
        return self.product.removeprefix("Ethos-")


U55 = NpuLayout(
    "Ethos-U55",
    {**_U55, **_pmu(U55_PMU, U55_EVENT_COUNTERS)},  # AXI_LIMIT0-3 at 0x40 in the wheel's BASE
    U55_EVENT_COUNTERS,
    _FAULTS | STATUS_WD_FAULT,
)
U85 = NpuLayout(
    "Ethos-U85",
    {
        **SHARED,
        # regor: MEM_ATTR0-3 where the U55 has AXI_LIMIT0-3, then the AXI ports' limits.
        **{f"MEM_ATTR{n}": 0x040 + 4 * n for n in range(4)},
        "AXI_SRAM": 0x050,
        "AXI_EXT": 0x054,
        **_pmu(U85_PMU, U85_EVENT_COUNTERS),
    },
    U85_EVENT_COUNTERS,
    _FAULTS | STATUS_BRANCH_FAULT,
)
LAYOUTS = {0: U55, 2: U85}  # by CONFIG's product field
REG = U55.reg  # the U55's, by name (tests)

# The PMU's fields are the same on both NPUs (the U85 has more event-counter bits in
# PMCNTENSET & co.): the cycle counter's bit, its width (PMCCNTR_HI holds bits 32 up).
CYCLE_BIT = _word(regs.pmcntenset_r, cycle_cnt=1)
CYCLE_COUNTER_BITS = 32 + regs.pmccntr_hi_r._bitfield._fields_[0][2]
PMCR_KEPT = _word(regs.pmcr_r, cnt_en=1, mask_en=1)  # the others are actions or read-only


def pmcr_reset(layout: NpuLayout) -> int:
    """PMCR after reset: it says how many event counters there are."""
    return _word(regs.pmcr_r, num_event_cnt=layout.event_counters)


def counter_bits(layout: NpuLayout) -> int:
    """PMCNTENSET & co.: one bit per event counter and the cycle counter's."""
    return (1 << layout.event_counters) - 1 | CYCLE_BIT


def set_clear(layout: NpuLayout) -> dict[int, tuple[int, bool]]:
    """Registers whose writes set or clear bits of one state, read back through either."""
    reg = layout.reg
    return {
        reg[f"{name}{action}"]: (reg[f"{name}SET"], action == "SET")
        for name in ("PMCNTEN", "PMOVS", "PMINT")
        for action in ("SET", "CLR")
    }


def read_alias(layout: NpuLayout) -> dict[int, int]:
    """The CLR registers read back as their SET ones."""
    reg = layout.reg
    return {reg[f"{name}CLR"]: reg[f"{name}SET"] for name in ("PMCNTEN", "PMOVS", "PMINT")}


def layout_of(npu_config: str) -> NpuLayout:
    """The register layout of the NPU an `npu_config` ("ethos-u85-128") names."""
    for layout in LAYOUTS.values():
        if npu_config.startswith(layout.product.lower() + "-"):
            return layout
    raise UsageError(
        f"NPU config {npu_config!r}: no virtual NPU for it (the host models "
        f"{', '.join(layout.product for layout in LAYOUTS.values())})"
    )


def _port_of(bits: int) -> str:
    """REGIONCFG/QCONFIG memory type: 0-1 AXI0, 2-3 AXI1 (the U55's two ports)."""
    return "AXI1" if bits & 2 else "AXI0"


@dataclass(frozen=True)
class NpuJob:
    """A finished job as the host's report wants it: which delegate ran, its modelled time
    (None when the cycle model could not time it, `timing_error` says why), the counts
    the PMU's events would reach over it (sdk.ethosu.cycles.StreamTiming.counters) and the
    cycles of its memory-bound operations (StreamTiming.memory_bound_cycles)."""

    delegate: int
    cycles: int | None
    macs: int | None
    counters: dict[str, int]
    timing_error: str | None = None
    memory_bound_cycles: int | None = None


STATUS_END = _word(regs.status_r, cmd_end_reached=1, irq_raised=1)
STATUS_BUS_FAULT = _word(regs.status_r, bus_status=1, irq_raised=1)
STATUS_PARSE_ERROR = _word(regs.status_r, cmd_parse_error=1, irq_raised=1)
STATUS_IRQ = _word(regs.status_r, irq_raised=1)
CMD_RUN = _word(regs.cmd_r, transition_to_running_state=1)
CMD_CLEAR_IRQ = _word(regs.cmd_r, clear_irq=1)


# The U85's ID and CONFIG as Vela 5.1.0 writes them into a payload's OPTIMIZER_CONFIG, per
# MAC count (the same for every memory mode; docs/corstone320.md): architecture 2.0.0; CONFIG
# product 2, log2 MACs, command-stream version 1, log2 of the SRAM and EXT AXI ports, and
# the larger configurations' weight decoders. Vela's Python (driver_actions) builds the
# U55's words only; regor builds these.
U85_ID = 0x20007000
U85_CONFIG = {
    "ethos-u85-128": 0x20000117,
    "ethos-u85-256": 0x20000118,
    "ethos-u85-512": 0x20001119,
    "ethos-u85-1024": 0x2000251A,
    "ethos-u85-2048": 0x2000261B,
}


@cache
def id_and_config(npu_config: str) -> tuple[int, int]:
    """The ID and CONFIG registers of an NPU in `npu_config` ("ethos-u55-128"), as Vela
    describes the hardware it compiles for."""
    if layout_of(npu_config) is U85:
        if npu_config not in U85_CONFIG:
            raise UsageError(f"{npu_config}: one of {', '.join(U85_CONFIG)}")
        return U85_ID, U85_CONFIG[npu_config]
    from ethosu.vela.architecture_features import ArchitectureFeatures
    from ethosu.vela.driver_actions import build_config_word, build_id_word

    with contextlib.redirect_stdout(io.StringIO()):  # Vela warns about defaults it picks
        arch = ArchitectureFeatures(
            vela_config_files=None,
            accelerator_config=npu_config,
            system_config=ArchitectureFeatures.DEFAULT_CONFIG,
            memory_mode=ArchitectureFeatures.DEFAULT_CONFIG,
            max_blockdep=ArchitectureFeatures.MAX_BLOCKDEP,
            verbose_config=False,
            arena_cache_size=None,
        )
    return build_id_word(), build_config_word(arch)


class NpuFault(SdkError):
    """What the NPU would flag in STATUS, with the host's reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


_clock = time.monotonic  # host time (tests replace it)


class KeepAlive:
    """The executor's progress callback during a job: the firmware hears from the host at
    least every `interval` seconds of host time while the host computes, by a 1-byte NPU_READ
    at `address` (the command stream the job runs: memory the NPU reads)."""

    def __init__(
        self, session: LinkSession, address: int, interval: float = KEEPALIVE_SECONDS
    ) -> None:
        self.session = session
        self.address = address
        self.interval = interval
        self.requests = 0
        self.failure: SdkError | None = None  # the request's own failure, not the job's
        self._last = _clock()

    def __call__(self, done: int, total: int) -> None:
        if _clock() - self._last < self.interval:
            return
        try:
            _bus(self.session.npu_read, self.address, 1, "the command stream (keep-alive)")
        except SdkError as failure:
            self.failure = failure
            raise
        self.requests += 1
        self._last = _clock()


@dataclass
class Delegate:
    index: int
    stream: VelaStream
    queue: bytes  # the command stream proper: what QBASE/QSIZE point at
    weights_sha256: bytes


@dataclass
class VirtualNpu:
    """One Ethos-U's registers (its class's `layout`) and the program whose command streams it
    runs. `executor` is made on first use (`npu_executor` names it:
    sdk.reference.executor.NPU_EXECUTORS)."""

    layout: ClassVar[NpuLayout] = U55

    npu_config: str
    program: LoadedProgram | None = None
    tosa_dir: Path | None = None
    npu_executor: str = VIRTUAL_NPU_EXECUTOR
    executor: NpuExecutor | None = None
    keepalive_seconds: float = KEEPALIVE_SECONDS
    register_accesses: int = 0
    interrupts: int = 0
    jobs: int = 0
    # What was wrong with the last job, which the NPU itself cannot say: its fault's reason.
    fault: str | None = None
    # Each job that ran to its end, in order (NpuJob): what the report reads.
    job_log: list[NpuJob] = field(default_factory=list)
    # job_log's length at the firmware's last LOAD: its STATS count the jobs from there on.
    jobs_at_load: int = 0
    _registers: dict[int, int] = field(default_factory=dict)
    _queued: bool = False  # QSIZE written since the last reset or start
    _delegates: list[Delegate] = field(default_factory=list)
    # The program's delegate calls in instruction order, and the last job's delegate: which of
    # two byte-identical delegates a job is (sdk.ethosu.device.VirtualNpu._next_in_call_order).
    _call_order: list[int] = field(default_factory=list)
    _last_delegate: int | None = None
    _memory: dict[int, MemorySystem] | None = None  # per delegate index, from its compile spec
    _timings: dict[tuple, StreamTiming] = field(default_factory=dict)
    # Offsets the driver wrote that this NPU does not have (another NPU's layout), in order.
    unknown_writes: list[int] = field(default_factory=list)
    # The board's timing adapters beside the NPU (offset from its base -> (port, register):
    # NpuMemories.adapter_registers_at) and what the firmware wrote to them, per port. A port
    # whose adapter was set runs at that setting; an NPU reset leaves them as they are.
    adapters: dict[int, tuple[str, str]] = field(default_factory=dict)
    adapter_values: dict[str, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if layout_of(self.npu_config) is not self.layout:
            raise UsageError(f"{self.npu_config} is no {self.layout.product}")
        self._reg = self.layout.reg
        self._known = set(self._reg.values())
        self._set_clear = set_clear(self.layout)
        self._alias = read_alias(self.layout)
        self.reset()
        if self.program is not None:
            for index, delegate in enumerate(self.program.plan.delegates):
                try:
                    stream = parse_vela_stream(self.program.delegate_payload(delegate))
                except SdkError:
                    continue  # not an Ethos-U payload: the firmware would not load it
                try:
                    queue = command_stream_bytes(stream.blocks["cmd_data"])
                except (SdkError, KeyError):
                    continue
                weights = hashlib.sha256(stream.blocks.get("weight_data", b"")).digest()
                self._delegates.append(Delegate(index, stream, queue, weights))
            self._call_order = [call.delegate_index for _, call in self.program.delegate_calls()]

    # ---- registers ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """ "virtual U85": what the host's messages call it."""
        return f"virtual {self.layout.short}"

    def reset(self) -> None:
        """The state after a soft reset: everything 0 but ID/CONFIG, the Q-channel bits of
        CMD, and PROT, which takes the levels RESET asked for."""
        reg = self._reg
        npu_id, config = id_and_config(self.npu_config)
        prot = self._registers.get(reg["RESET"], 0) & 3
        self._registers = {reg["ID"]: npu_id, reg["CONFIG"]: config, reg["CMD"]: CMD_KEPT}
        self._registers[reg["PROT"]] = prot
        self._registers[reg["PMCR"]] = pmcr_reset(self.layout)

    def read(self, offset: int) -> int:
        if offset in self.adapters:
            port, name = self.adapters[offset]
            return self.adapter_values.get(port, {}).get(name, 0)
        return self._registers.get(self._alias.get(offset, offset), 0)

    @property
    def irq_line(self) -> bool:
        return bool(self.read(SHARED["STATUS"]) & STATUS_IRQ)

    def handle(self, session: LinkSession, exchange: p.NpuRegs) -> tuple[int, bool]:
        """Apply one NPU_REGS exchange: the writes in order, then the read."""
        for offset, value in exchange.writes:
            self.register_accesses += 1
            self._write(session, offset, value)
        value = 0
        if exchange.read is not None:
            self.register_accesses += 1
            value = self.read(exchange.read)
        return value, self.irq_line

    def _write(self, session: LinkSession, offset: int, value: int) -> None:
        if offset in self.adapters:
            port, name = self.adapters[offset]
            self.adapter_values.setdefault(port, {})[name] = value
        elif offset == SHARED["RESET"]:
            if self._queued:  # the driver gave up waiting for an NPU it never started
                self.fault = (
                    "the driver set up a command stream (QBASE/QSIZE) but never started the NPU "
                    "(no CMD transition_to_running_state) before resetting it"
                )
            self._queued = False
            self._registers[offset] = value
            self.reset()  # completes at once: STATUS.reset_status never shows
        elif offset == SHARED["CMD"]:
            self._registers[offset] = (value & CMD_KEPT) | (self.read(offset) & ~CMD_KEPT)
            if value & CMD_CLEAR_IRQ:
                self._registers[SHARED["STATUS"]] = self.read(SHARED["STATUS"]) & ~STATUS_IRQ
            if value & CMD_RUN:
                self._queued = False
                self._start(session)
        elif offset == self._reg["PMCR"]:
            self._write_pmcr(value)
        elif offset in self._set_clear:
            state, sets = self._set_clear[offset]
            old = self.read(state)
            bits = counter_bits(self.layout)
            self._registers[state] = (old | value if sets else old & ~value) & bits
        elif offset not in (SHARED["ID"], SHARED["CONFIG"], SHARED["STATUS"], SHARED["QREAD"]):
            if offset not in self._known:
                self.unknown_writes.append(offset)
            self._registers[offset] = value  # read-only registers ignore writes
            self._queued = self._queued or offset == SHARED["QSIZE"]

    # ---- the PMU -----------------------------------------------------------------------------

    def _write_pmcr(self, value: int) -> None:
        bits = _bits(regs.pmcr_r, value)
        if bits.event_cnt_rst:
            for n in range(self.layout.event_counters):
                self._registers[self._reg[f"PMEVCNTR{n}"]] = 0
        if bits.cycle_cnt_rst:
            self._set_cycle_counter(0)
        self._registers[self._reg["PMCR"]] = (value & PMCR_KEPT) | pmcr_reset(self.layout)

    @property
    def cycle_counter(self) -> int:
        """PMCCNTR: the 48-bit cycle counter (LO, and HI's low bits)."""
        high = self.read(self._reg["PMCCNTR_HI"]) & ((1 << (CYCLE_COUNTER_BITS - 32)) - 1)
        return self.read(self._reg["PMCCNTR_LO"]) | (high << 32)

    def _set_cycle_counter(self, value: int) -> None:
        self._registers[self._reg["PMCCNTR_LO"]] = value & 0xFFFFFFFF
        self._registers[self._reg["PMCCNTR_HI"]] = value >> 32

    def _count(self, timing: StreamTiming) -> None:
        """Advance the enabled counters by a job's counts, flagging overflows."""
        if not _bits(regs.pmcr_r, self.read(self._reg["PMCR"])).cnt_en:
            return
        enabled = self.read(self._reg["PMCNTENSET"])
        overflow = 0
        cfg = _bits(regs.pmccntr_cfg_r, self.read(self._reg["PMCCNTR_CFG"]))
        start = cfg.cycle_cnt_cfg_start
        # The cycle counter counts from its start event (none: always) to its stop event:
        # over a job, all its cycles, unless the start event never happens in it.
        if enabled & CYCLE_BIT and (start == 0 or timing.event_count(start)):
            total = self.cycle_counter + timing.cycles
            if total >> CYCLE_COUNTER_BITS:
                overflow |= CYCLE_BIT
            self._set_cycle_counter(total & ((1 << CYCLE_COUNTER_BITS) - 1))
        for n in range(self.layout.event_counters):
            if enabled & (1 << n):
                typer = getattr(regs, f"pmevtyper{n}_r")
                event = _bits(typer, self.read(self._reg[f"PMEVTYPER{n}"])).ev_type
                total = self.read(self._reg[f"PMEVCNTR{n}"]) + timing.event_count(event)
                if total >> 32:
                    overflow |= 1 << n
                self._registers[self._reg[f"PMEVCNTR{n}"]] = total & 0xFFFFFFFF
        self._registers[self._reg["PMOVSSET"]] = self.read(self._reg["PMOVSSET"]) | overflow

    def timing(self, delegate: Delegate) -> StreamTiming:
        """The job's modelled time, with each region on the AXI port REGIONCFG gives it and
        the command stream on QCONFIG's (one model per delegate and port layout)."""
        regioncfg, qconfig = self.read(SHARED["REGIONCFG"]), self.read(SHARED["QCONFIG"])
        values = self.adapter_values
        adapters = tuple(sorted((a, tuple(sorted(v.items()))) for a, v in values.items()))
        key = (delegate.index, regioncfg, qconfig, adapters)
        if key not in self._timings:
            if self._memory is None:
                self._memory = program_memory_systems(self.program) if self.program else {}
            memory = self._memory.get(delegate.index)
            if memory is None:
                raise SdkError(f"delegate {delegate.index}: no Vela compile flags to time it by")
            ports = {r: _port_of(regioncfg >> (2 * r)) for r in memory.regions}
            memory = memory.with_ports(ports, _port_of(qconfig))
            memory = memory.with_port_timings(
                {port.upper(): adapter_timing(v) for port, v in self.adapter_values.items()}
            )
            cmd_data = delegate.stream.blocks["cmd_data"]
            self._timings[key] = model_stream(cmd_data, memory.npu_config, memory)
        return self._timings[key]

    def _time(self, delegate: Delegate) -> None:
        try:
            timing = self.timing(delegate)
        except SdkError as exc:
            self.job_log.append(NpuJob(delegate.index, None, None, {}, exc.message))
            return
        self._count(timing)
        self.job_log.append(
            NpuJob(
                delegate.index,
                timing.cycles,
                timing.macs,
                timing.counters(),
                memory_bound_cycles=timing.memory_bound_cycles,
            )
        )

    def _reg64(self, low: str) -> int:
        offset = SHARED[low]
        return self.read(offset) | (self.read(offset + 4) << 32)

    def basep(self, region: int) -> int:
        return self._reg64(f"BASEP{2 * region}")

    # ---- a job -------------------------------------------------------------------------------

    def _start(self, session: LinkSession) -> None:
        self.jobs += 1
        self.fault = None
        try:
            delegate = self._run(session)
            self._time(delegate)
            status = STATUS_END
            self._registers[SHARED["QREAD"]] = self.read(SHARED["QSIZE"])
        except NpuFault as fault:
            self.fault = fault.message
            status = fault.status
        self._registers[SHARED["STATUS"]] = status
        self.interrupts += 1

    def _run(self, session: LinkSession) -> Delegate:
        qbase, qsize = self._reg64("QBASE0"), self.read(SHARED["QSIZE"])
        digest = _bus(session.npu_hash, qbase, qsize, "the command stream")
        # Delegates may share a command stream (two `x.sum()` of one shape): the one whose
        # weights region 0 holds is the one the firmware runs.
        candidates = [
            d for d in self._delegates
            if len(d.queue) == qsize and hashlib.sha256(d.queue).digest() == digest
        ]  # fmt: skip
        if not candidates:
            raise NpuFault(
                STATUS_PARSE_ERROR,
                f"the command stream at 0x{qbase:x} ({qsize} bytes, QSIZE) is none of the "
                f"program's {len(self._delegates)} delegate stream(s)",
            )
        at = self.basep(0)
        held: dict[int, bytes] = {}  # region 0's hash per length read

        def holds_weights(candidate: Delegate) -> bool:
            size = len(candidate.stream.blocks.get("weight_data", b""))
            if size and size not in held:
                held[size] = _bus(session.npu_hash, at, size, "region 0")
            return not size or held[size] == candidate.weights_sha256

        delegate = self._next_in_call_order([d for d in candidates if holds_weights(d)])
        if delegate is None:
            # A real NPU would compute with whatever is there; this one says so instead, so a
            # wrong base pointer is never a quiet pass.
            which = ", ".join(str(d.index) for d in candidates)
            raise NpuFault(
                STATUS_BUS_FAULT,
                f"region 0 at 0x{at:x} does not hold delegate {which}'s weights",
            )
        self._last_delegate = delegate.index
        stream = delegate.stream
        scratch = self.basep(1)
        if self.basep(2) != scratch:
            raise NpuFault(
                STATUS_BUS_FAULT,
                f"regions 1 and 2 at 0x{scratch:x} and 0x{self.basep(2):x}: this firmware "
                "gives the NPU one scratch arena for both",
            )
        inputs = [
            _bus(session.npu_read, scratch + r.offset, r.nbytes, f"input {k}")
            for k, r in enumerate(stream.inputs)
        ]
        outputs = self._execute(delegate, inputs, KeepAlive(session, qbase, self.keepalive_seconds))
        for k, (record, data) in enumerate(zip(stream.outputs, outputs, strict=True)):
            try:
                session.npu_write(scratch + record.offset, data)
            except FirmwareRefused as refused:
                raise NpuFault(STATUS_BUS_FAULT, f"output {k}: {refused.reply.reason}") from None
        return delegate

    def _next_in_call_order(self, matching: list[Delegate]) -> Delegate | None:
        """The delegate a job is, of those whose stream and weights it runs. Byte-identical
        delegates (a model's repeated blocks) compute the same, but the profile and the report
        name each one: the first of them the program calls after the last job's delegate."""
        if len(matching) < 2 or not self._call_order:
            return matching[0] if matching else None
        by_index = {d.index: d for d in matching}
        order = self._call_order
        start = 0
        if self._last_delegate in order:
            start = order.index(self._last_delegate) + 1
        for index in order[start:] + order[:start]:
            if index in by_index:
                return by_index[index]
        return matching[0]

    def _execute(
        self, delegate: Delegate, inputs: list[bytes], keepalive: KeepAlive
    ) -> list[bytes]:
        if self.executor is None:
            from sdk.reference.executor import make_executor

            self.executor = make_executor(self.npu_executor, self.program, self.tosa_dir)
        stream = delegate.stream
        graph = self.executor.io(delegate.index)  # the first time: parsed and decoded
        keepalive(0, 1)
        arrays = []
        for k, (record, tensor, data) in enumerate(zip(stream.inputs, graph.inputs, inputs)):
            array = boundary_view(
                np.frombuffer(data, _element_dtype(record, "input", k)), tensor.dtype
            )
            if array is None or record.numel != math.prod(tensor.shape):
                raise NpuFault(
                    STATUS_PARSE_ERROR,
                    f"input {k}: the NPU record is {record.elem_size}-byte x {record.numel}, "
                    f"the {self.executor.name}'s graph takes {tensor.dtype} {list(tensor.shape)}",
                )
            arrays.append(array.reshape(tensor.shape))
        try:
            results = self.executor.run(delegate.index, arrays, keepalive)
        except SdkError as exc:
            if exc is keepalive.failure:  # the link's (or a bus fault), not the job's
                raise
            reason = f"delegate {delegate.index}: {exc.message}"
            raise NpuFault(STATUS_PARSE_ERROR, reason) from None
        outputs = []
        for k, (record, array) in enumerate(zip(stream.outputs, results, strict=True)):
            dtype = _element_dtype(record, "output", k)
            if array.size != record.numel:
                raise NpuFault(
                    STATUS_PARSE_ERROR,
                    f"output {k}: the {self.executor.name} gave {array.dtype} "
                    f"{list(array.shape)}, the NPU record is {record.elem_size}-byte x "
                    f"{record.numel}",
                )
            # A bool (the TOSA executor's comparisons) is its bytes, 0 or 1, as the U85 writes
            # them (regor ends a bool leaving the NPU with an AND 1).
            same = boundary_view(array, dtype) if array.dtype == np.bool_ else None
            outputs.append(
                np.ascontiguousarray(array if same is None else same).astype(dtype).tobytes()
            )
        return outputs


@dataclass
class VirtualU55(VirtualNpu):
    """The virtual Ethos-U55: its jobs are timed by the cycle model, which its PMU counts."""

    layout: ClassVar[NpuLayout] = U55


@dataclass
class VirtualU85(VirtualNpu):
    """The virtual Ethos-U85: the U55's model with the U85's register file (MEM_ATTR0-3,
    AXI_SRAM/AXI_EXT, the PMU at 0x1180), ID and CONFIG; its jobs run on the functional U85
    (the executor takes a stream's command set from its CONFIG product) and are timed by the
    U85 cycle model (sdk/ethosu/cycles_u85.py)."""

    layout: ClassVar[NpuLayout] = U85


def _bus(access, address: int, length: int, what: str) -> bytes:
    """`access(address, length)` (the session's npu_hash or npu_read); memory the firmware
    refuses is the NPU's bus error."""
    try:
        return access(address, length)
    except FirmwareRefused as refused:
        raise NpuFault(STATUS_BUS_FAULT, f"{what}: {refused.reply.reason}") from None


def _element_dtype(record: NpuTensor, direction: str, k: int) -> np.dtype:
    if record.elem_size not in ELEMENT_DTYPES:
        raise NpuFault(STATUS_PARSE_ERROR, f"{direction} {k}: {record.elem_size}-byte elements")
    return ELEMENT_DTYPES[record.elem_size]
