"""`sdk run --target host --npu-executor command-stream`: the host reference with Vela's
command stream executed instead of the saved TOSA; the same outputs, and no TOSA needed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main
from sdk.errors import ProgramError
from sdk.reference.command_stream import CommandStreamExecutor
from sdk.targets.host import host_runner, run_host
from sdk.utils.npz import read_arrays, write_arrays
from tests.support.npu_cases import MODELS
from tests.support.quantref import assert_program_matches

ZOO = Path(__file__).parents[1] / "export" / "models"


@pytest.fixture(scope="module")
def exported(export_case):
    return export_case(str(MODELS / "eltwise.py"), "int8", True, None).result


def _inputs(exported) -> list[np.ndarray]:
    return read_arrays(exported.outdir / "example_inputs.npz")


def test_cli_host_run_with_the_command_stream_executor(exported, tmp_path, capsys):
    inputs = tmp_path / "in.npz"
    write_arrays(inputs, _inputs(exported))
    outs = {}
    for kind in ("tosa", "command-stream"):
        out = tmp_path / f"{kind}.npz"
        argv = ["run", "--target", "host", str(exported.program_path), "--inputs", str(inputs)]
        code = main([*argv, "-o", str(out), "--npu-executor", kind])
        assert code == 0, capsys.readouterr().err
        outs[kind] = read_arrays(out)
    for a, b in zip(outs["tosa"], outs["command-stream"], strict=True):
        np.testing.assert_array_equal(a, b)
    trace = tmp_path / "trace.json"
    argv += ["-o", str(tmp_path / "again.npz"), "--npu-executor", "command-stream"]
    assert main([*argv, "--npu-trace", str(trace)]) == 0, capsys.readouterr().err
    (call,) = json.loads(trace.read_text())["calls"]
    kinds = {(o["kind"], o["mode"]) for o in call["operations"]}
    assert {("ELEMENTWISE", "ADD"), ("ELEMENTWISE", "MUL")} <= kinds
    assert all(o["seconds"] >= 0 for o in call["operations"])


def test_a_program_without_saved_tosa_runs_on_the_command_stream(exported, tmp_path):
    alone = tmp_path / "model.pte"
    shutil.copy(exported.program_path, alone)  # no tosa/, no report.json beside it
    with pytest.raises(ProgramError, match="no saved TOSA"):
        run_host(alone, _inputs(exported))
    runner = host_runner(alone, npu_executor="command-stream")
    assert isinstance(runner.executor, CommandStreamExecutor)
    (got,) = runner.run(_inputs(exported))
    (want,) = run_host(exported.program_path, _inputs(exported))
    np.testing.assert_array_equal(got, want)
    assert runner.executor.trace, "the executor keeps a per-operation trace"
    assert all(t.seconds >= 0 for t in runner.executor.trace)


def test_an_unknown_executor_is_a_usage_error(exported, tmp_path, capsys):
    inputs = tmp_path / "in.npz"
    write_arrays(inputs, _inputs(exported))
    argv = ["run", str(exported.program_path), "--inputs", str(inputs), "-o", str(tmp_path / "o")]
    with pytest.raises(SystemExit):
        main([*argv, "--npu-executor", "fvp"])
    assert "invalid choice" in capsys.readouterr().err


# What stock ExecuTorch lowers with a clean INT boundary: a small INT16 network and the
# MobileNetV2-style stage of the zoo at INT8.
STOCK_CASES = {
    "conv_act-int16": (str(MODELS / "conv_act.py"), "int16"),
    "mobilenet_v2_block-int8": (str(ZOO / "mobilenet_v2_block.py"), "int8"),
}


def _run_alone(program, quantized, capsys, *options: str) -> tuple[int, str]:
    """`sdk run --target host` on a .pte alone in its folder; (exit code, stderr)."""
    inputs = program.parent / "in.npz"
    write_arrays(inputs, [t.numpy() for t in quantized.loaded.example_inputs])
    argv = ["run", "--target", "host", str(program), "--inputs", str(inputs)]
    code = main([*argv, "-o", str(program.parent / "out.npz"), *options])
    return code, capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("case", STOCK_CASES)
def test_a_stock_executorch_program_runs_on_the_command_stream(stock_program, case, capsys):
    """A .pte lowered by ExecuTorch's EthosUPartitioner alone, with no saved TOSA: it passes
    the audit, and the command-stream executor gives the quantized PyTorch model's results."""
    program, quantized = stock_program(*STOCK_CASES[case])
    assert not (program.parent / "tosa").exists()
    assert main(["inspect", str(program)]) == 0, capsys.readouterr().err
    assert "boundary audit: ok" in capsys.readouterr().out
    code, err = _run_alone(program, quantized, capsys, "--npu-executor", "command-stream")
    assert code == 0, err
    assert_program_matches(quantized, program, read_arrays(program.parent / "out.npz"))
    code, err = _run_alone(program, quantized, capsys)
    assert code == 1 and "no saved TOSA" in err


@pytest.mark.slow
def test_a_stock_program_vela_miscompiled_is_refused_not_run(stock_program, capsys):
    """The YOLO example at INT8, stock: its bmm's first operand is a slice, which Vela 5.1.0
    compiles into outputs that overlap themselves. `sdk inspect` flags it (exit 3) and the
    command-stream executor refuses it, naming the operation: no wrong result is returned."""
    program, quantized = stock_program("yolo_attention", "int8")
    assert main(["inspect", str(program)]) == 3
    assert "overlaps itself" in capsys.readouterr().err
    code, err = _run_alone(program, quantized, capsys, "--npu-executor", "command-stream")
    assert code == 1 and "OFM overlaps itself" in err and "--cpu-op aten.bmm" in err
    assert not (program.parent / "out.npz").exists()
