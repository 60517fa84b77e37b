"""The pytest plugin itself, run as users run it (a pytest subprocess on a bench file)."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sdk.targets.qemu import TIMING_SOURCE as QEMU_TIMING

EXAMPLE = Path(__file__).with_name("test_dut_example.py")


def run_pytest(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, Path]:
    junit = tmp_path / "junit.xml"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE),
         f"--junitxml={junit}", "-rs", *args],
        capture_output=True, text=True, timeout=900, cwd=tmp_path,
    )  # fmt: skip
    return result, junit


def test_serial_without_a_port_skips_with_the_reason(tmp_path):
    result, _ = run_pytest(tmp_path, "--target", "serial")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 skipped" in result.stdout and "passed" not in result.stdout
    assert "cannot be brought up here" in result.stdout and "needs --port URL" in result.stdout


def test_serial_with_no_board_at_the_port_skips_with_the_reason(tmp_path):
    result, _ = run_pytest(tmp_path, "--target", "serial", "--port", "socket://127.0.0.1:9")
    assert "3 skipped" in result.stdout and "passed" not in result.stdout, result.stdout
    assert "cannot be brought up here" in result.stdout
    assert "open port socket://127.0.0.1:9" in result.stdout


def test_an_unknown_board_is_a_usage_error_not_a_pass(tmp_path):
    result, _ = run_pytest(tmp_path, "--board", "nosuchboard")
    assert result.returncode != 0 and "passed" not in result.stdout
    assert "unknown board 'nosuchboard'" in result.stdout + result.stderr


@pytest.mark.slow
def test_qemu_runs_record_target_and_timing_in_junit(tmp_path):
    result, junit = run_pytest(tmp_path, "--target", "qemu")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "3 passed" in result.stdout
    cases = ET.parse(junit).getroot().iter("testcase")
    for case in cases:
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props["sdk_target"] == "qemu" and props["sdk_board"] == "corstone300"
        assert props["sdk_timing_source"] == QEMU_TIMING
        assert int(props["sdk_instructions"]) > 0
