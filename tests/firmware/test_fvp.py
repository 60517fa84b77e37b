"""The FVP target: its command line comes from board.yaml, and it runs over the host link.

No FVP is installed here: the end-to-end tests run the target against
tests/support/fvp_standin.py, a STAND-IN that takes the FVP's command line (refusing what it
does not know), announces UART0's port as the FVP does and runs the real link firmware on QEMU
behind it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sdk.errors import TargetError, UsageError
from sdk.firmware.boards import load_board
from sdk.targets.base import RunOptions
from sdk.targets.emulator import Preload
from sdk.targets.fvp import FvpDriver
from sdk.targets.run import make_target


def fvp_driver(board, npu_config: str | None = None) -> FvpDriver:
    """The FVP power driver on the board's FVP resource (board.yaml), for an NPU config."""
    return FvpDriver(make_target("fvp", board).resources[0], npu_config)


def fvp_up(driver: FvpDriver, elf: Path, workdir: Path):
    """The strategy bringing `driver`'s FVP up with `elf` (a link session on its UART0)."""
    strategy = make_target("fvp", driver.board).strategy
    strategy.power = driver
    return strategy.up(RunOptions(firmware=elf, workdir=workdir))


def test_command_line_from_board_yaml(tmp_path: Path):
    board = load_board("corstone300")
    target = fvp_driver(board)
    preloads = [Preload(tmp_path / "program.sdkp", board.slots["program"].base)]
    uart = tmp_path / "uart0.log"
    command = target.command(tmp_path / "fw.elf", preloads, tmp_path, uart)
    assert command[0] == "FVP_Corstone_SSE-300_Ethos-U55"
    params = [command[i + 1] for i, arg in enumerate(command) if arg == "-C"]
    assert "ethosu.num_macs=128" in params
    assert f"mps3_board.uart0.out_file={uart}" in params
    # UART0 is the link: a raw TCP bridge, never ended by a 0x04 byte inside a frame.
    assert "mps3_board.telnetterminal0.mode=raw" in params
    assert "mps3_board.telnetterminal0.start_telnet=0" in params
    assert not any("shutdown_on_eot" in p for p in params)
    assert "mps3_board.visualisation.disable-visualisation=1" in params
    assert "cpu0.semihosting-enable=1" in params
    assert f"cpu0.semihosting-cwd={tmp_path}" in params
    assert command[command.index("-a") + 1] == str(tmp_path / "fw.elf")
    data = [command[i + 1] for i, arg in enumerate(command) if arg == "--data"]
    assert data == [f"{tmp_path / 'program.sdkp'}@0x70000000"]


def test_mac_count_follows_the_npu_config():
    board = load_board("corstone300")
    assert fvp_driver(board, "ethos-u55-256").num_macs == 256
    assert fvp_driver(board, "ethos-u55-32").num_macs == 32
    with pytest.raises(UsageError, match="unknown NPU config"):
        fvp_driver(board, "ethos-u85-2048")


def test_missing_fvp_is_a_clear_error(tmp_path: Path):
    board = load_board("corstone300")
    target = fvp_driver(board)
    if shutil.which(target.binary):
        pytest.skip(f"{target.binary} is installed on this machine")
    with pytest.raises(TargetError, match="FVP not installed"), fvp_up(target, tmp_path, tmp_path):
        pass


def test_the_fvp_binary_comes_from_the_environment(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("SDK_FVP", str(tmp_path / "my_fvp"))
    target = fvp_driver(load_board("corstone300"))
    assert target.binary == str(tmp_path / "my_fvp")
    missing = r"FVP not installed: .*my_fvp not found.*--fvp PATH"
    with pytest.raises(TargetError, match=missing), fvp_up(target, tmp_path, tmp_path):
        pass


def test_a_running_fvp_refuses_a_program_for_another_mac_count(programs):
    from sdk.program.pte import load_program

    target = fvp_driver(load_board("corstone300"), "ethos-u55-256")
    target.running_config = "ethos-u55-256"  # as while `on` holds the FVP started for it
    with pytest.raises(UsageError, match="the FVP runs ethos-u55-256; the program was compiled"):
        target.follow(load_program(programs["delegate"]))  # compiled for ethos-u55-128
    target.follow(load_program(programs["add"]))  # no delegate: any FVP runs it


def test_num_macs_follow_the_program_s_compiled_npu(programs):
    from sdk.program.pte import load_program

    board = load_board("corstone300")
    target = fvp_driver(board, "ethos-u55-256")
    target.follow(load_program(programs["delegate"]))  # compiled for ethos-u55-128
    assert target.num_macs == 128
    cpu_only = fvp_driver(board, "ethos-u55-64")
    cpu_only.follow(load_program(programs["add"]))
    assert cpu_only.num_macs == 64


@pytest.mark.slow
def test_the_fvp_target_runs_over_the_link_behind_the_stand_in(fvp_standin, programs, tmp_path):
    """CPU and delegated programs: the launcher, the port announcement and the link end to
    end; the outputs are ExecuTorch's (CPU) and the host reference's (NPU), bit for bit."""
    from sdk.targets.host import run_host
    from sdk.targets.run import run_on_target
    from tests.support.fwprograms import oracle, random_inputs

    for name in ("add", "delegate"):
        pte = programs[name]
        inputs = random_inputs(pte, seed=4)
        report = run_on_target("fvp", "corstone300", pte, inputs, 120, tmp_path / name)
        if name == "delegate":
            want = run_host(pte, inputs, npu_executor="command-stream")
            assert report.npu_run is not None and report.npu_run.jobs == 1
        else:
            want = oracle(pte, inputs)
        for got, expected in zip(report.outputs, want, strict=True):
            np.testing.assert_array_equal(got, expected)
        # The Corstone-300 stand-in runs the board's image (on QEMU), which counts at the
        # board's SysTick as on an FVP (a host build's nanoseconds would be named a stand-in's:
        # test_ticks_at_the_boards_systick_are_the_fvps).
        assert report.timing.source.startswith("FVP CPU ticks")
        command = (tmp_path / name / "command.txt").read_text()
        assert "telnetterminal0.mode=raw" in command and "--data" not in command
        assert (
            "Listening for serial connection on port"
            in (tmp_path / name / "emulator.stderr.log").read_text()
        )


def test_ticks_at_the_boards_systick_are_the_fvps():
    """The board's image on an FVP counts at board.yaml's tick_hz: those are FVP CPU ticks;
    any other rate is not the board's time and is named so."""
    from sdk.targets.fvp import TIMING_SOURCE

    board = load_board("corstone300")
    target = fvp_driver(board, "ethos-u55-128")
    assert target.timing(1, 2, board.tick_hz).source == TIMING_SOURCE
    other = target.timing(1, 2, 1_000_000_000).source
    assert other != TIMING_SOURCE and "not the board's time" in other


def test_an_fvp_that_refuses_its_command_line_is_a_clear_error(fvp_standin, monkeypatch, tmp_path):
    board = load_board("corstone300")
    target = fvp_driver(board)
    target.config = {**target.config, "params": {**target.config["params"], "bogus.param": 1}}
    with pytest.raises(TargetError) as caught, fvp_up(target, tmp_path / "fw.elf", tmp_path):
        pass
    message = caught.value.message
    assert "exited with 1 before its UART listened" in message
    assert "Parameter 'bogus.param' not found" in (tmp_path / "emulator.stderr.log").read_text()


@pytest.mark.slow
def test_the_stand_in_takes_the_first_free_port_and_announces_it(fvp_standin, programs, tmp_path):
    """Port 5000 busy: the announced port is another, and the session reaches the firmware."""
    import contextlib
    import socket

    from sdk.firmware.build import build_firmware

    target = fvp_driver(load_board("corstone300"))
    elf = build_firmware("corstone300", programs["add"], tmp_path / "fw.elf")
    with socket.socket() as busy:
        with contextlib.suppress(OSError):  # already taken by someone: the point stands
            busy.bind(("127.0.0.1", 5000))
            busy.listen(1)
        with fvp_up(target, elf, tmp_path) as up:
            assert not up.session.port_name.endswith(":5000")
            assert up.session.connect().board == "corstone300"


# --- Corstone-320 (FVP_Corstone_SSE-320): no QEMU runs its M85, so the stand-in checks the ELF
# and serves the link from the host build (tests/support/fvp_standin.py --as corstone320) ---


def test_corstone320_command_line_has_the_sse320_names(tmp_path: Path):
    board = load_board("corstone320")
    target = fvp_driver(board)
    preloads = [Preload(tmp_path / "program.sdkp", board.slots["program"].base)]
    uart = tmp_path / "uart0.log"
    command = target.command(tmp_path / "fw.elf", preloads, tmp_path, uart)
    assert command[0] == "FVP_Corstone_SSE-320"
    params = [command[i + 1] for i, arg in enumerate(command) if arg == "-C"]
    assert params == [
        "mps4_board.subsystem.ethosu.num_macs=128",  # ExecuTorch's U85 tests: ethos-u85-128
        "mps4_board.visualisation.disable-visualisation=1",
        "vis_hdlcd.disable_visualisation=1",
        "mps4_board.telnetterminal0.start_telnet=0",
        "mps4_board.telnetterminal0.mode=raw",
        "mps4_board.telnetterminal0.start_port=5000",
        f"mps4_board.uart0.out_file={uart}",
        "mps4_board.subsystem.cpu0.semihosting-enable=1",
        f"mps4_board.subsystem.cpu0.semihosting-cwd={tmp_path}",
    ]
    assert not any(p.startswith(("mps3_board.", "ethosu.", "cpu0.")) for p in params)
    data = [command[i + 1] for i, arg in enumerate(command) if arg == "--data"]
    assert data == [f"{tmp_path / 'program.sdkp'}@0x70000000"]


def test_corstone320_mac_counts_are_the_u85s():
    board = load_board("corstone320")
    assert [fvp_driver(board, c).num_macs for c in board.npu_configs] == [128, 256, 512, 1024, 2048]
    with pytest.raises(UsageError, match="unknown NPU config 'ethos-u55-128'"):
        fvp_driver(board, "ethos-u55-128")


def test_the_compiled_config_names_product_and_macs():
    from sdk.targets.fvp import compiled_config

    assert compiled_config(0x00001807) == "ethos-u55-128"  # Vela 5.1.0's U55-128 word
    assert compiled_config(0x20000117) == "ethos-u85-128"  # ... and its U85 words
    assert compiled_config(0x2000261B) == "ethos-u85-2048"


def test_a_u55_program_is_refused_by_the_corstone320_fvp(programs):
    """Same MAC count, another NPU: said before the FVP starts (the firmware's driver would
    refuse it too: product 0 is not the U85's 2)."""
    from sdk.program.pte import load_program

    target = fvp_driver(load_board("corstone320"))
    with pytest.raises(UsageError, match=r"compiled for ethos-u55-128; board corstone320 has "):
        target.follow(load_program(programs["delegate"]))
    target.follow(load_program(programs["add"]))  # no delegate: any FVP runs it
    assert target.npu_config == "ethos-u85-128"


def test_the_corstone320_fvp_is_missing_here_with_its_own_name(monkeypatch, tmp_path: Path):
    monkeypatch.delenv("SDK_FVP", raising=False)
    target = fvp_driver(load_board("corstone320"))
    if shutil.which(target.binary):
        pytest.skip(f"{target.binary} is installed on this machine")
    found = target.availability()
    assert not found.available
    assert found.detail == "FVP not installed: FVP_Corstone_SSE-320 not found"
    assert found.install.startswith("install Arm's FVP_Corstone_SSE-320")


@pytest.mark.slow
def test_the_corstone320_fvp_target_runs_over_the_link_behind_the_stand_in(
    fvp320_standin, programs, corstone320_firmware, tmp_path
):
    """The FVP target on Corstone-320 end to end but for the CPU: the SSE-320 command line
    (the stand-in refuses any name it does not know), the M85 image's boot vector checked at
    0x11000000, the port announcement and the link; a CPU program's outputs are ExecuTorch's."""
    from sdk.targets.run import run_on_target
    from tests.support.fwprograms import oracle, random_inputs

    pte = programs["add"]
    inputs = random_inputs(pte, seed=4)
    report = run_on_target(
        "fvp", "corstone320", pte, inputs, 120, tmp_path / "run", firmware=corstone320_firmware
    )
    for got, expected in zip(report.outputs, oracle(pte, inputs), strict=True):
        np.testing.assert_array_equal(got, expected)
    command = (tmp_path / "run" / "command.txt").read_text()
    assert "mps4_board.subsystem.ethosu.num_macs=128" in command
    assert "FVP_Corstone_SSE-320" in command


def test_the_stand_in_refuses_an_image_that_does_not_boot_from_brom(
    fvp320_standin, programs, tmp_path
):
    """The Corstone-300 image (vectors in ITCM at 0x10000000) on the SSE-320: nothing at its
    reset vector base, so the FVP target fails before any link, naming the FVP's exit."""
    from sdk.firmware.build import build_firmware

    elf = build_firmware("corstone300", programs["add"], tmp_path / "fw300.elf")
    target = fvp_driver(load_board("corstone320"))
    failed = pytest.raises(TargetError, match="exited with 1 before its UART listened")
    with failed, fvp_up(target, elf, tmp_path / "run"):
        pass
    log = (tmp_path / "run" / "emulator.stderr.log").read_text()
    assert "nothing loaded at the reset vector base 0x11000000" in log


# --- Ethos-U85 delegates on the Corstone-320 FVP target: behind the stand-in, the host build's
# driver (U85 layout) drives the link's virtual U85, which runs Vela's command stream on the
# functional U85; `sdk deploy` holds the outputs to the host reference (the saved TOSA) ---

U85_MODEL = Path(__file__).parents[1] / "ethosu" / "models" / "conv.py"


@pytest.fixture(scope="module")
def u85_cache(tmp_path_factory) -> Path:
    """One deploy cache for the module: the second deploy reuses the export and firmware."""
    return tmp_path_factory.mktemp("u85_cache")


def deploy_u85(cache: Path, work: Path, monkeypatch, corrupt: bool = False):
    """`sdk deploy U85_MODEL --board corstone320 --target fvp` (the FVP is $SDK_FVP, the
    stand-in); (exit code, deploy.json, the virtual U85s made). `corrupt`: the virtual U85
    flips one byte of each job's first output, as a wrong NPU result would."""
    from sdk.cli.main import main
    from sdk.ethosu.device import VirtualU85

    monkeypatch.setenv("SDK_CACHE_DIR", str(cache))
    made: list[VirtualU85] = []

    class Kept(VirtualU85):
        def __post_init__(self) -> None:
            super().__post_init__()
            made.append(self)

        def _execute(self, delegate, inputs, keepalive):
            outputs = super()._execute(delegate, inputs, keepalive)
            if corrupt:
                outputs[0] = bytes([outputs[0][0] ^ 0x55]) + outputs[0][1:]
            return outputs

    monkeypatch.setattr("sdk.targets.linked.VirtualU85", Kept)
    report = work / "deploy.json"
    code = main([
        "deploy", str(U85_MODEL), "--board", "corstone320", "--target", "fvp",
        "-o", str(work / "out"), "--json", str(report),
    ])  # fmt: skip
    return code, json.loads(report.read_text()), made


@pytest.mark.slow
def test_a_u85_delegate_deploys_on_the_corstone320_fvp(
    fvp320_standin, u85_cache, monkeypatch, tmp_path
):
    """`sdk deploy --board corstone320 --target fvp` of a convolution: exported for
    ethos-u85-128 (the board's default), its delegate run by the firmware's driver on the
    virtual U85 behind the stand-in, the outputs bit-identical to the host reference."""
    code, report, npus = deploy_u85(u85_cache, tmp_path, monkeypatch)
    assert code == 0 and report["passed"] is True, report.get("failure")
    assert report["board"] == "corstone320" and report["target"]["name"] == "fvp"
    assert report["npu"] == "ethos-u85-128"
    delegates = report["placement"]["npu"]
    assert len(delegates) > 0
    on_u85 = "Ethos-U85 driver (firmware) on a virtual U85 (Vela's command stream on the host's "
    assert {d["ran_on"] for d in delegates} == {on_u85 + "functional Ethos-U85 model)"}
    npu_run = report["npu_run"]
    assert npu_run["npu"] == "Ethos-U85" and npu_run["npu_config"] == "ethos-u85-128"
    assert npu_run["jobs"] == npu_run["interrupts"] == len(delegates)
    (output,) = report["outputs"]
    assert output["host_reference"]["identical"] is True
    # Each job ran on the virtual U85 the driver programmed in its own layout, timed by the
    # U85 cycle model.
    (npu,) = npus
    assert npu.jobs == len(delegates) and npu.unknown_writes == []
    assert all(job.cycles and job.timing_error is None for job in npu.job_log)
    # The FVP was started for the program's MACs; the stand-in served the link with that NPU.
    command = (Path(report["files"]["log"]).parent / "command.txt").read_text()
    assert "FVP_Corstone_SSE-320" in command and "ethosu.num_macs=128" in command


@pytest.mark.slow
def test_a_wrong_u85_result_fails_the_corstone320_deploy(
    fvp320_standin, u85_cache, monkeypatch, tmp_path
):
    """One byte of the virtual U85's output changed: the deploy fails against the host
    reference (exit 4), never passes quietly."""
    code, report, npus = deploy_u85(u85_cache, tmp_path, monkeypatch, corrupt=True)
    assert code == 4 and report["passed"] is False
    assert report["failure"].startswith("the target differs from the host reference")
    (output,) = report["outputs"]
    assert output["host_reference"]["identical"] is False
    assert [npu.jobs for npu in npus] == [1]
