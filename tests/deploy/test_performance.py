"""The deploy report's performance figures from known numbers: latency at the board's clocks,
the NPU's MAC utilisation and memory-bound share, the per-delegate rows beside Vela's estimate,
and the cross-check of the firmware's PMCCNTR total against the virtual U55's job log."""

from __future__ import annotations

import pytest

from sdk.deploy.performance import Clocks, add_profile_latency, performance
from sdk.deploy.report import timing_entries
from sdk.ethosu.config import NpuConfig
from sdk.ethosu.cycles import OpTiming, StreamTiming, macs_per_cycle, memory_system
from sdk.ethosu.device import NpuJob, VirtualU55
from sdk.firmware.boards import load_board
from sdk.link.protocol import Stats
from sdk.link.record import DelegateCycles, ModelledNpu
from sdk.targets.base import VIRTUAL_NPU_MODELLED, VIRTUAL_NPU_TIMING, Timing
from sdk.targets.linked import modelled_npu

CLOCKS = Clocks(cpu_hz=25_000_000, npu_hz=500_000_000)
# Two delegates, per inference: 1000 + 3000 cycles, 64k + 128k MACs, 250 memory-bound cycles;
# the firmware counted two inferences since the LOAD.
NPU = ModelledNpu(
    (DelegateCycles(0, 1000, 64_000, 250), DelegateCycles(1, 3000, 128_000, 0)),
    firmware_total=8000,
    runs=2,
    job_log_total=8000,
)
EXPORT = {
    "delegates": [
        {"index": 0, "vela_estimate": {"total_cycles": 800.0}},
        {"index": 1, "vela_estimate": {"total_cycles": 3000.0}},
    ],
    "vela_estimate_total": {"total_cycles": 3800.0, "inference_time_s": 7.6e-6},
}


def test_latency_utilisation_and_shares_from_known_numbers() -> None:
    perf = performance(25_000, NPU, CLOCKS, "ethos-u55-128", [memory_system()], delegates=2)
    assert perf is not None
    assert perf["npu_cycles_modelled"] == 4000  # 8000 cycles over 2 runs: the firmware's
    assert perf["cpu_instructions"] == 25_000
    assert perf["cpu_ms"] == pytest.approx(1.0)  # 25k instructions at 25 MHz
    assert perf["npu_ms"] == pytest.approx(0.008)  # 4000 cycles at 500 MHz
    assert perf["latency_ms"] == pytest.approx(1.008)
    assert perf["inferences_per_s"] == pytest.approx(1000 / 1.008)
    assert perf["cpu_share"] == pytest.approx(1 / 1.008)
    assert perf["npu_mac_utilisation"] == pytest.approx(192_000 / (4000 * 128))
    assert perf["npu_memory_bound_share"] == pytest.approx(250 / 4000)
    assert perf["npu_cycles_check"]["agrees"] is True
    assert perf["config"]["npu"] == "ethos-u55-128"
    assert perf["config"]["system_config"] == memory_system().system_config
    assert perf["config"]["memory_mode"] == memory_system().memory_mode
    assert (perf["config"]["cpu_clock_hz"], perf["config"]["npu_clock_hz"]) == (25e6, 500e6)
    # twice the MACs per cycle: half the utilisation (the figure follows the configuration)
    wide = performance(25_000, NPU, CLOCKS, "ethos-u55-256", delegates=2)
    assert wide["npu_mac_utilisation"] == pytest.approx(perf["npu_mac_utilisation"] / 2)


def test_a_firmware_total_the_job_log_does_not_add_up_to_is_flagged() -> None:
    """The firmware's figure is reported, and the disagreement is said (a driver that misread
    PMCCNTR, or a job log that missed a job, never passes unnoticed)."""
    wrong = ModelledNpu(NPU.delegates, firmware_total=8002, runs=2, job_log_total=8000)
    perf = performance(25_000, wrong, CLOCKS, "ethos-u55-128", delegates=2)
    assert perf["npu_cycles_modelled"] == 4001
    check = perf["npu_cycles_check"]
    assert check["agrees"] is False and "8,002" in check["problem"] and "8,000" in check["problem"]


def test_no_section_where_a_part_is_not_known() -> None:
    assert performance(None, NPU, CLOCKS, "ethos-u55-128", delegates=2) is None  # not QEMU
    assert performance(25_000, NPU, None, "ethos-u55-128", delegates=2) is None  # no clocks
    assert performance(25_000, None, CLOCKS, "ethos-u55-128", delegates=1) is None  # not modelled
    untimed = DelegateCycles(2, None, None, None, "no Vela compile flags")
    partial = ModelledNpu((*NPU.delegates, untimed), 8000, 2, 8000)  # one delegate not timed
    assert performance(25_000, partial, CLOCKS, "ethos-u55-128", delegates=3) is None


def test_a_cpu_only_program_is_all_cpu() -> None:
    perf = performance(50_000, None, CLOCKS, "ethos-u55-128", delegates=0)
    assert perf["latency_ms"] == pytest.approx(2.0) and perf["cpu_share"] == 1.0
    assert perf["npu_cycles_modelled"] == 0 and perf["npu_mac_utilisation"] is None
    assert perf["npu_cycles_check"] is None


@pytest.mark.parametrize("config", list(NpuConfig))
def test_macs_per_cycle_is_the_figure_in_the_configuration_name(config: NpuConfig) -> None:
    assert macs_per_cycle(config.value) == int(config.value.rsplit("-", 1)[1])


def test_the_clocks_are_the_boards() -> None:
    import yaml

    board = load_board("corstone300")
    data = yaml.safe_load((board.directory / "board.yaml").read_text())
    clocks = Clocks.of(board)
    assert clocks == Clocks(data["cpu"]["clock_hz"], data["npu_memories"]["clock_hz"])


def test_delegate_rows_carry_modelled_cycles_vela_and_their_ratio() -> None:
    timing = Timing("QEMU", instructions=25_000, virtual_npu=True, npu_modelled=NPU)
    entries = timing_entries(EXPORT, timing, CLOCKS)
    assert all(e["source"] != VIRTUAL_NPU_TIMING for e in entries)
    rows = {e["delegate"]: e for e in entries if e["source"] == VIRTUAL_NPU_MODELLED}
    assert rows[0]["value"] == 1000 and rows[0]["vela_estimate_cycles"] == 800
    assert rows[0]["ratio_to_vela"] == pytest.approx(1.25)
    assert rows[1]["ratio_to_vela"] == pytest.approx(1.0)
    assert rows[1]["seconds"] == pytest.approx(3000 / 500e6)
    (cpu,) = [e for e in entries if e["what"] == "CPU"]
    assert cpu["seconds"] == pytest.approx(1e-3) and "1 instruction per cycle" in cpu["at"]


def test_not_timed_only_where_nothing_is_modelled() -> None:
    broken = ModelledNpu((DelegateCycles(0, None, None, None, "no Vela compile flags"),), 0, 1, 0)
    timing = Timing("QEMU", instructions=1, virtual_npu=True, npu_modelled=broken)
    (row,) = [e for e in timing_entries(EXPORT, timing) if e.get("delegate") == 0]
    assert row["source"] == VIRTUAL_NPU_TIMING and row["problem"] == "no Vela compile flags"
    assert "not timed" in timing.describe()
    bare = timing_entries(EXPORT, Timing("QEMU", instructions=1, virtual_npu=True))
    assert [e["source"] for e in bare if e["what"] == "NPU delegates"][-1] == VIRTUAL_NPU_TIMING
    modelled = Timing("QEMU", instructions=1, virtual_npu=True, npu_modelled=NPU)
    assert "not timed" not in modelled.describe() and VIRTUAL_NPU_MODELLED in modelled.describe()


def test_profile_rows_get_their_latency() -> None:
    profile = {
        "operators": [
            {"what": "aten::add.out", "kind": "cpu", "instructions": 2500, "delegate": None},
            {"what": "delegate 1 (EthosUBackend)", "kind": "npu", "instructions": 500,
             "delegate": 1},
            {"what": "delegate 2 (EthosUBackend)", "kind": "npu", "instructions": 500,
             "delegate": 2},  # no modelled figure: no latency
        ]
    }  # fmt: skip
    add_profile_latency(profile, NPU, CLOCKS)
    cpu, npu, unknown = profile["operators"]
    assert cpu["latency_ms"] == pytest.approx(0.1) and "npu_cycles_modelled" not in cpu
    assert npu["npu_cycles_modelled"] == 3000
    assert npu["latency_ms"] == pytest.approx(0.02 + 3000 / 500e3)
    assert unknown["latency_ms"] is None and unknown["npu_cycles_modelled"] is None


def test_a_runs_jobs_per_delegate_and_the_jobs_since_the_load() -> None:
    """Two iterations of two delegates, after a run of an earlier LOAD: per inference the mean
    of each delegate's jobs; the cross-check counts the jobs since the last LOAD only."""
    model = VirtualU55("ethos-u55-128")
    old = NpuJob(0, 99, 1, {})  # before the LOAD: not in the firmware's STATS
    first, second = NpuJob(0, 100, 10, {}, None, 5), NpuJob(1, 300, 30, {}, None, 0)
    jobs = [first, second, first, second]
    model.job_log = [old, *jobs]
    model.jobs_at_load = 1
    stats = Stats(25_000_000, 2, 0, 0, 0, 0, 0, True, 800)
    npu = modelled_npu(model, 1, 2, stats)
    assert [(d.delegate, d.cycles, d.macs, d.memory_bound_cycles) for d in npu.delegates] == [
        (0, 100, 10, 5),
        (1, 300, 30, 0),
    ]
    assert npu.agrees and npu.cycles == 400
    model.jobs_at_load = 0  # counting the earlier job too: the totals disagree
    assert not modelled_npu(model, 1, 2, stats).agrees


def test_memory_bound_cycles_are_the_memory_bound_rows() -> None:
    rows = [
        OpTiming(0, 0, "CONV", compute_cycles=900, memory_cycles={"Sram": 100}, cycles=900),
        OpTiming(1, 8, "CONV", compute_cycles=100, memory_cycles={"Sram": 400}, cycles=400),
        OpTiming(2, 16, "DMA", memory_cycles={"OffChipFlash": 50}, cycles=50),
    ]
    timing = StreamTiming("ethos-u55-128", memory_system(), rows, 1350, 0, 0, {}, {})
    assert [r.memory_bound for r in rows] == [False, True, True]
    assert timing.memory_bound_cycles == 450


def test_corstone300_runs_at_the_an547_sysclk() -> None:
    """The latency's clocks are the AN547's 32 MHz sysclk, the rate QEMU's an547 SysTick
    counts (measured: 20 M instructions = 640 k ticks): CPU, NPU and SysTick alike."""
    board = load_board("corstone300")
    qemu_tick_hz = board.targets["qemu"]["tick_hz"]
    assert board.cpu_clock_hz == board.npu_clock_hz == board.tick_hz == qemu_tick_hz
