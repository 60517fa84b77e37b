"""`sdk estimate`: its figures are the cycle model's and Vela's for the same compile, and bad
input is one `error:` line with exit 2."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main
from sdk.ethosu.cycles import memory_system, model_stream
from sdk.ethosu.vela_estimate import VELA
from tests.cli.test_bad_input import assert_one_error_line
from tests.support.tflite_model import conv_chain_int8

# int8 1x16x16x16 -> two 3x3 CONV_2Ds (32 channels), seeded weights: 16 KiB, built here
NETWORK = conv_chain_int8()
STOCK = [
    "--accelerator-config=ethos-u55-128", "--config=Arm/vela.ini",
    "--system-config=Ethos_U55_High_End_Embedded", "--memory-mode=Shared_Sram",
]  # fmt: skip


def estimate(capsys, *argv) -> tuple[int, dict | str, str]:
    code = main(["estimate", *(str(a) for a in argv)])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if "--json" in argv and code == 0 else out), err


@pytest.fixture
def network(tmp_path) -> Path:
    path = tmp_path / "conv_chain_int8.tflite"
    path.write_bytes(NETWORK)
    return path


def vela(network: Path, outdir: Path, *flags: str) -> dict[str, str]:
    """Vela run here, apart from the command: its summary row."""
    result = subprocess.run(
        [str(VELA), str(network), *STOCK, *flags, f"--output-dir={outdir}"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    with next(outdir.glob("*_summary_*.csv")).open() as f:
        return next(csv.DictReader(f))


@pytest.mark.slow
def test_a_tflite_is_timed_as_vela_compiled_it(network, tmp_path, capsys) -> None:
    code, data, _ = estimate(capsys, network, "--json")
    assert code == 0
    summary = vela(network, tmp_path / "raw", "--output-format=raw")
    with np.load(tmp_path / "raw" / "conv_chain_int8_vela.npz") as arrays:
        cmd_data = arrays["cmd_data"].item()
    timing = model_stream(cmd_data, "ethos-u55-128", memory_system())
    assert data["npu_cycles_modelled"] == timing.cycles
    assert data["vela_estimate_cycles"] == int(float(summary["cycles_total"]))
    (delegate,) = data["delegates"]
    assert (delegate["system_config"], delegate["memory_mode"]) == (
        "Ethos_U55_High_End_Embedded", "Shared_Sram",
    )  # fmt: skip
    ops = delegate["operations"]
    assert sum(op["npu_cycles_modelled"] for op in ops) == timing.cycles
    assert sum(op["commands"] for op in ops) == len(timing.ops)
    assert all(op["vela_estimate_cycles"] is not None for op in ops)
    assert data["memory_bound_cycles"] == timing.memory_bound_cycles
    assert data["latency_ms"] == pytest.approx(1e3 * timing.cycles / data["npu_clock_hz"], 1e-3)

    # the same network as Vela's own .tflite output: its ethos-u operator's stream is read
    vela(network, tmp_path / "tfl")
    compiled = tmp_path / "tfl" / "conv_chain_int8_vela.tflite"
    code, again, _ = estimate(capsys, compiled, "--json")
    assert code == 0
    assert again["kind"] == "tflite (compiled by Vela)"
    assert again["npu_cycles_modelled"] == timing.cycles
    assert again["vela_estimate_cycles"] is None

    # Vela flags reach the compile: a smaller arena cache costs cycles
    code, size, _ = estimate(capsys, network, "--json", "--vela-arg=--arena-cache-size=16384")
    assert code == 0
    assert size["delegates"][0]["vela_flags"][-2] == "--arena-cache-size=16384"
    assert size["npu_cycles_modelled"] != timing.cycles


@pytest.mark.slow
def test_a_pte_is_timed_per_delegate_beside_vela(export_case, tmp_path, capsys) -> None:
    from sdk.ethosu.cycles import program_timings
    from sdk.ethosu.vela_estimate import run_vela
    from sdk.program.audit import read_delegates
    from sdk.program.pte import load_program
    from tests.ethosu.conftest import MODELS

    case = export_case(str(MODELS / "conv.py"), "int8", True, None)
    program_path = case.result.program_path
    code, data, _ = estimate(capsys, program_path, "--json")
    assert code == 0
    program = load_program(program_path)
    timings = program_timings(program)
    assert data["npu_cycles_modelled"] == sum(t.cycles for t in timings.values())
    info = read_delegates(program)[0]
    tosa = case.result.outdir / "tosa" / "delegate_0.tosa"
    _, summary = run_vela(tosa, info.compile_specs["compile_flags"].split(), tmp_path / "v")
    assert data["vela_estimate_cycles"] == int(float(summary["cycles_total"]))
    assert [op["operator"] for op in data["delegates"][0]["operations"]].count("Conv2D") == 1

    # the program alone: timed, Vela's estimate unknown (and said so)
    alone = tmp_path / "alone" / "model.pte"
    alone.parent.mkdir()
    shutil.copy(program_path, alone)
    code, data, _ = estimate(capsys, alone, "--json")
    assert code == 0
    assert data["npu_cycles_modelled"] == sum(t.cycles for t in timings.values())
    assert data["vela_estimate_cycles"] is None
    assert "no export report.json" in data["delegates"][0]["vela_estimate_source"]

    code, text, _ = estimate(capsys, program_path)
    assert code == 0
    assert f"{data['npu_cycles_modelled']:,} modelled" in text

    # the model file itself: exported here the same way, so the same stream and figures
    code, from_py, _ = estimate(capsys, MODELS / "conv.py", "--json")
    assert code == 0
    assert from_py["kind"] == "py"
    assert from_py["npu_cycles_modelled"] == data["npu_cycles_modelled"]
    assert from_py["vela_estimate_cycles"] == int(float(summary["cycles_total"]))


def test_a_missing_file_is_a_usage_error(tmp_path, capsys) -> None:
    code, _, err = estimate(capsys, tmp_path / "nope.tflite")
    assert code == 2
    assert_one_error_line(err, "nope.tflite", "no such file")


def test_an_unknown_suffix_is_a_usage_error(tmp_path, capsys) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"onnx")
    code, _, err = estimate(capsys, model)
    assert code == 2
    assert_one_error_line(err, "unknown model suffix '.onnx'", ".tflite, a .pte or a model .py")


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("junk.tflite", b"\x00" * 64, "no 'TFL3' identifier"),
        ("cut.tflite", NETWORK[: len(NETWORK) // 2], "not a readable TensorFlow Lite flatbuffer"),
        ("junk.pte", b"\x00" * 64, "not an ExecuTorch program"),
    ],
    ids=["no-identifier", "truncated", "not-a-program"],
)
def test_a_corrupt_file_is_a_usage_error(tmp_path, capsys, name, content, fragment) -> None:
    model = tmp_path / name
    model.write_bytes(content)
    code, _, err = estimate(capsys, model)
    assert code == 2
    assert_one_error_line(err, name, fragment)


def test_a_tflite_vela_refuses_is_a_usage_error(network, capsys) -> None:
    code, _, err = estimate(capsys, network, "--vela-arg=--no-such-vela-flag")
    assert code == 2
    assert_one_error_line(err, "Vela cannot compile it")


def test_compile_flags_on_a_pte_are_refused(tmp_path, capsys) -> None:
    program = tmp_path / "model.pte"
    program.write_bytes(b"\x00" * 64)
    code, _, err = estimate(capsys, program, "--npu", "ethos-u55-64")
    assert code == 2
    assert_one_error_line(err, "--npu", "compiled already")


def test_an_npu_the_board_lacks_is_a_usage_error(network, capsys) -> None:
    code, _, err = estimate(capsys, network, "--npu", "ethos-u85-256")
    assert code == 2
    assert_one_error_line(err, "--npu ethos-u85-256", "board corstone300 has", "ethos-u55-128")


def test_a_u85_network_is_timed(network, capsys) -> None:
    """Corstone-320: compiled for ethos-u85-128 with ExecuTorch's U85 defaults, timed by the
    U85 model beside Vela's estimate."""
    code, data, _ = estimate(capsys, network, "--board", "corstone320", "--json")
    assert code == 0 and isinstance(data, dict)
    (delegate,) = data["delegates"]
    assert "--accelerator-config=ethos-u85-128" in delegate["vela_flags"]
    assert "--system-config=Ethos_U85_SYS_DRAM_Mid" in delegate["vela_flags"]
    assert 0.5 < data["ratio_to_vela"] < 2.0 and data["untimed"] == []
