"""Boards as data: board.yaml validation, and the linker script agreeing with it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from sdk.environment.paths import BOARDS_DIR
from sdk.errors import ConfigError, UsageError
from sdk.firmware.boards import Region, available_boards, load_board


def linker_regions(script: Path) -> dict[str, Region]:
    text = re.sub(r"/\*.*?\*/", "", script.read_text(), flags=re.S)
    block = re.search(r"MEMORY\s*\{(.*?)\}", text, re.S)
    assert block, f"{script}: no MEMORY block"
    regions = {}
    for name, origin, length in re.findall(
        r"(\w+)\s*\([rwx]+\)\s*:\s*ORIGIN\s*=\s*(0x[0-9a-fA-F]+)\s*,\s*LENGTH\s*=\s*(0x[0-9a-fA-F]+)",
        block.group(1),
    ):
        regions[name] = Region(name, int(origin, 16), int(length, 16))
    return regions


@pytest.mark.parametrize("name", available_boards())
def test_linker_script_agrees_with_board_yaml(name: str):
    board = load_board(name)
    regions = linker_regions(board.linker_script)
    assert regions, "the linker script declares no memory"
    # Regions named like board.yaml memory regions must be exactly those regions.
    for region in regions.values():
        memory = board.memory.get(region.name.lower())
        if memory is not None:
            assert (region.base, region.size) == (memory.base, memory.size), region.name
        else:
            # Any other region (e.g. DDR_IMAGE) lies inside one memory region, clear of the slots.
            assert any(m.contains(region) for m in board.memory.values()), region.name
            for slot in board.slots.values():
                assert not slot.overlaps(region), f"{region.name} overlaps slot {slot.name}"
    script = board.linker_script.read_text()
    assert "__stack_size" in script  # stack size comes from board.yaml through --defsym


def test_corstone300_facts():
    board = load_board("corstone300")
    assert board.console_base == 0x59303000
    assert (board.npu_base, board.npu_irq) == (0x58102000, 56)
    assert board.npu_default_config == "ethos-u55-128"
    assert board.slots["program"].base == 0x70000000
    assert board.memory["itcm"].base == 0x10000000 and board.memory["dtcm"].base == 0x30000000
    assert board.target("qemu")["machine"] == "mps3-an547"
    assert board.target("fvp")["binary"] == "FVP_Corstone_SSE-300_Ethos-U55"
    macros = board.config_macros()
    assert macros["SDK_PROGRAM_SLOT_ADDR"] == "0x70000000u"
    assert macros["SDK_CONSOLE_BASE"] == "0x59303000u"


def test_corstone320_facts():
    """Corstone-320 (docs/corstone320.md): boots from BROM, an Ethos-U85 at 0x50004000 / IRQ 16,
    UART0 at 0x58203000 (RX IRQ 33); an FVP target, no QEMU (none emulates an M85)."""
    board = load_board("corstone320")
    assert board.cpu_flags[0] == "-march=armv8.1-m.main+mve.fp+fp.dp"  # GCC 12: no cortex-m85
    assert (board.console_base, board.console_rx_irq) == (0x58203000, 33)
    assert (board.npu_kind, board.npu_base, board.npu_irq) == ("ethos-u85", 0x50004000, 16)
    assert board.npu_default_config == "ethos-u85-128"
    assert board.npu_configs == tuple(f"ethos-u85-{n}" for n in (128, 256, 512, 1024, 2048))
    assert board.memory["brom"].base == 0x11000000 and board.memory["bram"].base == 0x12000000
    assert board.slots["npu_arena"] == Region("npu_arena", 0x31000000, 0x200000)
    assert board.npu_memories is None  # ExecuTorch's own Vela configuration for the U85
    assert board.target("fvp")["binary"] == "FVP_Corstone_SSE-320"
    assert "qemu" not in board.targets
    with pytest.raises(
        UsageError, match="board corstone320 has no qemu target: no QEMU emulates a Cortex-M85"
    ):
        board.target("qemu")
    # The vector table is where the M85 resets (INITSVTOR 0x11000000), not ITCM at 0.
    script = board.linker_script.read_text()
    assert re.search(r"\.vectors[^}]*\}\s*>\s*BROM", script)


def test_the_npu_kind_picks_the_drivers_register_layout():
    assert load_board("corstone320").config_macros()["SDK_NPU_ETHOS_U85"] == "1"
    macros = load_board("corstone300").config_macros()
    assert macros["SDK_NPU_ETHOS_U55"] == "1" and "SDK_NPU_ETHOS_U85" not in macros


def test_an_unknown_npu_kind_is_refused(tmp_path: Path):
    boards = copy_board(tmp_path, lambda data: data["npu"].update(kind="ethos-u99"))
    with pytest.raises(ConfigError, match=r"npu.kind: 'ethos-u99' is not one of"):
        load_board("corstone300", boards)


def test_npu_configs_of_another_kind_are_refused(tmp_path: Path):
    """The firmware's driver takes npu.kind's layout, the host's virtual NPU the config's:
    a board mixing them is refused at load, not at run time."""
    boards = copy_board(tmp_path, lambda data: data["npu"].update(kind="ethos-u85"))
    with pytest.raises(ConfigError, match=r"npu.configs .*ethos-u55-128.* are not ethos-u85"):
        load_board("corstone300", boards)


def test_the_boards_share_their_code_from_boards_common():
    """Every fact once: startup, console, syscalls and NPU hooks are boards/common's, each
    board's folder holds only its data and its linker script."""
    for name in ("corstone300", "corstone320"):
        board = load_board(name)
        assert board.source_dirs == (board.directory, BOARDS_DIR / "common")
        assert not list(board.directory.glob("*.cpp")), name
    assert sorted(p.name for p in (BOARDS_DIR / "common").glob("*.cpp")) == [
        "board.cpp", "npu.cpp", "startup.cpp", "syscalls.cpp",
    ]  # fmt: skip


def test_a_sources_entry_outside_boards_is_refused(tmp_path: Path):
    for bad in ("../firmware", "nowhere"):
        boards = copy_board(
            tmp_path / bad.strip("./"), lambda data, b=bad: data.update(sources=[b])
        )
        with pytest.raises(ConfigError, match=rf"sources: '{re.escape(bad)}' is not a folder"):
            load_board("corstone300", boards)


def test_helium_off_takes_the_m85s_march_apart():
    from sdk.firmware.buildgen import without_mve

    m85 = list(load_board("corstone320").cpu_flags)
    assert without_mve(m85)[0] == "-march=armv8.1-m.main+fp.dp"
    assert without_mve(list(load_board("corstone300").cpu_flags))[0] == "-mcpu=cortex-m55+nomve"


def test_unknown_board_lists_the_known_ones():
    with pytest.raises(UsageError, match=r"unknown board 'nope'; boards: .*corstone300"):
        load_board("nope")


def test_unknown_npu_config_is_refused():
    with pytest.raises(UsageError, match="unknown NPU config"):
        load_board("corstone300").config_macros("ethos-u55-999")


def copy_board(tmp_path: Path, edit) -> Path:
    folder = tmp_path / "boards" / "corstone300"
    shutil.copytree(BOARDS_DIR / "corstone300", folder)
    data = yaml.safe_load((folder / "board.yaml").read_text())
    edit(data)
    (folder / "board.yaml").write_text(yaml.safe_dump(data))
    return folder.parent


def test_overlapping_slots_are_refused(tmp_path: Path):
    def overlap(data):
        data["slots"]["inputs"]["base"] = data["slots"]["program"]["base"] + 16

    boards = copy_board(tmp_path, overlap)
    with pytest.raises(ConfigError, match="overlap"):
        load_board("corstone300", boards)


def test_slot_outside_memory_is_refused(tmp_path: Path):
    def outside(data):
        data["slots"]["scratch"]["base"] = 0x90000000

    boards = copy_board(tmp_path, outside)
    with pytest.raises(ConfigError, match="slot scratch lies outside every memory region"):
        load_board("corstone300", boards)


def test_missing_section_is_named(tmp_path: Path):
    boards = copy_board(tmp_path, lambda data: data.pop("npu"))
    with pytest.raises(ConfigError, match=r"\(top level\): 'npu' is a required property"):
        load_board("corstone300", boards)


def test_a_misspelt_key_is_refused_with_the_key_meant(tmp_path: Path):
    def misspell(data):
        data["console"]["baud_divdier"] = data["console"].pop("baud_divider")

    boards = copy_board(tmp_path, misspell)
    with pytest.raises(ConfigError) as caught:
        load_board("corstone300", boards)
    message = caught.value.message
    assert "board.yaml: console:" in message
    # the missing key or the unknown one: either way the spelling is named
    assert "baud_divdier" in message or "'baud_divider' is a required property" in message


def test_an_unknown_key_in_a_target_is_refused(tmp_path: Path):
    boards = copy_board(tmp_path, lambda data: data["targets"]["qemu"].update(npus=True))
    with pytest.raises(
        ConfigError, match=r"targets.qemu: unknown key 'npus' \(did you mean 'npu'\?\)"
    ):
        load_board("corstone300", boards)


def test_an_unknown_top_level_section_is_refused(tmp_path: Path):
    boards = copy_board(tmp_path, lambda data: data.update(flash_method="usb"))
    with pytest.raises(ConfigError, match=r"\(top level\): unknown key 'flash_method'"):
        load_board("corstone300", boards)


def test_a_wrong_type_is_refused_naming_the_field(tmp_path: Path):
    boards = copy_board(tmp_path, lambda data: data["targets"]["fvp"].update(npu=5))
    with pytest.raises(ConfigError, match=r"targets.fvp.npu: 5 is not of type 'string', 'null'"):
        load_board("corstone300", boards)


def test_the_exit_method_is_a_board_fact_a_build_may_override():
    board = load_board("corstone300")
    assert board.exit_method == "semihosting"
    assert board.config_macros()["SDK_EXIT_SEMIHOSTING"] == "1"
    macros = board.config_macros(exit_method="park")
    assert macros["SDK_EXIT_PARK"] == "1" and "SDK_EXIT_SEMIHOSTING" not in macros
    with pytest.raises(UsageError, match="unknown exit method 'reboot'"):
        board.config_macros(exit_method="reboot")


def test_an_unknown_exit_method_in_board_yaml_is_refused(tmp_path: Path):
    boards = copy_board(tmp_path, lambda data: data["runtime"].update(exit="halt"))
    with pytest.raises(
        ConfigError, match=r"runtime.exit: 'halt' is not one of \['semihosting', 'park'\]"
    ):
        load_board("corstone300", boards)
