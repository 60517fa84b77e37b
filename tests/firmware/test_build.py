"""The SCons firmware build: incremental, generated files only in the build folder, exactly the
kernels the program needs, and clear errors."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from sdk.environment.paths import KERNELS_DIR, REPO_ROOT
from sdk.errors import BuildError, UsageError
from sdk.firmware.boards import Region
from sdk.firmware.build import build_command, build_firmware

GENERATED_NAMES = (
    "program_generated.h",
    "scalar_type_generated.h",
    "kernel_registry.cpp",
    "kernel_select.h",
    "kernel_manifest.json",
    "board_config.h",
    "embedded_program.S",
)
SOURCE_FOLDERS = ("firmware", "kernels", "boards", "sdk", "tests")


def variant_of(elf_log: Path) -> Path:
    """The variant folder SCons built in, from the 'firmware: <elf>' line of the build log."""
    for line in elf_log.read_text().splitlines():
        if line.startswith("firmware: "):
            return Path(line.split(": ", 1)[1]).parent
    raise AssertionError(f"{elf_log}: no 'firmware:' line")


@pytest.fixture(scope="module")
def add_firmware(programs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("add_fw") / "executor_runner.elf"
    return build_firmware("corstone300", programs["add"], out)


def test_the_elf_is_an_arm_executable(add_firmware: Path):
    assert add_firmware.read_bytes()[:4] == b"\x7fELF"
    assert add_firmware.read_bytes()[18] == 40  # e_machine EM_ARM


def test_a_second_identical_build_does_nothing(add_firmware: Path, programs):
    command = build_command("corstone300", programs["add"], add_firmware)
    first = subprocess.run(command, capture_output=True, text=True)  # catches up on any edit
    assert first.returncode == 0, first.stdout[-2000:]
    second = subprocess.run(command, capture_output=True, text=True)
    assert second.returncode == 0
    assert "cxx " not in second.stdout and "link " not in second.stdout, second.stdout
    question = subprocess.run([*command, "--question"], capture_output=True, text=True)
    assert question.returncode == 0, question.stdout[-2000:]


def test_generated_files_stay_in_the_build_folder(add_firmware: Path):
    for folder in SOURCE_FOLDERS:
        for name in GENERATED_NAMES:
            found = list((REPO_ROOT / folder).rglob(name))
            assert not found, f"generated file outside the build folder: {found}"


def linked_kernel_objects(variant: Path) -> list[Path]:
    """The kernel objects the variant's ELF was linked from (its link map's LOAD lines)."""
    text = (variant / "executor_runner.map").read_text()
    return sorted(
        Path(m.group(1))
        for m in re.finditer(r"^LOAD (\S+/kernels/(?:mve|nomve)/[^/]+/\w+\.o)$", text, re.M)
    )


def app_folder(variant: Path) -> Path:
    """The shared folder of the variant's board code and its board_config.h (its link map)."""
    text = (variant / "executor_runner.map").read_text()
    found = re.search(r"^LOAD (\S+/app/[0-9a-f]+)/", text, re.M)
    assert found, f"{variant}: no board object in the link map"
    return Path(found.group(1))


def test_exactly_the_manifest_kernels_are_compiled(add_firmware: Path):
    variant = variant_of(add_firmware.with_name("executor_runner.build.log"))
    manifest = json.loads((variant / "gen" / "kernel_manifest.json").read_text())
    assert [k["op"] for k in manifest["kernels"]] == ["aten::add.out"]
    linked = linked_kernel_objects(variant)
    assert [f"portable/{o.stem}.cpp" for o in linked] == manifest["sources"]
    # Each kernel is compiled with the masks of its own functions only.
    select = (linked[0].parent / "kernel_select.h").read_text()
    masks = [line for line in select.splitlines() if line.startswith("#define")]
    add = "#define KERNEL_SELECT_aten_add_out (::rt::dtype_bit(::rt::ScalarType::Float))"
    assert masks == [add]


def test_variants_needing_the_same_kernel_share_its_object(add_firmware: Path, programs, tmp_path):
    """Another variant of the same program (a test hook) links the same kernel object: kernels
    are compiled once per (source, selection), not once per firmware."""
    other = build_firmware("corstone300", programs["add"], tmp_path / "h.elf", test_hook="hang")
    log = other.with_suffix(".build.log").read_text()
    first = linked_kernel_objects(variant_of(add_firmware.with_name("executor_runner.build.log")))
    second = linked_kernel_objects(variant_of(other.with_suffix(".build.log")))
    assert first == second and "op_add.o" not in log


def test_no_kernel_reads_another_sources_masks():
    """What makes sharing kernel objects sound: a source's KERNEL_SELECT/KERNEL_SELECTED/
    KERNEL_DTYPES names only functions kernels.yaml places in that source."""
    from sdk.firmware.kernelgen import load_kernel_specs

    home = {spec.fn: spec.source for spec in load_kernel_specs().values()}
    strays = []
    for source in sorted([*KERNELS_DIR.rglob("*.cpp"), *KERNELS_DIR.rglob("*.h")]):
        relative = str(source.relative_to(KERNELS_DIR))
        text = re.sub(r"//.*", "", source.read_text())  # code, not the comments' examples
        for m in re.finditer(r"KERNEL_(?:SELECT_|SELECTED\(|DTYPES\()(\w+)", text):
            if m.group(1) != "fn" and home.get(m.group(1)) != relative:  # fn: a macro's own
                strays.append((relative, m.group(1)))
    assert home and not strays


@pytest.mark.slow
def test_without_a_program_every_kernel_is_built(every_kernel_elf: Path):
    elf = every_kernel_elf
    variant = variant_of(elf.with_name(elf.stem + ".build.log"))
    manifest = json.loads((variant / "gen" / "kernel_manifest.json").read_text())
    listed = yaml.safe_load((KERNELS_DIR / "kernels.yaml").read_text())
    assert {k["op"] for k in manifest["kernels"]} == {entry["op"] for entry in listed}
    assert elf.is_file()


def test_a_missing_kernel_fails_the_build_naming_it(programs, tmp_path: Path):
    with pytest.raises(BuildError, match=r"aten::cumsum\.out") as caught:
        build_firmware("corstone300", programs["cumsum"], tmp_path / "fw.elf")
    assert caught.value.log_path is not None and caught.value.log_path.is_file()


def test_an_unknown_board_is_a_usage_error(programs, tmp_path: Path):
    with pytest.raises(UsageError, match="unknown board"):
        build_firmware("no_such_board", programs["add"], tmp_path / "fw.elf")


def test_embed_needs_a_program(tmp_path: Path):
    with pytest.raises(BuildError, match="embed=1 needs pte"):
        build_firmware("corstone300", None, tmp_path / "fw.elf", embed=True)


def test_sdk_kernels_lists_and_writes_the_registrations(programs, tmp_path: Path, capsys):
    from sdk.cli.main import main

    assert main(["kernels", str(programs["add"]), "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "aten::add.out" in out
    registry = (tmp_path / "kernel_registry.cpp").read_text()
    assert '{"aten::add.out", &kernels::aten_add_out}' in registry
    manifest = json.loads((tmp_path / "kernel_manifest.json").read_text())
    assert "aten::add.out" in {k["op"] for k in manifest["kernels"]}


def test_sdk_kernels_names_a_missing_operator(programs, capsys):
    from sdk.cli.main import main

    assert main(["kernels", str(programs["cumsum"])]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert "no CPU kernel for aten::cumsum.out" in lines[0]
    assert "kernels that exist: " in lines[0] and "aten::bmm.out" in lines[0]


def semihosting_calls(elf: Path) -> int:
    """How many `bkpt 0xab` (semihosting calls) the ELF's code holds."""
    listing = subprocess.run(
        ["arm-none-eabi-objdump", "-d", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    return sum(1 for line in listing.splitlines() if "bkpt\t0x00ab" in line)


def test_exit_park_builds_a_variant_without_semihosting(add_firmware: Path, programs, tmp_path):
    assert semihosting_calls(add_firmware) >= 1
    parked = build_firmware("corstone300", programs["add"], tmp_path / "park.elf", exit="park")
    assert semihosting_calls(parked) == 0
    assert variant_of(parked.with_suffix(".build.log")).name.endswith("-exit-park")
    with pytest.raises(UsageError, match="unknown exit method 'halt'"):
        build_firmware("corstone300", programs["add"], tmp_path / "x.elf", exit="halt")


# --- the second board: Corstone-320's M85 (no QEMU runs it: built and checked here) ---------


@pytest.mark.slow
def test_corstone320_links_an_m85_firmware_that_fits_the_board(corstone320_firmware: Path):
    from elftools.elf.elffile import ELFFile

    from sdk.firmware.boards import load_board
    from sdk.firmware.memory import check_fits, elf_region_use

    board = load_board("corstone320")
    attributes = subprocess.run(
        ["arm-none-eabi-readelf", "-A", str(corstone320_firmware)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "Tag_CPU_arch: v8.1-M.mainline" in attributes
    assert "Tag_MVE_arch: MVE Integer and FP" in attributes  # Helium, as on the M55
    uses = {u.region: u for u in elf_region_use(corstone320_firmware, board)}
    check_fits(list(uses.values()), board)
    assert {r for r, u in uses.items() if u.used} == {"brom", "bram", "isram1"}
    assert uses["brom"].detail == ".vectors"  # BROM holds the vector table only
    # The M85 resets through INITSVTOR = 0x11000000: the initial SP tops the stack in isram1,
    # the reset handler is Thumb code in BRAM.
    with corstone320_firmware.open("rb") as f:
        elf = ELFFile(f)
        vectors = elf.get_section_by_name(".vectors")
        stack = elf.get_section_by_name(".stack")
        assert vectors["sh_addr"] == 0x11000000
        sp, reset = (int.from_bytes(vectors.data()[i : i + 4], "little") for i in (0, 4))
    assert sp == stack["sh_addr"] + stack["sh_size"]
    assert board.memory["isram1"].contains(Region("sp", sp - 16, 16))
    assert reset & 1 and board.memory["bram"].contains(Region("reset", reset - 1, 2))
    # The driver's U85 layout was compiled in (board.yaml npu.kind).
    config = (app_folder(variant_of(corstone320_firmware.with_name("executor_runner.build.log")))
              / "board_config.h").read_text()  # fmt: skip
    assert "#define SDK_NPU_ETHOS_U85 1" in config and "SDK_NPU_ETHOS_U55" not in config


@pytest.mark.slow
def test_sdk_build_reports_what_the_m85_firmware_takes(corstone320_firmware, programs, capsys):
    from sdk.cli.main import main

    out_elf = corstone320_firmware.with_name("cli.elf")  # the same variant: SCons has it
    assert main(["build", "--board", "corstone320", str(programs["add"]), "-o", str(out_elf)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"built {out_elf} for corstone320"
    regions = {line.split()[0]: line for line in lines[1:]}
    assert sorted(regions) == ["bram", "brom", "isram1"]
    assert regions["brom"].endswith(".vectors")
    assert ".bss .stack" in regions["isram1"]
