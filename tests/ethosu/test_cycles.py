"""The cycle model (sdk/ethosu/cycles.py) on real exported streams, and the virtual U55's PMU
(sdk/ethosu/device.py) as the firmware's driver reads it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from ethosu.vela.ethos_u55_regs.ethos_u55_regs import pmu_event_type

from sdk.ethosu.cycles import StreamTiming, memory_system, model_operations
from sdk.ethosu.device import CYCLE_BIT, REG, VirtualU55
from sdk.ethosu.stream.decode import decode_cmd_data
from sdk.ethosu.vela_estimate import match, run_vela

MEMORY = memory_system()


def _timing(cycles: int, reads: int = 0) -> StreamTiming:
    return StreamTiming("ethos-u55-128", MEMORY, [], cycles, 0, cycles // 2,
                        {"AXI0": reads, "AXI1": 0}, {"AXI0": 0, "AXI1": 0})  # fmt: skip


def test_pmu_reset_enable_and_48_bit_split() -> None:
    npu = VirtualU55("ethos-u55-128")
    npu._write(None, REG["PMCR"], 1)  # cnt_en
    npu._write(None, REG["PMCNTENSET"], CYCLE_BIT)
    big = (1 << 32) + 12345
    npu._count(_timing(big))
    assert npu.read(REG["PMCCNTR_LO"]) == big & 0xFFFFFFFF
    assert npu.read(REG["PMCCNTR_HI"]) == big >> 32
    npu._write(None, REG["PMCNTENCLR"], CYCLE_BIT)  # disabled: no count
    assert npu.read(REG["PMCNTENSET"]) & CYCLE_BIT == 0
    npu._count(_timing(7))
    assert npu.cycle_counter == big
    npu._write(None, REG["PMCR"], 5)  # cycle counter reset, counting on
    assert npu.cycle_counter == 0
    npu._write(None, REG["PMCR"], 0)  # counting off
    npu._write(None, REG["PMCNTENSET"], CYCLE_BIT)
    npu._count(_timing(9))
    assert npu.cycle_counter == 0
    npu._write(None, REG["RESET"], 1)  # soft reset clears the PMU
    assert npu.read(REG["PMCNTENSET"]) == 0


def test_event_counters_count_their_events() -> None:
    npu = VirtualU55("ethos-u55-128")
    events = (pmu_event_type.NPU_ACTIVE, pmu_event_type.AXI0_RD_DATA_BEAT_RECEIVED,
              pmu_event_type.MAC_ACTIVE, pmu_event_type.NPU_IDLE)  # fmt: skip
    for n, event in enumerate(events):
        npu._write(None, REG[f"PMEVTYPER{n}"], event.value)
    npu._write(None, REG["PMCR"], 1)
    npu._write(None, REG["PMCNTENSET"], 0xF)
    npu._count(_timing(1000, reads=77))
    npu._count(_timing(500, reads=3))
    got = [npu.read(REG[f"PMEVCNTR{n}"]) for n in range(4)]
    assert got == [1500, 80, 500 + 250, 0]
    npu._write(None, REG["PMCR"], 3)  # event counter reset
    assert [npu.read(REG[f"PMEVCNTR{n}"]) for n in range(4)] == [0, 0, 0, 0]


@pytest.mark.slow
def test_a_conv_within_25_percent_of_vela(export_case, tmp_path) -> None:
    from sdk.program.audit import read_delegates
    from sdk.program.pte import load_program
    from tests.ethosu.conftest import MODELS

    case = export_case(str(MODELS / "conv.py"), "int8", True, None)
    info = read_delegates(load_program(case.result.program_path))[0]
    flags = info.compile_specs["compile_flags"].split()
    ops = decode_cmd_data(info.vela.blocks["cmd_data"]).operations
    timing = model_operations(ops, "ethos-u55-128", MEMORY)
    vela_ops, _ = run_vela(case.result.outdir / "tosa" / "delegate_0.tosa", flags, tmp_path)
    conv = next(o for o in match(vela_ops, timing.ops, 0) if o.operator == "Conv2D")
    assert abs(conv.modelled - conv.op_cycles) <= 0.25 * conv.op_cycles
    assert sum(r.macs for r in conv.rows) == conv.macs

    # MAC-bound: more MACs per cycle, fewer cycles
    row = next(r for r in timing.ops if r.kind == "CONV")
    fast = model_operations(ops, "ethos-u55-256", memory_system("ethos-u55-256"))
    assert next(r for r in fast.ops if r.kind == "CONV").compute_cycles < row.compute_cycles
    # memory-bound with a slower arena: more cycles
    slow = replace(MEMORY.regions[1], bytes_per_cycle=MEMORY.regions[1].bytes_per_cycle / 64)
    slow_memory = replace(MEMORY, regions={**MEMORY.regions, 1: slow, 2: slow})
    slower = model_operations(ops, "ethos-u55-128", slow_memory)
    assert slower.cycles > timing.cycles
    # beats are the bytes moved / 8
    moved = sum(r.read_bytes["AXI0"] for r in timing.ops)
    assert timing.read_beats["AXI0"] == -(-moved // 8)
