"""Does it fit? The bytes a firmware or a program takes of each board memory region and slot.

Two sources, each labelled: the built firmware's ELF (its allocated sections, placed by the
linker in board.memory), and the program's own tables (program bytes, planned buffers, NPU
scratch) against board.slots, which can be checked before any firmware is built. check_fits
turns the figures into one error line naming every region that overflows, so a model too big
for the board is refused before it is flashed, not found out by a fault on the target.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.construct.core import ConstructError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from sdk.errors import ResourceError, UsageError
from sdk.firmware.boards import Board, Region
from sdk.firmware.image import HEADER
from sdk.program.audit import read_delegates
from sdk.program.inspect import planned_buffer_sizes
from sdk.program.pte import LoadedProgram

SOURCE_ELF = "ELF"
SOURCE_PROGRAM = "program"
SOURCE_SCRATCH = "NPU scratch (payload)"


@dataclass(frozen=True)
class RegionUse:
    """How much of one region (or slot) something takes, and where that figure comes from."""

    region: str  # a board.memory region ("itcm") or "slot:<name>" ("slot:planned")
    used: int  # bytes
    size: int  # capacity in bytes
    source: str  # "ELF", "program", "Vela estimate", "NPU scratch (payload)"
    detail: str = ""  # what makes up `used`: ".text .rodata", "planned buffers of forward"

    @property
    def fits(self) -> bool:
        return self.used <= self.size

    @property
    def overflow(self) -> int:
        return max(0, self.used - self.size)

    def to_json(self) -> dict:
        return {
            "region": self.region,
            "used": self.used,
            "size": self.size,
            "source": self.source,
            "detail": self.detail,
            "fits": self.fits,
        }


def _region_at(board: Board, address: int) -> Region | None:
    return next((r for r in board.memory.values() if r.base <= address < r.end), None)


def elf_region_use(elf: Path, board: Board) -> list[RegionUse]:
    """Bytes of each board memory region that the firmware's allocated sections occupy.

    A section counts in the region holding its address; one with contents whose load address
    differs (.data, copied from flash at boot) counts there too, as "<name> (load)". A NOBITS
    section (.bss, the stack) has no load image, whatever its segment's p_paddr says. Regions the
    firmware leaves alone are reported with used=0, in board.memory's order. A file that is not
    a linked ELF executable, or a section outside every region, is a UsageError naming it.
    """
    elf = Path(elf)
    try:
        with elf.open("rb") as stream:
            image = ELFFile(stream)
            kind = image["e_type"]
            if kind != "ET_EXEC":  # an object file's sections all sit at 0: not placed yet
                raise UsageError(f"{elf}: not a linked firmware (ELF type {kind}, not ET_EXEC)")
            loads = [s for s in image.iter_segments() if s["p_type"] == "PT_LOAD"]
            placed: list[tuple[str, int, int]] = []  # (section name, address, size)
            for section in image.iter_sections():
                size = section["sh_size"]
                if not section["sh_flags"] & SH_FLAGS.SHF_ALLOC or size == 0:
                    continue
                placed.append((section.name, section["sh_addr"], size))
                if section["sh_type"] == "SHT_NOBITS":
                    continue
                for segment in loads:
                    if segment["p_paddr"] != segment["p_vaddr"] and segment.section_in_segment(
                        section
                    ):
                        lma = segment["p_paddr"] + section["sh_addr"] - segment["p_vaddr"]
                        placed.append((f"{section.name} (load)", lma, size))
                        break
    except OSError as exc:
        raise UsageError(f"{elf}: cannot read the firmware: {exc.strerror or exc}") from exc
    except (ELFError, ConstructError, ValueError, EOFError) as exc:
        raise UsageError(f"{elf}: not an ELF file: {exc}") from exc
    used = {name: 0 for name in board.memory}
    names: dict[str, list[str]] = {name: [] for name in board.memory}
    for name, address, size in placed:
        region = _region_at(board, address)
        if region is None:
            raise UsageError(
                f"{elf}: section {name} at 0x{address:08x} lies in no memory region of board "
                f"{board.name} ({', '.join(board.memory)})"
            )
        used[region.name] += size
        names[region.name].append(name)
    return [
        RegionUse(name, used[name], region.size, SOURCE_ELF, " ".join(names[name]))
        for name, region in board.memory.items()
    ]


# The firmware starts each planned buffer at this alignment (kPlannedAlignment in
# firmware/runtime/method_internal.h; a test holds the two equal).
PLANNED_ALIGNMENT = 16


def planned_bytes_needed(program: LoadedProgram) -> int:
    """What the firmware's planned arena must hold: each buffer rounded up as it lays them."""
    return sum(
        -(-size // PLANNED_ALIGNMENT) * PLANNED_ALIGNMENT for size in planned_buffer_sizes(program)
    )


@dataclass(frozen=True)
class ArenaPlacement:
    """Where the firmware keeps the NPU's arena (the method's scratch) for a program: the
    board's npu_arena slot when the largest delegate scratch fits it, else the scratch slot
    (firmware/runner/session.cpp follows the same rule)."""

    slot: str  # "npu_arena" | "scratch"
    memory: str  # the board memory region holding that slot
    bytes: int  # the largest delegate's scratch
    delegate: int | None
    why: str

    def to_json(self) -> dict:
        return {"slot": self.slot, "memory": self.memory, "bytes": self.bytes, "why": self.why}


def arena_placement(program: LoadedProgram, board: Board) -> ArenaPlacement:
    scratch = [(d.vela.scratch_size, d.index) for d in read_delegates(program) if d.vela]
    largest, index = max(scratch, default=(0, None))
    fast = board.slots.get("npu_arena")
    if fast is not None and largest <= fast.size:
        slot, why = "npu_arena", f"the arena ({largest:,} bytes) fits the {fast.size:,} there"
    elif fast is not None:
        slot = "scratch"
        why = f"the arena ({largest:,} bytes) exceeds npu_arena's {fast.size:,}: spilled to DDR"
    else:
        slot, why = "scratch", "the board has no npu_arena slot"
    region = _region_at(board, board.slots[slot].base)
    return ArenaPlacement(slot, region.name if region else "?", largest, index, why)


def program_needs(program: LoadedProgram, board: Board) -> list[RegionUse]:
    """What a program needs of the board's slots, known before any firmware is built.

    The program slot holds the SDKP blob (header + .pte), the planned slot the method's planned
    buffers, the NPU arena (arena_placement) the largest NPU delegate's scratch. The firmware's
    metadata arena is a static array: it is in the ELF's figures, not here.
    """
    method = program.plan.name
    arena = arena_placement(program, board)
    where = f"delegate {arena.delegate} of {method}" if arena.delegate is not None else ""
    return [
        RegionUse(
            "slot:program",
            HEADER.size + len(program.data),
            board.slots["program"].size,
            SOURCE_PROGRAM,
            f"SDKP blob: {HEADER.size}-byte header + {len(program.data)}-byte .pte",
        ),
        RegionUse(
            "slot:planned",
            planned_bytes_needed(program),
            board.slots["planned"].size,
            SOURCE_PROGRAM,
            f"planned buffers of {method}, each {PLANNED_ALIGNMENT}-byte aligned",
        ),
        RegionUse(
            f"slot:{arena.slot}",
            arena.bytes,
            board.slots[arena.slot].size,
            SOURCE_SCRATCH,
            f"{where} ({arena.memory})" if where else "no NPU delegate",
        ),
    ]


def check_fits(uses: list[RegionUse], board: Board) -> None:
    """Refuse what does not fit the board: one line naming every region that overflows."""
    over = [
        f"{u.region} needs {u.used:,} bytes of {u.size:,} (over by {u.overflow:,}"
        + (f"; {u.detail})" if u.detail else ")")
        for u in uses
        if not u.fits
    ]
    if over:
        raise ResourceError(f"the model does not fit board {board.name}: " + "; ".join(over))
