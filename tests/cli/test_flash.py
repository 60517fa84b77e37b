"""`sdk flash`: the MPS3 USB-drive method on a folder standing in for the drive, the pyOCD
method's command line, and clear errors when the drive, the probe or the tool is missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from sdk.cli.main import main
from sdk.errors import UsageError
from sdk.firmware.boards import BOARDS_DIR, load_board
from sdk.targets.flash import FlashError, flash_firmware, images_txt, pyocd_command

ELF = b"\x7fELF" + bytes(60)


def drive(tmp_path: Path) -> Path:
    """A folder laid out like the MPS3's V2M-MPS3 drive with the AN547 image installed."""
    root = tmp_path / "V2M-MPS3"
    (root / "MB" / "HBI0309C" / "AN547").mkdir(parents=True)
    (root / "MB" / "HBI0309C" / "AN547" / "images.txt").write_text("old\r\n")
    (root / "SOFTWARE").mkdir()
    (root / "config.txt").write_text("TITLE: config\r\n")
    return root


def test_mps3_usb_writes_the_image_and_images_txt(tmp_path, capsys):
    root = drive(tmp_path)
    elf = tmp_path / "fw.elf"
    elf.write_bytes(ELF)
    code = main(["flash", "--board", "corstone300", str(elf), "--drive", str(root)])
    assert code == 0, capsys.readouterr().err
    assert (root / "SOFTWARE" / "sdkfw.axf").read_bytes() == ELF
    text = (root / "MB" / "HBI0309C" / "AN547" / "images.txt").read_bytes().decode()
    assert "TOTALIMAGES: 1" in text and "IMAGE0FILE: \\SOFTWARE\\sdkfw.axf" in text
    assert "IMAGE0ADDRESS: 0x00000000" in text and text.endswith("\r\n") and "\n\n" not in text
    assert "reboot" in capsys.readouterr().out
    assert not list(root.rglob("*.tmp"))  # written atomically


def test_images_txt_is_what_the_mcc_reads():
    text = images_txt("SOFTWARE/app.axf", 0x10000000)
    lines = text.split("\r\n")
    assert lines[0].startswith("TITLE:") and "[IMAGES]" in lines
    assert any(line.startswith("IMAGE0ADDRESS: 0x10000000") for line in lines)


def test_a_missing_drive_is_a_clear_error(tmp_path, capsys):
    elf = tmp_path / "fw.elf"
    elf.write_bytes(ELF)
    code = main(["flash", str(elf), "--drive", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert code == 1 and "no such folder" in err
    board = load_board("corstone300")
    if (Path("/media") / "V2M-MPS3").exists():
        pytest.skip("an MPS3 drive is mounted here")
    with pytest.raises(FlashError, match="no V2M-MPS3 drive is mounted"):
        flash_firmware(board.flash, board.name, elf)


def test_a_drive_without_the_board_s_image_folder_is_refused(tmp_path):
    root = tmp_path / "usbstick"
    root.mkdir()
    elf = tmp_path / "fw.elf"
    elf.write_bytes(ELF)
    with pytest.raises(FlashError, match="has no MB/HBI0309C/AN547/"):
        flash_firmware(load_board("corstone300").flash, "corstone300", elf, drive=root)
    assert not (root / "SOFTWARE").exists()


def test_not_an_elf_and_missing_files_are_usage_errors(tmp_path):
    board = load_board("corstone300")
    with pytest.raises(UsageError, match="no such firmware file"):
        flash_firmware(board.flash, board.name, tmp_path / "none.elf")
    bad = tmp_path / "fw.bin"
    bad.write_bytes(b"\x00" * 64)
    with pytest.raises(UsageError, match="not an ELF"):
        flash_firmware(board.flash, board.name, bad)
    good = tmp_path / "fw.elf"
    good.write_bytes(ELF)
    with pytest.raises(UsageError, match="no flash method 'jtag'; it has mps3-usb"):
        flash_firmware(board.flash, board.name, good, method="jtag")


def probe_board(tmp_path: Path):
    """A board folder whose flash method is pyOCD (the method is board data)."""
    folder = tmp_path / "boards" / "corstone300"
    shutil.copytree(BOARDS_DIR / "corstone300", folder)
    data = yaml.safe_load((folder / "board.yaml").read_text())
    data["flash"] = [{"method": "pyocd", "target": "cortex_m", "frequency": 4000000}]
    (folder / "board.yaml").write_text(yaml.safe_dump(data))
    return load_board("corstone300", folder.parent)


def test_pyocd_command_line(tmp_path):
    board = probe_board(tmp_path)
    command = pyocd_command(board.flash[0], tmp_path / "fw.elf", "0240000034")
    assert command[1:] == [
        "-m", "pyocd", "flash", "--target", "cortex_m", "--uid", "0240000034",
        "--frequency", "4000000", str(tmp_path / "fw.elf"),
    ]  # fmt: skip


def test_pyocd_missing_or_no_probe_is_a_clear_error(tmp_path):
    from importlib.util import find_spec

    board = probe_board(tmp_path)
    elf = tmp_path / "fw.elf"
    elf.write_bytes(ELF)
    if find_spec("pyocd") is None:
        with pytest.raises(FlashError, match=r"pyOCD is not installed: pip install 'sdk\[flash\]'"):
            flash_firmware(board.flash, board.name, elf)
    else:
        with pytest.raises(FlashError, match="pyocd flash failed"):
            flash_firmware(board.flash, board.name, elf, probe="no-such-probe")
