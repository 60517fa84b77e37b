"""The FVP target: its command line comes from board.yaml (no FVP is installed here)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sdk.errors import TargetError, UsageError
from sdk.firmware.boards import load_board
from sdk.targets.emulator import Preload
from sdk.targets.fvp import FvpTarget


def test_command_line_from_board_yaml(tmp_path: Path):
    board = load_board("corstone300")
    target = FvpTarget(board)
    preloads = [
        Preload(tmp_path / "program.sdkp", board.slots["program"].base),
        Preload(tmp_path / "inputs.sdki", board.slots["inputs"].base),
    ]
    uart = tmp_path / "uart0.log"
    command = target.command(tmp_path / "fw.elf", preloads, tmp_path, uart, timeout_s=60)
    assert command[0] == "FVP_Corstone_SSE-300_Ethos-U55"
    params = [command[i + 1] for i, arg in enumerate(command) if arg == "-C"]
    assert "ethosu.num_macs=128" in params
    assert f"mps3_board.uart0.out_file={uart}" in params
    assert "mps3_board.uart0.shutdown_on_eot=1" in params
    assert "mps3_board.visualisation.disable-visualisation=1" in params
    assert "cpu0.semihosting-enable=1" in params
    assert f"cpu0.semihosting-cwd={tmp_path}" in params
    assert command[command.index("-a") + 1] == str(tmp_path / "fw.elf")
    data = [command[i + 1] for i, arg in enumerate(command) if arg == "--data"]
    assert data == [
        f"{tmp_path / 'program.sdkp'}@0x70000000",
        f"{tmp_path / 'inputs.sdki'}@0x72000000",
    ]
    assert command[command.index("--timelimit") + 1] == "60"


def test_mac_count_follows_the_npu_config():
    board = load_board("corstone300")
    assert FvpTarget(board, "ethos-u55-256").num_macs == 256
    assert FvpTarget(board, "ethos-u55-32").num_macs == 32
    with pytest.raises(UsageError, match="unknown NPU config"):
        FvpTarget(board, "ethos-u85-2048")


def test_missing_fvp_is_a_clear_error(tmp_path: Path):
    board = load_board("corstone300")
    target = FvpTarget(board)
    if shutil.which(target.binary):
        pytest.skip(f"{target.binary} is installed on this machine")
    with pytest.raises(TargetError, match="FVP not installed"):
        target.run(tmp_path / "fw.elf", [], 10, tmp_path)


def test_the_fvp_binary_comes_from_the_environment(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("SDK_FVP", str(tmp_path / "my_fvp"))
    target = FvpTarget(load_board("corstone300"))
    assert target.binary == str(tmp_path / "my_fvp")
    with pytest.raises(TargetError, match=r"FVP not installed: .*my_fvp not found.*--fvp PATH"):
        target.run(tmp_path / "fw.elf", [], 10, tmp_path)


def test_num_macs_follow_the_program_s_compiled_npu(programs):
    from sdk.program.pte import load_program

    board = load_board("corstone300")
    target = FvpTarget(board, "ethos-u55-256")
    target.follow_program(load_program(programs["delegate"]))  # compiled for ethos-u55-128
    assert target.num_macs == 128
    cpu_only = FvpTarget(board, "ethos-u55-64")
    cpu_only.follow_program(load_program(programs["add"]))
    assert cpu_only.num_macs == 64
