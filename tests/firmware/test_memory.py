"""sdk.firmware.memory: what a firmware (its ELF) and a program (its tables) take of the board,
checked on a real build and real exports, against binutils' own figures."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from sdk.environment.paths import REPO_ROOT as REPO
from sdk.errors import ResourceError, UsageError
from sdk.firmware.boards import Board, load_board
from sdk.firmware.memory import (
    PLANNED_ALIGNMENT,
    RegionUse,
    arena_placement,
    check_fits,
    elf_region_use,
    planned_bytes_needed,
    program_needs,
)
from sdk.program.audit import read_delegates
from sdk.program.inspect import inspect_program
from sdk.program.pte import load_program
from tests.support.boards import board_copy


def planned_slot(size: int):
    def edit(data):
        data["slots"]["planned"]["size"] = size

    return edit


def size_a(elf: Path) -> dict[str, tuple[int, int]]:
    """{section: (size, address)} as `arm-none-eabi-size -A` reports them."""
    out = subprocess.run(
        ["arm-none-eabi-size", "-A", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    rows = re.findall(r"^(\.\S+)\s+(\d+)\s+(\d+)$", out, re.M)
    return {name: (int(size), int(addr)) for name, size, addr in rows}


def by_region(uses: list[RegionUse]) -> dict[str, RegionUse]:
    return {u.region: u for u in uses}


@pytest.fixture(scope="module")
def board() -> Board:
    return load_board("corstone300")


# --- the firmware's ELF ---


@pytest.mark.slow
def test_elf_sections_are_counted_in_their_regions(every_kernel_elf, board):
    uses = elf_region_use(every_kernel_elf, board)
    assert [u.region for u in uses] == list(board.memory)  # untouched regions too, used=0
    assert all(u.source == "ELF" and u.size == board.memory[u.region].size for u in uses)
    regions = by_region(uses)
    assert regions["itcm"].used > 0 and ".text" in regions["itcm"].detail.split()
    assert ".bss" in regions["dtcm"].detail.split()
    assert regions["sram"].used == 0 and regions["sram"].detail == ""
    # .data runs from DTCM and is copied at boot from its load image in BRAM.
    assert ".data" in regions["dtcm"].detail.split()
    assert ".data (load)" in regions["bram"].detail
    with every_kernel_elf.open("rb") as stream:
        alloc = sum(
            s["sh_size"]
            for s in ELFFile(stream).iter_sections()
            if s["sh_flags"] & SH_FLAGS.SHF_ALLOC
        )
    assert sum(u.used for u in uses) >= alloc


@pytest.mark.slow
def test_elf_figures_agree_with_binutils_size(every_kernel_elf, board):
    sections = size_a(every_kernel_elf)
    regions = by_region(elf_region_use(every_kernel_elf, board))
    # Nothing is loaded into the TCMs from elsewhere: their figures are the sections there.
    for name in ("itcm", "dtcm"):
        region = board.memory[name]
        expected = sum(s for s, addr in sections.values() if region.base <= addr < region.end)
        assert regions[name].used == expected > 0, (name, sections)
    # BRAM: the sections placed there plus .data's load image.
    bram = board.memory["bram"]
    placed = sum(s for s, addr in sections.values() if bram.base <= addr < bram.end)
    assert regions["bram"].used == placed + sections[".data"][0]


@pytest.mark.slow
def test_the_every_kernel_firmware_fits_its_board(every_kernel_elf, board):
    check_fits(elf_region_use(every_kernel_elf, board), board)


@pytest.mark.slow
def test_a_section_outside_every_region_is_named(every_kernel_elf, tmp_path):
    def move_itcm(data):
        data["memory"]["itcm"]["base"] = 0x20000000

    board = board_copy(tmp_path, move_itcm)
    with pytest.raises(UsageError, match=r"section \.vectors at 0x10000000 lies in no memory"):
        elf_region_use(every_kernel_elf, board)


@pytest.mark.parametrize(
    "data", [b"", b"not a firmware\n", b"\x7fELF", b"\x7fELF\x01\x01\x01" + bytes(13)]
)
def test_a_file_that_is_not_an_elf_is_named(tmp_path, board, data):
    path = tmp_path / "fw.elf"
    path.write_bytes(data)
    with pytest.raises(UsageError, match=rf"^{re.escape(str(path))}: not an ELF file: "):
        elf_region_use(path, board)


def test_an_object_file_is_not_a_firmware(tmp_path, board):
    source, obj = tmp_path / "x.c", tmp_path / "x.o"
    source.write_text("int x = 1;\nint f(void) { return x; }\n")
    subprocess.run(
        [f"{board.toolchain_prefix}gcc", *board.cpu_flags, "-c", str(source), "-o", str(obj)],
        check=True,
    )
    with pytest.raises(UsageError, match=r"x\.o: not a linked firmware \(ELF type ET_REL"):
        elf_region_use(obj, board)


def test_a_missing_firmware_is_named(tmp_path, board):
    path = tmp_path / "missing.elf"
    with pytest.raises(UsageError, match=rf"^{re.escape(str(path))}: cannot read"):
        elf_region_use(path, board)


# --- the program's own tables ---


def test_program_needs_of_a_cpu_program(programs, board):
    program = load_program(programs["quant_mix"])
    needs = by_region(program_needs(program, board))
    assert list(needs) == ["slot:program", "slot:planned", "slot:npu_arena"]
    planned = inspect_program(program)["memory"]["planned_bytes"]
    assert planned > 0
    assert planned <= needs["slot:planned"].used == planned_bytes_needed(program)
    assert needs["slot:planned"].used % PLANNED_ALIGNMENT == 0
    assert needs["slot:planned"].detail.startswith("planned buffers of forward")
    assert needs["slot:program"].used > len(program.data)
    assert needs["slot:program"].size == board.slots["program"].size
    assert needs["slot:npu_arena"].used == 0
    assert all(u.source == "program" for u in (needs["slot:program"], needs["slot:planned"]))
    check_fits(list(needs.values()), board)


def test_the_npu_arena_is_in_sram_when_the_delegates_scratch_fits(programs, board):
    """As ExecuTorch's and the ML evaluation kit's runners place it: the SSE-300 SRAM."""
    program = load_program(programs["delegate"])
    (delegate,) = read_delegates(program)
    needs = by_region(program_needs(program, board))
    arena = needs["slot:npu_arena"]
    assert arena.used == delegate.vela.scratch_size > 0 and arena.source == "NPU scratch (payload)"
    assert arena.size == board.slots["npu_arena"].size and "(sram)" in arena.detail
    placed = arena_placement(program, board)
    assert (placed.slot, placed.memory, placed.delegate) == ("npu_arena", "sram", 0)


@pytest.mark.parametrize("short", [True, False])
def test_an_arena_larger_than_the_sram_spills_to_the_ddr_scratch(programs, tmp_path, short):
    """An npu_arena one slot alignment (16 bytes) short of the arena: the scratch slot in DDR
    (as the runner does), not a refusal; one that holds it exactly: the SRAM."""
    program = load_program(programs["delegate"])
    (delegate,) = read_delegates(program)
    need = delegate.vela.scratch_size
    size = (need + 15) // 16 * 16 - (16 if short else 0)

    def shrink(data):
        data["slots"]["npu_arena"]["size"] = size

    board = board_copy(tmp_path, shrink)
    placed = arena_placement(program, board)
    if not short:
        assert placed.slot == "npu_arena"
        return
    assert (placed.slot, placed.memory) == ("scratch", "ddr") and "spilled to DDR" in placed.why
    needs = by_region(program_needs(program, board))
    assert needs["slot:scratch"].used == need and "(ddr)" in needs["slot:scratch"].detail
    check_fits(list(needs.values()), board)


def test_a_tiny_planned_slot_is_refused_naming_the_overflow(programs, tmp_path):
    program = load_program(programs["quant_mix"])
    board = board_copy(tmp_path, planned_slot(64))
    planned = by_region(program_needs(program, board))["slot:planned"].used
    assert planned > 64
    with pytest.raises(ResourceError) as caught:
        check_fits(program_needs(program, board), board)
    assert str(caught.value) == (
        f"the model does not fit board corstone300: slot:planned needs {planned:,} bytes of 64 "
        f"(over by {planned - 64:,}; planned buffers of forward, each 16-byte aligned)"
    )


def test_the_planned_slot_boundary(programs, tmp_path):
    program = load_program(programs["quant_mix"])
    planned = planned_bytes_needed(program)
    exact = board_copy(tmp_path / "exact", planned_slot(planned))
    check_fits(program_needs(program, exact), exact)
    short = board_copy(tmp_path / "short", planned_slot(planned - 1))
    with pytest.raises(
        ResourceError,
        match=rf"slot:planned needs {planned:,} bytes of "
        rf"{planned - 1:,} \(over by 1;",
    ):
        check_fits(program_needs(program, short), short)


def test_every_overflow_is_in_the_one_line(board):
    uses = [
        RegionUse("itcm", 10, 10, "ELF", ".text"),
        RegionUse("dtcm", 12, 10, "ELF", ".bss"),
        RegionUse("sram", 3_000_000, 2_097_152, "Vela estimate"),
    ]
    assert [u.fits for u in uses] == [True, False, False]
    assert [u.overflow for u in uses] == [0, 2, 902_848]
    assert uses[1].to_json() == {
        "region": "dtcm",
        "used": 12,
        "size": 10,
        "source": "ELF",
        "detail": ".bss",
        "fits": False,
    }
    with pytest.raises(ResourceError) as caught:
        check_fits(uses, board)
    assert str(caught.value) == (
        "the model does not fit board corstone300: dtcm needs 12 bytes of 10 (over by 2; .bss); "
        "sram needs 3,000,000 bytes of 2,097,152 (over by 902,848)"
    )


def test_planned_alignment_is_the_firmwares():
    """The Python figure rounds buffers as the firmware lays them out."""
    header = (REPO / "firmware" / "runtime" / "method_internal.h").read_text()
    assert f"kPlannedAlignment = {PLANNED_ALIGNMENT};" in header
