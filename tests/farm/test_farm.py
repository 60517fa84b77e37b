"""Board farms on labgrid, with a real local farm (conftest.py, localfarm.py): labgrid's
coordinator and exporter on loopback, QEMU boards behind places. A deploy on one place; a zoo
over two places at once; a place another client holds (the wait, the timeout naming the
holder); a board that dies mid-run (the error names the place, the place is released, the
board is power-cycled); a firmware kept, or flashed again when a program needs kernels it
lacks; a board on a serial device behind ser2net (RFC 2217); `sdk flash` and the pytest
plugin on labgrid's --lg-env."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sdk.cli.main import main
from sdk.firmware.build import build_firmware
from sdk.targets.serial import TIMING_SOURCE as BOARD_TIMING

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "shared_split.py"  # calls bmm and split on the CPU
SMALL = REPO / "tests" / "export" / "models" / "conv_linear.py"  # (de)quantize only
HIL_EXAMPLE = REPO / "tests" / "hil" / "test_dut_example.py"

pytestmark = pytest.mark.slow


def sdk(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def deploy_on(farm, capsys, place: str, model: Path, out: Path, *extra) -> tuple[int, str, dict]:
    code, stdout, err = sdk(
        capsys, "deploy", model, "--target", "labgrid", "--place", place,
        "--coordinator", farm.address, "-o", out, "--quiet", *extra,
    )  # fmt: skip
    report = json.loads((out / "deploy.json").read_text()) if code == 0 else {}
    return code, stdout + err, report


def test_a_deploy_on_a_place_acquires_resets_runs_and_releases(farm, farm_cache, tmp_path, capsys):
    board = farm.boards["c300-1"]
    boots = board.boots
    code, text, report = deploy_on(farm, capsys, "c300-1", MODEL, tmp_path / "d")
    assert code == 0, text
    assert report["passed"] and report["target"]["name"] == "labgrid"
    assert report["target"]["place"] == "c300-1"
    # The board ran what was flashed on it, which has every kernel the program calls.
    assert report["target"]["firmware"] == "kept", report["target"]
    assert "aten::bmm.out" in report["target"]["firmware_detail"]
    assert board.boots == boots + 1  # power-cycled before the run, by labgrid's power driver
    assert [t["source"] for t in report["timing"] if t.get("source") == BOARD_TIMING]
    assert farm.holder("c300-1") == "None"  # released
    log = (tmp_path / "d" / "run" / "place.log").read_text()
    assert "place c300-1: acquired" in log and "place c300-1: released" in log


def test_a_board_on_a_serial_device_is_reached_through_ser2net(farm, farm_cache, tmp_path, capsys):
    """c300-4's UART is a serial device (a pty pair standing in for USB): labgrid's exporter
    serves it through Debian's ser2net, and the link runs over RFC 2217."""
    code, text, report = deploy_on(farm, capsys, "c300-4", MODEL, tmp_path / "d")
    assert code == 0, text
    assert report["passed"] and report["target"]["place"] == "c300-4"
    log = (tmp_path / "d" / "run" / "place.log").read_text()
    assert "console rfc2217://127.0.0.1:" in log, log


def test_a_zoo_over_two_places_runs_at_once_with_one_report(farm, farm_cache, tmp_path, capsys):
    for model in (MODEL, SMALL):  # exported first: the zoo's time is the boards'
        code, text, _ = deploy_on(farm, capsys, "c300-1", model, tmp_path / model.stem)
        assert code == 0, text
    out = tmp_path / "zoo"
    code, stdout, err = sdk(
        capsys, "deploy", MODEL, SMALL, "--target", "labgrid", "--places", "c300-1,c300-2",
        "--coordinator", farm.address, "-o", out, "--junit", tmp_path / "zoo.xml",
    )  # fmt: skip
    assert code == 0, stdout + err
    zoo = json.loads((out / "zoo.json").read_text())
    assert zoo["passed"] and [m["model"] for m in zoo["models"]] == [str(MODEL), str(SMALL)]
    assert {m["place"] for m in zoo["models"]} == {"c300-1", "c300-2"}
    for entry in zoo["models"]:  # each model's own report says which place ran it
        report = json.loads(Path(entry["report"]).read_text())
        assert report["passed"] and report["target"]["place"] == entry["place"]
    # Concurrent: the whole took less than the two one after the other.
    seconds = [m["seconds"] for m in zoo["models"]]
    assert zoo["seconds"] < sum(seconds) - 0.5 * min(seconds), zoo
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "zoo.xml").getroot().iter("testcase")}
    assert set(cases) == {str(MODEL), str(SMALL)}
    assert all(c.find("failure") is None for c in cases.values())
    assert farm.holder("c300-1") == farm.holder("c300-2") == "None"


def test_a_zoo_reports_a_failing_model_with_its_place(farm, farm_cache, tmp_path, capsys):
    missing = tmp_path / "no_such_model.py"
    out = tmp_path / "zoo"
    code, _, err = sdk(
        capsys, "deploy", SMALL, missing, "--target", "labgrid", "--places", "c300-1,c300-2",
        "--coordinator", farm.address, "-o", out,
    )  # fmt: skip
    assert code != 0
    zoo = json.loads((out / "zoo.json").read_text())
    bad = [m for m in zoo["models"] if not m["passed"]]
    assert [m["model"] for m in bad] == [str(missing)] and "model file not found" in bad[0][
        "failure"
    ]
    assert "1 of 2 models failed" in err and "no_such_model.py" in err


def test_a_held_place_is_waited_for_then_times_out_naming_its_holder(
    farm, farm_cache, tmp_path, capsys
):
    farm.client("-p", "c300-2", "acquire", user="alice")
    try:
        holder = farm.holder("c300-2")
        assert holder.endswith("/alice")
        started = time.monotonic()
        code, text, _ = deploy_on(
            farm, capsys, "c300-2", SMALL, tmp_path / "d", "--acquire-timeout", "2"
        )
        assert code == 1 and time.monotonic() - started >= 2
        lines = [ln for ln in text.splitlines() if ln.strip()]
        assert lines == [
            f"error: place c300-2 is held by {holder}: waited 2 s (--acquire-timeout); ask "
            "them to release it (`labgrid-client -p c300-2 release`)"
        ], text
        assert farm.holder("c300-2") == holder  # not ours: left as it was
        # The holder lets go while the second client waits: woken by the coordinator's
        # update, it gets the place and runs.
        threading.Timer(1.5, farm.client, ("-p", "c300-2", "release"), {"user": "alice"}).start()
        started = time.monotonic()
        code, text, report = deploy_on(
            farm, capsys, "c300-2", SMALL, tmp_path / "d2", "--acquire-timeout", "60"
        )
        assert code == 0, text
        assert report["target"]["place"] == "c300-2"
        log = (tmp_path / "d2" / "run" / "place.log").read_text()
        waited = float(re.search(r"acquired after ([\d.]+) s", log).group(1))
        assert 0.5 <= waited < 20 and time.monotonic() - started < 40, log
    finally:
        farm.client("-p", "c300-2", "release", user="alice", check=False)
    assert farm.holder("c300-2") == "None"


def test_a_place_this_user_holds_is_waited_for_unless_use_acquired(
    farm, farm_cache, tmp_path, capsys
):
    farm.client("-p", "c300-2", "acquire")  # by hand, as this user: not the SDK's to take
    try:
        me = farm.holder("c300-2")
        code, text, _ = deploy_on(
            farm, capsys, "c300-2", SMALL, tmp_path / "d", "--acquire-timeout", "1"
        )
        assert code == 1 and f"place c300-2 is held by {me} (you: another run" in text, text
        code, text, report = deploy_on(
            farm, capsys, "c300-2", SMALL, tmp_path / "e", "--use-acquired"
        )
        assert code == 0 and report["target"]["place"] == "c300-2", text
        assert farm.holder("c300-2") == me  # left acquired: the user's
    finally:
        farm.client("-p", "c300-2", "release", check=False)


def test_an_unknown_place_or_coordinator_is_one_line(farm, tmp_path, capsys):
    code, text, _ = deploy_on(farm, capsys, "c300-9", SMALL, tmp_path / "d")
    assert code == 1 and "has no place 'c300-9' (places: c300-1, c300-2, c300-3, c300-4)" in text
    code, _, err = sdk(
        capsys, "deploy", SMALL, "--target", "labgrid", "--place", "c300-1",
        "--coordinator", "127.0.0.1:9", "-o", tmp_path / "e", "--quiet",
    )  # fmt: skip
    assert code == 1 and "cannot reach the labgrid coordinator at 127.0.0.1:9" in err
    code, _, err = sdk(capsys, "deploy", SMALL, "--target", "labgrid", "-o", tmp_path / "f")
    assert code == 2 and "--target labgrid needs --place NAME" in err


@pytest.fixture(scope="module")
def cpu_program(tmp_path_factory) -> Path:
    """A CPU-only program whose run can be made long (--iterations)."""
    sys.path.insert(0, str(HIL_EXAMPLE.parent))
    try:
        from test_dut_example import program
    finally:
        sys.path.remove(str(HIL_EXAMPLE.parent))
    return program()


def long_run_argv(farm, program: Path, tmp_path: Path, place: str, timeout: float = 8) -> list:
    """`sdk run` of `program` on `place` for many iterations (longer than `timeout`: the RUN
    fails after it unless something ends the run first), logging to work/."""
    import numpy as np

    from sdk.utils.npz import write_arrays

    inputs = tmp_path / "in.npz"
    write_arrays(inputs, [np.ones((4, 16), np.float32)] * 2)
    return [
        "run", program, "--target", "labgrid", "--place", place, "--coordinator",
        farm.address, "--inputs", inputs, "-o", tmp_path / "out.npz", "--workdir",
        tmp_path / "work", "--iterations", "1000000", "--timeout", str(timeout),
    ]  # fmt: skip


def from_a_terminal(argv: list[str]) -> list[str]:
    """`python argv...` started as a terminal starts it: SIGINT at its default. A process
    started in the background by a non-interactive shell (CI's `cmd &`) inherits SIGINT and
    SIGQUIT ignored, which its children keep: a Ctrl-C test must not depend on how the test
    run itself was started."""
    reset = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
        "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    )
    return [sys.executable, "-c", reset, *argv]


def signal_state(pid: int) -> str:
    """A process's blocked, ignored and caught signal masks (/proc), for a failure message."""
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError as exc:
        return f"pid {pid}: {exc}"
    return " ".join(
        ln.replace("\t", "=") for ln in status if ln.startswith(("SigBlk", "SigIgn", "SigCgt"))
    )


def when_running(tmp_path: Path, action) -> threading.Thread:
    """A thread doing `action()` once the run's RUN request is on the link."""
    link_log = tmp_path / "work" / "link.log"

    def wait() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if link_log.is_file() and "> RUN" in link_log.read_text(errors="replace"):
                action()
                return
            time.sleep(0.05)  # the run's log is the only signal from another process

    thread = threading.Thread(target=wait)
    thread.start()
    return thread


@pytest.mark.parametrize("fate", ["kill", "freeze"])
def test_a_board_dead_or_hung_mid_run_names_the_place_and_releases_it(
    farm, cpu_program, tmp_path, capsys, fate
):
    board = farm.boards["c300-3"]
    boots = board.boots
    watcher = when_running(tmp_path, getattr(board, fate))
    code, stdout, err = sdk(capsys, *long_run_argv(farm, cpu_program, tmp_path, "c300-3"))
    watcher.join()
    assert code == 1 and not (tmp_path / "out.npz").exists(), stdout + err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: place c300-3: "), err
    assert farm.holder("c300-3") == "None"  # released
    # Power-cycled after the failure (and before the run): the next client finds it running.
    assert board.boots == boots + 2 and board.is_on


def test_ctrl_c_mid_run_releases_the_place(farm, cpu_program, tmp_path):
    import signal

    # The Ctrl-C ends the run, not the timeout (a loaded machine may take seconds to send it).
    argv = [str(a) for a in long_run_argv(farm, cpu_program, tmp_path, "c300-2", 120)]
    command = from_a_terminal(["-m", "sdk.cli.main", *argv])
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=farm.env())
    seen: list[str] = []

    def interrupt() -> None:
        seen.append(signal_state(process.pid))  # what the process does with a Ctrl-C
        process.send_signal(signal.SIGINT)

    when_running(tmp_path, interrupt).join()
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "error: interrupted" in err, (seen, err)
    assert farm.holder("c300-2") == "None"


def test_a_firmware_is_kept_or_flashed_again_when_it_lacks_kernels(
    farm, farm_cache, tmp_path, capsys, every_kernel_elf
):
    board = farm.boards["c300-3"]
    # Deploy the small model once to have its program, and a firmware with only its kernels.
    code, text, small = deploy_on(farm, capsys, "c300-3", SMALL, tmp_path / "small")
    assert code == 0, text
    narrow = build_firmware("corstone300", Path(small["files"]["program"]), tmp_path / "n.elf")
    # `sdk flash --target labgrid`: acquires the place, flashes the board, power-cycles it.
    boots = board.boots
    code, stdout, err = sdk(
        capsys, "flash", narrow, "--target", "labgrid", "--place", "c300-3",
        "--coordinator", farm.address, "--drive", board.drive,
    )  # fmt: skip
    assert code == 0, stdout + err
    assert board.image().read_bytes() == narrow.read_bytes() and board.boots > boots
    assert farm.holder("c300-3") == "None"

    # Without a way to flash, a program needing more kernels is refused naming them.
    code, text, _ = deploy_on(farm, capsys, "c300-3", MODEL, tmp_path / "a")
    assert code == 1 and "has no kernel for aten::bmm.out, aten::split_with_sizes_copy.out" in (
        text
    ), text
    # With the board's drive: the host flashes the firmware with every kernel, then runs.
    code, text, report = deploy_on(
        farm, capsys, "c300-3", MODEL, tmp_path / "b", "--drive", board.drive
    )
    assert code == 0, text
    assert report["target"]["firmware"] == "flashed", report["target"]
    assert (
        "lacked aten::bmm.out, aten::split_with_sizes_copy.out"
        in (report["target"]["firmware_detail"])
    )
    assert board.image().read_bytes() == every_kernel_elf.read_bytes()
    # The next program finds every kernel: the board keeps its firmware.
    code, text, report = deploy_on(
        farm, capsys, "c300-3", SMALL, tmp_path / "c", "--drive", board.drive
    )
    assert code == 0 and report["target"]["firmware"] == "kept", text


def test_a_zoo_interrupted_releases_every_place(farm, farm_cache, cpu_program, tmp_path):
    import signal

    out = tmp_path / "zoo"
    command = from_a_terminal([
        "-m", "sdk.cli.main", "deploy", str(MODEL), str(SMALL), "--target",
        "labgrid", "--places", "c300-1,c300-2", "--coordinator", farm.address, "-o", str(out),
    ])  # fmt: skip
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=farm.env())
    logs = [out / "0-shared_split" / "run" / "place.log", out / "1-conv_linear" / "run"
            / "place.log"]  # fmt: skip
    deadline = time.monotonic() + 120
    while not all(p.is_file() for p in logs) and time.monotonic() < deadline:
        time.sleep(0.05)  # another process's files are the only signal
    seen = signal_state(process.pid)  # what the zoo does with a Ctrl-C
    process.send_signal(signal.SIGINT)  # Ctrl-C, as a terminal sends it to the zoo
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130 and "error: interrupted" in err, (seen, err)
    assert farm.holder("c300-1") == farm.holder("c300-2") == "None"
    for log in logs:
        assert "released" in log.read_text(), log.read_text()


def test_the_pytest_plugin_runs_on_a_labgrid_environment(farm, tmp_path):
    env = tmp_path / "env.yaml"
    env.write_text("targets:\n  main:\n    resources:\n      RemotePlace:\n        name: c300-2\n")
    farm.client("-p", "c300-2", "acquire")  # as a lab does before its tests
    boots = farm.boards["c300-2"].boots
    try:
        junit = tmp_path / "junit.xml"
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HIL_EXAMPLE),
             f"--junitxml={junit}", "--lg-env", str(env), "--lg-coordinator", farm.address],
            capture_output=True, text=True, timeout=900, cwd=tmp_path, env=farm.env(),
        )  # fmt: skip
    finally:
        farm.client("-p", "c300-2", "release")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "3 passed" in result.stdout
    assert farm.boards["c300-2"].boots == boots + 1  # its board, reset by the env's place
    for case in ET.parse(junit).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props["sdk_target"] == "labgrid" and props["sdk_timing_source"] == BOARD_TIMING
