"""The board's NPU memories (board.yaml npu_memories) and the Vela ini the SDK writes from them."""

from __future__ import annotations

import copy
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from sdk.errors import ConfigError
from sdk.ethosu.memories import adapter_timing, parse_npu_memories
from sdk.export.vela_summary import read_vela_summary
from sdk.firmware.boards import load_board
from sdk.utils.files import read_yaml

BOARD_YAML = Path(__file__).parents[2] / "boards" / "corstone300" / "board.yaml"
WEIGHT_BOUND = Path(__file__).parent / "memory_models" / "weight_bound.py"


def _raw() -> dict:
    return copy.deepcopy(read_yaml(BOARD_YAML.read_text())["npu_memories"])


def test_board_memories_load():
    memories = load_board("corstone300").npu_memories
    assert memories is not None
    assert memories.ports["axi1"].bytes_per_cycle == 1.0
    assert memories.ports["axi1"].read_latency == 64
    # Sram_Only: the weights stay on AXI1, whose adapter takes TA0's setting.
    sram_only = memories.mode("Sram_Only")
    assert sram_only.const_port == "axi1"
    assert sram_only.timings["axi1"] == memories.ports["axi0"]
    assert memories.default is None  # ExecuTorch's default configuration unless the board says


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["ports"]["axi1"].pop("source"), "ports.axi1.source: every figure needs"),
        (
            lambda d: d["ports"]["axi0"].update(bytes_per_cycle=16, adapter=None),
            "exceeds the U55 port's 8",
        ),
        (lambda d: d["ports"]["axi1"].update(read_latency=-1), "axi1.read_latency: expected"),
        (lambda d: d["ports"]["axi0"].update(burst_length=0), "burst_length: must be greater"),
        (lambda d: d["ports"].pop("axi1"), "ports: expected exactly axi0, axi1"),
        (lambda d: d["modes"]["Sram_Only"].update(arena="axi1"), "arena on axi0"),
        (lambda d: d["modes"]["Sram_Only"].update(const="ddr"), "const: expected one of"),
        (lambda d: d.update(default="Dedicated_Sram"), "default: 'Dedicated_Sram' is not one"),
    ],
)
def test_bad_memory_entry_fails_clearly(edit, message):
    data = _raw()
    edit(data)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")) as info:
        parse_npu_memories("board.yaml: npu_memories", "corstone300", data)
    assert "\n" not in str(info.value)


def test_sections_keep_vela_at_the_u55_port_width():
    """Vela's C++ core takes a U55's 8-byte AXI width only for a system config named
    Ethos_U55*: every section the SDK writes is named so."""
    memories = load_board("corstone300").npu_memories
    ini = memories.vela_ini()
    for mode in memories.modes:
        name = memories.section_name(mode)
        assert name.startswith("Ethos_U55_") and mode in name
        assert f"[System_Config.{name}]" in ini and f"[Memory_Mode.{name}]" in ini


def test_mode_lookup_names_the_known():
    memories = load_board("corstone300").npu_memories
    with pytest.raises(ConfigError, match="known: Shared_Sram, Sram_Only"):
        memories.mode("Dedicated_Sram")


def test_ini_matches_vela_stock_for_shared_sram(tmp_path):
    """The board's Shared_Sram is Vela's Ethos_U55_High_End_Embedded + Shared_Sram: the same
    port bandwidths and latencies (the board's adapters are programmed to match it)."""
    from ethosu.vela.architecture_features import ArchitectureFeatures, MemArea

    memories = load_board("corstone300").npu_memories
    ini = memories.write_vela_ini(tmp_path)

    def arch(files, system, mode):
        return ArchitectureFeatures(
            vela_config_files=files,
            accelerator_config="ethos-u55-128",
            system_config=system,
            memory_mode=mode,
            max_blockdep=3,
            verbose_config=False,
            arena_cache_size=None,
        )

    stock = arch(None, "Ethos_U55_High_End_Embedded", "Shared_Sram")
    shared, sram_only = (memories.section_name(m) for m in ("Shared_Sram", "Sram_Only"))
    board = arch([str(ini)], shared, shared)
    fast = arch([str(ini)], sram_only, sram_only)
    flash = MemArea.OffChipFlash
    assert list(board.memory_bandwidths_per_cycle) == list(stock.memory_bandwidths_per_cycle)
    assert (board.memory_latency == stock.memory_latency).all()
    assert board.memory_bandwidths_per_cycle[flash] == 1.0
    assert fast.memory_bandwidths_per_cycle[flash] == 8.0
    # Vela's stock Sram_Only (board.yaml's Sram_Only `stock`): its constants at the same speed
    stock_fast = arch(None, "Ethos_U55_High_End_Embedded", "Sram_Only")
    constants = stock_fast._mem_port_mapping(stock_fast.const_mem_area)
    assert stock_fast.memory_bandwidths_per_cycle[constants] == 8.0
    assert stock_fast.memory_latency[constants][0] == fast.memory_latency[flash][0]


def _vela_total_cycles(tosa: Path, flags: list[str], config: list[str], out: Path) -> dict:
    """Vela's summary for `tosa` compiled with `flags` and a system config / memory mode."""
    subprocess.run(
        [
            str(Path(sys.executable).parent / "vela"),
            *flags,
            *config,
            f"--output-dir={out}",
            str(tosa),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    summary = read_vela_summary(out)
    assert summary is not None
    return summary


@pytest.mark.slow
def test_vela_prices_memory_at_the_boards_bandwidth(export_case, tmp_path):
    """Vela compiles a delegate's TOSA with the board's ini at board.yaml's bandwidths: the
    weight-bound layer's estimate is its constant bytes over AXI1's bytes per cycle (within
    5%), the board's Shared_Sram estimates exactly as Vela's stock Ethos_U55_High_End_Embedded
    + Shared_Sram (whose figures it copies), and AXI1 at TA1's flash timing costs more than at
    TA0's (Sram_Only). Vela's C++ core doubled every bandwidth under a section name without
    the Ethos_U55 prefix (VELA_U55_SECTION_PREFIX): 70,544 cycles here, half the bytes."""
    from sdk.program.audit import read_delegates
    from sdk.program.pte import load_program

    program = export_case(str(WEIGHT_BOUND), "int8", True, None).result.program_path
    info = read_delegates(load_program(program))[0]
    tosa = tmp_path / "out.tosa"  # Vela names its summary after the input (as ExecuTorch's)
    tosa.write_bytes((program.parent / "tosa" / f"delegate_{info.index}.tosa").read_bytes())
    flags = [
        f
        for f in info.compile_specs["compile_flags"].split()
        if not f.startswith(("--system-config", "--memory-mode", "--config"))
    ]
    memories = load_board("corstone300").npu_memories
    ini = memories.write_vela_ini(tmp_path)
    cycles = {}
    for mode in ("Shared_Sram", "Sram_Only"):
        section = memories.section_name(mode)
        config = [f"--config={ini}", f"--system-config={section}", f"--memory-mode={section}"]
        summary = _vela_total_cycles(tosa, flags, config, tmp_path / mode)
        assert summary["system_config"] == section
        cycles[mode] = summary["total_cycles"]  # cycles_npu is compute alone
    stock = _vela_total_cycles(
        tosa,
        flags,
        ["--system-config=Ethos_U55_High_End_Embedded", "--memory-mode=Shared_Sram"],
        tmp_path / "stock",
    )
    # The 1x1 conv 256 -> 512 reads each int8 weight once, and one 10-byte bias/scale record
    # per output channel (the U55's scale format), over AXI1.
    constant_bytes = 256 * 512 + 10 * 512
    expected = constant_bytes / memories.mode("Shared_Sram").timings["axi1"].bytes_per_cycle
    assert cycles["Shared_Sram"] == pytest.approx(expected, rel=0.05)
    assert cycles["Shared_Sram"] == stock["total_cycles"]
    assert cycles["Shared_Sram"] > cycles["Sram_Only"] > 0


def test_timing_adapters_carry_each_modes_documented_timing():
    """The firmware's adapter settings per Vela configuration: each mode's ports as board.yaml
    gives them (Sram_Only: TA1 takes TA0's), ExecuTorch's stock configuration as the mode it
    names; the registers give back the port's bandwidth."""
    memories = load_board("corstone300").npu_memories
    table = memories.adapter_modes()
    shared = table[("Ethos_U55_Corstone300_Shared_Sram",) * 2]
    assert table[("Ethos_U55_High_End_Embedded", "Shared_Sram")] == shared
    assert shared["axi1"]["BWCAP"] == 50 and shared["axi1"]["PULSE_ON"] == 320  # MLEK's TA1
    sram_only = table[("Ethos_U55_Corstone300_Sram_Only",) * 2]
    assert sram_only["axi1"] == sram_only["axi0"] == shared["axi0"]
    assert table[("Ethos_U55_High_End_Embedded", "Sram_Only")] == sram_only
    assert ("Ethos_U55_Deep_Embedded", "Shared_Sram") not in table  # other speeds: refused
    for port in ("axi0", "axi1"):
        timing = adapter_timing(shared[port])
        assert timing == (
            memories.ports[port].bytes_per_cycle,
            memories.ports[port].read_latency,
            memories.ports[port].write_latency,
        )


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["ports"]["axi0"].update(bytes_per_cycle=8), "registers or bytes_per_cycle"),
        (lambda d: d["ports"]["axi0"]["adapter"].update(bwcap=8000), "exceeds the U55 port's 8"),
        (lambda d: d["ports"]["axi0"]["adapter"].update(maxr=64), "maxr: expected an integer"),
        (lambda d: d["ports"]["axi1"]["adapter"].pop("mode"), "expected exactly maxr"),
        (lambda d: d["timing_adapters"].pop("axi1"), "a base address per port"),
        (lambda d: d["timing_adapters"].pop("source"), "timing_adapters.source"),
        (lambda d: d["ports"]["axi1"].pop("adapter"), "ports.axi1 gives no adapter"),
        (lambda d: d["modes"]["Shared_Sram"].update(stock="x"), "stock: expected system_config"),
        (
            lambda d: d["modes"]["Shared_Sram"]["stock"].update(memory_mode='Sram"; x'),
            "stock: expected system_config",
        ),
        (
            lambda d: d["modes"]["Sram_Only"].update(stock=d["modes"]["Shared_Sram"]["stock"]),
            "two modes name the same stock",
        ),
    ],
)
def test_bad_timing_adapter_entry_fails_clearly(edit, message):
    data = _raw()
    edit(data)
    if "gives no adapter" in message:
        data["ports"]["axi1"]["bytes_per_cycle"] = 1
    with pytest.raises(ConfigError, match=message):
        parse_npu_memories("board.yaml: npu_memories", "corstone300", data)


def test_adapters_are_only_taken_beside_a_u55():
    """Past 0x1000 from a U85's base lie its own registers (its PMU): adapters there would
    hide them from the virtual NPU, so a board with another NPU may not name adapters."""
    from sdk.firmware.boards import _check_timing_adapters

    memories = load_board("corstone300").npu_memories
    with pytest.raises(ConfigError, match="beside an ethos-u55 only"):
        _check_timing_adapters("board.yaml", 0x58102000, memories, "ethos-u85")
    _check_timing_adapters("board.yaml", 0x58102000, memories, "ethos-u55")


def test_the_next_programs_virtual_npu_keeps_the_boards_adapters():
    """A LOAD does not reset the board's timing adapters and the firmware writes them only
    when its setting changes: the virtual NPU made for the next program keeps their values."""
    from sdk.ethosu.device import VirtualU55
    from sdk.link.protocol import Info
    from sdk.targets.linked import next_virtual_npu

    board = load_board("corstone300")
    at = board.npu_memories.adapter_registers_at(board.npu_base)
    first = VirtualU55("ethos-u55-128", adapters=at)
    offset = next(o for o, where in at.items() if where == ("axi1", "BWCAP"))
    first._write(None, offset, 50)
    info = Info(1, 4096, 32_000_000, 1, 1, 0, 0, 0, 0, False, b"", "", "corstone300",
                "ethos-u55-128", 0, ())  # fmt: skip
    second = next_virtual_npu(first, info, None, None, None)
    assert second is not first and second.read(offset) == 50
    assert second.adapter_values is not first.adapter_values
    assert next_virtual_npu(None, info, None, None, None).read(offset) == 0


def test_adapters_must_lie_past_the_npus_registers(tmp_path):
    """The firmware reaches an adapter through the NPU's base: one inside the NPU's register
    file (or two overlapping) is refused when the board loads."""
    from sdk.firmware.boards import _check_timing_adapters

    memories = load_board("corstone300").npu_memories
    moved = replace(memories, timing_adapters={"axi0": 0x58102800, "axi1": 0x58103200})
    with pytest.raises(ConfigError, match="axi0 0x58102800 is not past the NPU's registers"):
        _check_timing_adapters("board.yaml", 0x58102000, moved)
    close = replace(memories, timing_adapters={"axi0": 0x58103000, "axi1": 0x58103010})
    with pytest.raises(ConfigError, match="overlaps"):
        _check_timing_adapters("board.yaml", 0x58102000, close)


@pytest.mark.slow
def test_the_virtual_u55_runs_at_the_adapters_setting(export_case):
    """The virtual U55 times a job at the port speeds the firmware set in the board's timing
    adapters, not at the compile spec's: the weight-bound layer compiled for Shared_Sram
    (ExecuTorch's default) takes its compile spec's time with the adapters at Shared_Sram's
    setting or never written, and far less at Sram_Only's (AXI1 at TA0's 8 bytes/cycle)."""
    from sdk.ethosu.device import SHARED, VirtualU55
    from sdk.program.pte import load_program

    board = load_board("corstone300")
    memories = board.npu_memories
    program = load_program(export_case(str(WEIGHT_BOUND), "int8", True, None).result.program_path)
    at = memories.adapter_registers_at(board.npu_base)
    offset_of = {where: offset for offset, where in at.items()}
    assert offset_of[("axi1", "BWCAP")] == 0x58103200 - 0x58102000 + 0x1C

    def cycles(mode: str | None) -> int:
        npu = VirtualU55("ethos-u55-128", program, adapters=at)
        if mode is not None:
            for port, values in memories.adapter_modes()[
                (memories.section_name(mode),) * 2
            ].items():
                for name, value in values.items():
                    npu._write(None, offset_of[(port, name)], value)
            npu._write(None, SHARED["RESET"], 1)  # an NPU reset leaves the adapters alone
            assert npu.read(offset_of[("axi1", "BWCAP")]) == values["BWCAP"]
        npu._write(None, SHARED["REGIONCFG"], 0x5553)  # the driver's: weights on AXI1
        npu._write(None, SHARED["QCONFIG"], 2)
        assert not npu.unknown_writes
        return npu.timing(npu._delegates[0]).cycles

    unset, shared, sram_only = cycles(None), cycles("Shared_Sram"), cycles("Sram_Only")
    assert shared == unset
    # 136 KiB of weights at 8 bytes/cycle instead of 1: the job takes under half the time
    assert sram_only * 2 < shared
