"""`sdk boards`, `sdk doctor` and target availability, on this machine's real tools.

Where a piece must be absent it is made absent for real: a PATH holding links to only some
tools (no QEMU), a board copy naming a QEMU binary that does not exist, a TCP port nothing
listens on. The one stand-in is an FVP (a FAKE shell script named like the board's FVP
binary): availability only looks the binary up, it never starts it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
from pathlib import Path

import pytest
import yaml

from sdk.cli.main import main
from sdk.environment.doctor import MISSING, OK, WRONG, apt_packages, debian_versions, package_check
from sdk.environment.pins import pins_for_modules
from sdk.firmware.boards import BOARDS_DIR, DEFAULT_BOARD, SCHEMA_FILE, load_board
from sdk.targets.base import RunOptions
from sdk.targets.fvp import FVP_ENV
from sdk.targets.run import available_targets, make_target

BOARD = load_board(DEFAULT_BOARD)
QEMU = BOARD.target("qemu")["binary"]
FVP = BOARD.target("fvp")["binary"]
GCC = f"{BOARD.toolchain_prefix}gcc"
CHECK_LINE = re.compile(r"^(ok|MISSING|WRONG) +\S.*$")


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def no_fvp_unless_given(monkeypatch, tmp_path):
    """No $SDK_FVP, a cache of the test's own; skipped where a real FVP is installed."""
    monkeypatch.delenv(FVP_ENV, raising=False)
    monkeypatch.setenv("SDK_CACHE_DIR", str(tmp_path / "cache"))
    if shutil.which(FVP):
        pytest.skip(f"{FVP} is installed on this machine")


def only_tools(monkeypatch, folder: Path, *tools: str) -> Path:
    """PATH set to `folder`, holding links to just these tools (found on the real PATH)."""
    folder.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        found = shutil.which(tool)
        assert found, f"{tool} is not installed here"
        (folder / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(folder))
    return folder


def fake_fvp(folder: Path) -> Path:
    """A FAKE FVP binary: an executable named like the board's (it only needs to be found)."""
    script = folder / FVP
    script.write_text("#!/bin/sh\n# FAKE FVP for tests: availability only looks it up.\nexit 0\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def check_lines(out: str) -> dict[str, str]:
    """`sdk doctor`'s check lines by what they check (status, what, found [fix])."""
    lines = [line for line in out.splitlines() if CHECK_LINE.match(line)]
    return {re.split(r"\s{2,}", line)[1]: line for line in lines}


def free_port() -> int:
    """A TCP port nobody listens on (bound, then closed again)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- sdk boards ------------------------------------------------------------------------


def test_boards_lists_the_board_its_memory_and_what_runs_here(capsys):
    code, out, err = run_cli(capsys, "boards")
    assert code == 0, err
    assert out.startswith(f"{DEFAULT_BOARD}: {BOARD.description}")
    assert re.search(r"^ +itcm +0x10000000 +512 KiB$", out, re.M), out
    assert re.search(r"^ +ddr +0x70000000 +256 MiB$", out, re.M), out
    assert re.search(r"^ +program +0x70000000 +32 MiB$", out, re.M), out
    assert "npu: ethos-u55, default ethos-u55-128 (configs: ethos-u55-32," in out
    assert re.search(rf"^ +qemu +yes +/\S+/{QEMU} \(QEMU emulator version ", out, re.M), out
    fvp = re.search(rf"^ +fvp +no +FVP not installed: {FVP} not found; (.*)$", out, re.M)
    assert fvp and "--fvp PATH" in fvp.group(1), out
    assert re.search(r"^ +serial +no +no --port given; connect the board", out, re.M), out
    assert "flash: mps3-usb" in out
    assert "serial ports seen" in out


def test_boards_json_has_the_same_facts(capsys):
    code, out, err = run_cli(capsys, "boards", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["schema"] == "sdk.boards/1"
    (board,) = [b for b in data["boards"] if b["name"] == DEFAULT_BOARD]
    assert board["memory"] == [
        {"name": r.name, "base": r.base, "size": r.size} for r in BOARD.memory.values()
    ]
    assert {"name": "itcm", "base": 0x10000000, "size": 512 * 1024} in board["memory"]
    assert [s["name"] for s in board["slots"]] == list(BOARD.slots)
    assert board["npu"] == {
        "kind": "ethos-u55",
        "default_config": "ethos-u55-128",
        "configs": list(BOARD.npu_configs),
    }
    targets = board["targets"]
    assert list(targets) == ["host", "qemu", "fvp", "serial", "labgrid"]
    assert targets["host"]["available"] and targets["qemu"]["available"]
    assert "QEMU emulator version" in targets["qemu"]["detail"]
    assert not targets["fvp"]["available"] and "--fvp PATH" in targets["fvp"]["install"]
    assert not targets["serial"]["available"]
    assert board["flash"][0]["method"] == "mps3-usb"
    for port in data["serial_ports"]:
        assert set(port) == {"device", "description", "serial_number"}


def test_boards_probes_the_port_it_is_given(capsys):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        url = f"socket://127.0.0.1:{server.getsockname()[1]}"
        code, out, err = run_cli(capsys, "boards", "--json", "--port", url)
    assert code == 0, err
    serial = json.loads(out)["boards"][0]["targets"]["serial"]
    assert serial["available"] and url in serial["detail"]


# --- availability ----------------------------------------------------------------------


def test_a_board_whose_qemu_does_not_exist_has_no_qemu(tmp_path):
    boards = tmp_path / "boards"
    shutil.copytree(BOARDS_DIR / DEFAULT_BOARD, boards / DEFAULT_BOARD)
    shutil.copy(BOARDS_DIR / SCHEMA_FILE, boards / SCHEMA_FILE)
    path = boards / DEFAULT_BOARD / "board.yaml"
    data = yaml.safe_load(path.read_text())
    data["targets"]["qemu"]["binary"] = "qemu-system-arm-not-installed"
    path.write_text(yaml.safe_dump(data))
    board = load_board(DEFAULT_BOARD, boards)
    found = make_target("qemu", board).strategy.availability()
    assert not found.available
    assert found.detail == "qemu-system-arm-not-installed not found on PATH"
    assert found.install == "apt-get install qemu-system-arm"
    assert not available_targets(board)["qemu"].available
    assert available_targets(BOARD)["qemu"].available  # the real board's QEMU is here


def test_the_fvp_is_found_where_a_run_would_find_it(tmp_path, monkeypatch):
    script = fake_fvp(tmp_path)

    def fvp():
        return make_target("fvp", BOARD).strategy

    assert fvp().availability(RunOptions(fvp=script)).detail == str(script)
    monkeypatch.setenv(FVP_ENV, str(script))
    assert fvp().availability().available
    monkeypatch.setenv(FVP_ENV, str(tmp_path / "no_fvp"))
    missing = fvp().availability()
    assert not missing.available and "no_fvp not found" in missing.detail


def test_serial_is_available_only_where_the_port_opens():
    target = make_target("serial", BOARD).strategy
    assert not target.availability().available
    assert "no --port" in target.availability(RunOptions()).detail
    port = free_port()
    closed = target.availability(RunOptions(port=f"socket://127.0.0.1:{port}"))
    assert not closed.available
    assert closed.detail.startswith(f"cannot open serial port socket://127.0.0.1:{port}: ")
    assert "--port URL" in closed.install and "sdk boards" in closed.install
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        url = f"socket://127.0.0.1:{server.getsockname()[1]}"
        listening = target.availability(RunOptions(port=url))
    assert listening.available and url in listening.detail


def test_run_refuses_a_missing_emulator_before_reading_anything(capsys, tmp_path, monkeypatch):
    only_tools(monkeypatch, tmp_path / "bin", GCC)
    code, _, err = run_cli(
        capsys, "run", "--target", "qemu", tmp_path / "absent.pte",
        "--inputs", tmp_path / "absent.npz", "-o", tmp_path / "o.npz",
    )  # fmt: skip
    assert code == 1 and err.count("\n") == 1, err
    assert err == (
        f"error: target qemu is not available here: {QEMU} not found on PATH; "
        "apt-get install qemu-system-arm\n"
    )


# --- sdk doctor ------------------------------------------------------------------------


def test_doctor_passes_here(capsys):
    code, out, err = run_cli(capsys, "doctor")
    assert code == 0, (out, err)
    lines = out.splitlines()
    assert all(CHECK_LINE.match(line) for line in lines[:-2]), out
    assert re.fullmatch(r"debian packages: gcc-arm-none-eabi \d\S*, .*", lines[-2]), lines[-2]
    assert lines[-1] == f"default target (auto) on {DEFAULT_BOARD}: qemu"
    checks = check_lines(out)
    for what in ("torch==2.13.0", GCC, "scons", "flatc", "target host", "target qemu"):
        assert checks[what].startswith("ok "), checks[what]
    assert checks["target fvp (optional)"].startswith("MISSING ")
    assert "fix: install Arm's FVP_Corstone_SSE-300_Ethos-U55" in checks["target fvp (optional)"]
    assert str(Path(os.environ["SDK_CACHE_DIR"])) in checks["cache (optional)"]


def test_doctor_json(capsys):
    code, out, err = run_cli(capsys, "doctor", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert (
        data["schema"] == "sdk.environment.doctor/1"
        and data["ok"]
        and data["default_target"] == "qemu"
    )
    by_what = {c["what"]: c for c in data["checks"]}
    assert by_what["target qemu"]["status"] == OK and by_what["target qemu"]["needed"]
    assert not by_what["target fvp (optional)"]["needed"]
    assert data["cache"]["root"] == os.environ["SDK_CACHE_DIR"]
    packages = data["debian_packages"]
    assert list(packages) == apt_packages() and "qemu-system-arm" in packages
    assert re.fullmatch(r"(\d+:)?\d[\w.+~-]*", packages["gcc-arm-none-eabi"])  # dpkg's form


def test_the_debian_packages_are_the_list_bootstrap_installs(tmp_path):
    listing = tmp_path / "apt.txt"
    listing.write_text("# comment\ngcc-arm-none-eabi  qemu-system-arm # why\n\nno-such-package-x\n")
    names = apt_packages(listing)
    assert names == ["gcc-arm-none-eabi", "qemu-system-arm", "no-such-package-x"]
    versions = debian_versions(names)
    assert versions["gcc-arm-none-eabi"] and versions["no-such-package-x"] is None
    bootstrap = (Path(__file__).parents[2] / "scripts" / "bootstrap.sh").read_text()
    assert "scripts/apt-packages.txt" in bootstrap and "APT_PACKAGES=(" not in bootstrap


def test_doctor_fails_without_qemu_and_names_the_fix(capsys, tmp_path, monkeypatch):
    only_tools(monkeypatch, tmp_path / "bin", GCC)
    code, out, err = run_cli(capsys, "doctor")
    assert code == 1, out
    line = check_lines(out)["target qemu"]
    assert re.match(rf"MISSING +target qemu +{QEMU} not found on PATH", line), line
    assert line.endswith("fix: apt-get install qemu-system-arm")
    assert err.startswith("error: the default target (qemu) cannot run here")
    assert "target qemu" in err and err.count("\n") == 1


def test_doctor_takes_the_fvp_as_default_where_there_is_no_qemu(capsys, tmp_path, monkeypatch):
    fake_fvp(only_tools(monkeypatch, tmp_path / "bin", GCC))
    code, out, err = run_cli(capsys, "doctor")
    assert code == 0, (out, err)
    checks = check_lines(out)
    assert checks["target fvp"].startswith("ok ")
    assert checks["target qemu (optional)"].startswith("MISSING ")
    assert out.splitlines()[-1] == f"default target (auto) on {DEFAULT_BOARD}: fvp"


def test_doctor_fails_without_the_toolchain(capsys, tmp_path, monkeypatch):
    only_tools(monkeypatch, tmp_path / "bin", QEMU)
    code, out, _ = run_cli(capsys, "doctor")
    assert code == 1
    assert check_lines(out)[GCC].endswith("fix: apt-get install gcc-arm-none-eabi")


# --- the pins --------------------------------------------------------------------------


def test_a_version_against_its_pin():
    wrong = package_check("torch==2.13.0", "2.12.1")
    assert wrong.status == WRONG and wrong.needed and wrong.found == "2.12.1"
    assert wrong.fix.endswith("-m pip install torch==2.13.0")
    assert package_check("numpy>=2.0", None).fix.endswith("install 'numpy>=2.0'")  # quoted
    assert package_check("torch==2.13.0", "2.13.0+cpu").status == OK  # a local build label
    assert package_check("numpy>=2.0", "2.1.3").status == OK
    assert package_check("numpy>=2.0", "1.26.4").status == WRONG
    assert package_check("numpy>=2.0", None).status == MISSING
    optional = package_check("pyocd>=0.36", None, extra="flash")
    assert optional.status == MISSING and not optional.needed and "sdk[flash]" in optional.what


def test_the_reference_s_install_hint_comes_from_the_pins():
    from importlib import metadata

    pinned = {p.split(";")[0] for p in metadata.requires("sdk")}
    texts = [pin.text for pin in pins_for_modules(["executorch.runtime", "tosa_reference_model"])]
    assert set(texts) <= pinned
    assert any(t.startswith("executorch") for t in texts)
    assert any(t.startswith("tosa-tools") for t in texts)


# --- the second board: Corstone-320, which no QEMU emulates ----------------------------

M85 = load_board("corstone320")


def test_boards_lists_corstone320_and_says_why_it_has_no_qemu(capsys):
    code, out, err = run_cli(capsys, "boards")
    assert code == 0, err
    text = out[out.index("corstone320: ") :]
    assert text.startswith(f"corstone320: {M85.description}")
    assert re.search(r"^ +brom +0x11000000 +128 KiB$", text, re.M), text
    assert "npu: ethos-u85, default ethos-u85-128 (configs: ethos-u85-128," in text
    assert re.search(
        r"^ +qemu +no +board corstone320 has no qemu target: no QEMU emulates", text, re.M
    )
    fvp = M85.target("fvp")["binary"]
    assert re.search(rf"^ +fvp +no +FVP not installed: {fvp} not found", text, re.M), text


def test_doctor_on_corstone320_says_there_is_no_qemu_and_passes(capsys):
    """No QEMU for the M85 is a fact of the board, not a missing install: doctor reports it
    as optional and picks the FVP for `auto`, which (as on Corstone-300) never fails it."""
    code, out, err = run_cli(capsys, "doctor", "--board", "corstone320")
    assert code == 0, (out, err)
    assert out.splitlines()[-1] == "default target (auto) on corstone320: fvp"
    checks = check_lines(out)
    assert checks["target qemu (optional)"].startswith("MISSING ")
    assert "no QEMU emulates a Cortex-M85" in checks["target qemu (optional)"]
    # The default target, the user's to install (an FVP never fails the diagnosis).
    assert checks["target fvp"].startswith("MISSING ")
    assert "fix: install Arm's FVP_Corstone_SSE-320" in checks["target fvp"]
    assert "-march=armv8.1-m.main+mve.fp+fp.dp" in checks["newlib (libc.a, nano.specs)"]


def test_corstone320_takes_the_fvp_for_auto_when_it_is_there(monkeypatch, tmp_path):
    from sdk.targets.run import auto_target

    folder = only_tools(monkeypatch, tmp_path / "bin")
    script = folder / M85.target("fvp")["binary"]
    script.write_text("#!/bin/sh\n# FAKE FVP for tests: availability only looks it up.\nexit 0\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    found = available_targets(M85)
    assert found["fvp"].available and not found["qemu"].available
    assert auto_target(found, M85) == "fvp"


def test_a_qemu_deploy_on_corstone320_is_a_usage_error_naming_the_targets(capsys):
    code, out, err = run_cli(
        capsys, "deploy", "--board", "corstone320", "--target", "qemu", "examples/shared_split.py"
    )
    assert code == 2, (out, err)
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: board corstone320 has no qemu target: no QEMU emulates")
    assert line.endswith("its targets: fvp, serial (and host, the reference)")
