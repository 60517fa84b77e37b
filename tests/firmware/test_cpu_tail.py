"""The regression program's CPU parts on QEMU, held bit for bit to ExecuTorch's runtime.

QEMU has no NPU, so the SDK-partitioned regression program is cut at its delegate calls
(`sdk cut`): every CPU segment (quantize, dequantize -> split -> quantize, dequantize -> bmm ->
quantize, ...) runs on the firmware under QEMU with the inputs the host reference fed it, and
must give exactly what ExecuTorch's Python runtime gave.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main
from sdk.targets.host import host_runner
from sdk.targets.qemu import TIMING_SOURCE as QEMU_TIMING
from sdk.targets.run import run_on_target
from sdk.utils.npz import read_arrays
from tests.support.markers import SHARED_EXPORTS

pytestmark = SHARED_EXPORTS

CPU_OPS = {"int16": None, "int8": ["aten.bmm"]}


@pytest.mark.parametrize("quant", ["int16", "int8"])
def test_every_cpu_segment_is_bit_identical_on_qemu(export_case, quant, tmp_path):
    case = export_case("shared_split", quant, True, CPU_OPS[quant])
    runner = host_runner(case.result.program_path)
    runner.run([t.numpy() for t in case.quantized.loaded.example_inputs])
    assert len(runner.segment_runs) >= 3
    for k, seg in enumerate(runner.segment_runs):
        program = tmp_path / f"segment_{k}.pte"
        program.write_bytes(seg.segment.pte)
        result = run_on_target("qemu", "corstone300", program, seg.inputs, 120, tmp_path / f"q{k}")
        assert len(result.outputs) == len(seg.outputs)
        for out, ref in zip(result.outputs, seg.outputs):
            assert out.dtype == ref.dtype and out.shape == ref.shape
            np.testing.assert_array_equal(out, ref, err_msg=f"segment {k}")
        assert result.timing.instructions and result.timing.instructions > 0
    # The tail the bug used to hide in the delegate: split, and bmm, ran on the firmware.
    kinds = {
        runner.program.plan.operators[ins.instr_args.op_index].name
        for seg in runner.segment_runs
        for ins in (runner.instructions[i] for i in seg.segment.step.instructions)
        if hasattr(ins.instr_args, "op_index")
    }
    assert {"aten::split_with_sizes_copy", "aten::bmm"} <= kinds


def test_cli_cut_then_run_on_qemu_with_expect(export_case, tmp_path, capsys, monkeypatch):
    """With relative paths, as scripts/main.sh gives them (the emulator runs in the workdir)."""
    case = export_case("shared_split", "int16", True, None)
    monkeypatch.chdir(tmp_path)
    outdir = Path("cut")
    inputs = case.result.outdir / "example_inputs.npz"
    assert (
        main(["cut", str(case.result.program_path), "--inputs", str(inputs), "-o", str(outdir)])
        == 0
    )
    segments = json.loads((outdir / "segments.json").read_text())
    bmm = next(s for s in segments if "aten::bmm.out" in s["operators"])
    stem = outdir / bmm["program"].removesuffix(".pte")
    code = main(
        [
            "run", "--target", "qemu", f"{stem}.pte",
            "--inputs", f"{stem}_inputs.npz",
            "--expect", f"{stem}_expected.npz",
            "-o", "q.npz",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "bit-identical" in out and f"instructions ({QEMU_TIMING}" in out
    expected = read_arrays(outdir / f"{stem.name}_expected.npz")
    for a, b in zip(read_arrays(tmp_path / "q.npz"), expected):
        np.testing.assert_array_equal(a, b)


def test_expect_mismatch_fails_with_exit_4(export_case, tmp_path, capsys):
    case = export_case("shared_split", "int16", True, None)
    outdir = tmp_path / "cut"
    inputs = case.result.outdir / "example_inputs.npz"
    assert (
        main(["cut", str(case.result.program_path), "--inputs", str(inputs), "-o", str(outdir)])
        == 0
    )
    capsys.readouterr()
    wrong = [a.copy() for a in read_arrays(outdir / "segment_0_expected.npz")]
    wrong[0].flat[0] += 1
    np.savez(tmp_path / "wrong.npz", *wrong)
    code = main(
        [
            "run", "--target", "qemu", str(outdir / "segment_0.pte"),
            "--inputs", str(outdir / "segment_0_inputs.npz"),
            "--expect", str(tmp_path / "wrong.npz"),
            "-o", str(tmp_path / "q.npz"),
        ]
    )  # fmt: skip
    assert code == 4
    assert "output 0: max |diff| 1" in capsys.readouterr().err
