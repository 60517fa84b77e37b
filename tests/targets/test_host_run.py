"""`sdk run --target host`: the reference execution, and its refusals."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from sdk.cli.main import main
from sdk.errors import ProgramError, UsageError
from sdk.targets.host import run_host
from sdk.utils.npz import read_arrays
from tests.support.markers import SHARED_EXPORTS

pytestmark = SHARED_EXPORTS


@pytest.fixture(scope="module")
def exported(export_case):
    return export_case("shared_split", "int16", True, None).result


def test_cli_run_host_writes_outputs_in_program_order(exported, tmp_path, capsys):
    out = tmp_path / "out.npz"
    inputs = exported.outdir / "example_inputs.npz"
    code = main(
        [
            "run",
            "--target",
            "host",
            str(exported.program_path),
            "--inputs",
            str(inputs),
            "-o",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    (result,) = read_arrays(out)
    (expected,) = run_host(exported.program_path, read_arrays(inputs))
    np.testing.assert_array_equal(result, expected)
    assert result.dtype == np.float32 and result.shape == (1, 8, 16)


def test_inputs_must_match_the_program(exported):
    x = np.zeros((1, 3, 4, 4), np.float32)
    with pytest.raises(UsageError, match="takes 1 inputs, 2 were given"):
        run_host(exported.program_path, [x, x])
    with pytest.raises(UsageError, match=r"input 0: the program takes Float \[1, 3, 4, 4\]"):
        run_host(exported.program_path, [np.zeros((1, 3, 4, 5), np.float32)])
    with pytest.raises(UsageError, match="got float64"):
        run_host(exported.program_path, [x.astype(np.float64)])


def test_missing_tosa_is_named(exported, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(exported.outdir, copy)
    (copy / "tosa" / "delegate_1.tosa").unlink()
    with pytest.raises(ProgramError, match="no saved TOSA for delegate 1"):
        run_host(copy / "model.pte", [np.zeros((1, 3, 4, 4), np.float32)])


def test_report_of_another_program_is_refused(exported, export_case, tmp_path):
    other = export_case("shared_split", "int8", True, ["aten.bmm"]).result
    copy = tmp_path / "copy"
    shutil.copytree(exported.outdir, copy)
    shutil.copy(other.report_path, copy / "report.json")
    with pytest.raises(ProgramError, match="does not describe this program"):
        run_host(copy / "model.pte", [np.zeros((1, 3, 4, 4), np.float32)])


def test_tosa_dir_without_report(exported, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(exported.outdir, copy)
    (copy / "report.json").unlink()
    x = [np.random.default_rng(0).standard_normal((1, 3, 4, 4)).astype(np.float32)]
    np.testing.assert_array_equal(
        run_host(copy / "model.pte", x)[0], run_host(exported.program_path, x)[0]
    )


def test_cpu_only_program_equals_executorch_runtime(tmp_path):
    """No delegates: the host run is ExecuTorch's runtime on the whole program."""
    import executorch.kernels.quantized  # noqa: F401
    from executorch.exir import to_edge_transform_and_lower
    from executorch.runtime import Runtime

    class Tail(torch.nn.Module):
        def forward(self, q):
            x = torch.ops.quantized_decomposed.dequantize_per_tensor(
                q, 0.01, 3, -32767, 32767, torch.int16
            )
            a, b = x.split([3, 5], dim=1)
            return torch.bmm(a.transpose(1, 2), a), b

    q = torch.randint(-32767, 32767, (2, 8, 4), dtype=torch.int16)
    ep = torch.export.export(Tail(), (q,))
    program = tmp_path / "tail.pte"
    program.write_bytes(to_edge_transform_and_lower(ep).to_executorch().buffer)
    ours = run_host(program, [q.numpy()])
    theirs = Runtime.get().load_program(program).load_method("forward").execute([q])
    assert len(ours) == len(theirs) == 2
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b.numpy())


def test_npz_with_wrong_names_is_refused(exported, tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros((1, 3, 4, 4), np.float32))
    code = main(
        ["run", str(exported.program_path), "--inputs", str(bad), "-o", str(tmp_path / "o.npz")]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "arr_0" in err and "['x']" in err
    assert not (tmp_path / "o.npz").exists()


def test_inspect_json_fields_of_a_fixed_program(exported, capsys):
    assert main(["inspect", "--json", str(exported.program_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["schema"] == "sdk.inspect/1"
    assert report["inputs"][0]["dtype"] == "Float"
    assert report["memory"]["planned_bytes"] > 0
    ops = {o["op"] for o in report["cpu_operators"]}
    assert "aten::bmm.out" in ops and "aten::split_with_sizes_copy.out" in ops
    assert all(d["vela"]["macs_per_cycle"] == 128 for d in report["delegates"])


def test_each_cpu_segment_is_cut_once_per_runner(exported, monkeypatch):
    """The host reference runs on every deploy: its CPU segments are cut (a fresh copy of the
    program each) once per runner, and reused runs give the same outputs on new inputs."""
    import sdk.program.cut as cut
    import sdk.targets.host as host

    cuts = []
    real_cut = cut.cut_cpu_segment

    def counting_cut(program, step):
        cuts.append(step.instructions[0])
        return real_cut(program, step)

    monkeypatch.setattr(cut, "cut_cpu_segment", counting_cut)  # host imports it when it cuts
    runner = host.host_runner(exported.program_path)
    cpu_steps = [s for s in runner.steps if s.kind == "cpu"]
    inputs = read_arrays(exported.outdir / "example_inputs.npz")
    first = runner.run(inputs)
    again = runner.run(inputs)
    other = runner.run([(a * 0.5).astype(a.dtype) for a in inputs])
    assert sorted(cuts) == sorted(s.instructions[0] for s in cpu_steps)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    # A fresh runner on the new inputs agrees: nothing stale is carried between runs.
    for a, b in zip(
        other, run_host(exported.program_path, [(x * 0.5).astype(x.dtype) for x in inputs])
    ):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(first, other))


def test_control_flow_takes_the_branch_its_condition_picks(export_case):
    """A torch.cond program (a JumpFalseCall after a delegate): the host reference follows the
    jumps as ExecuTorch's runtime does, each branch run as its own CPU step."""
    from pathlib import Path

    from sdk.targets.host import host_runner
    from tests.support.quantref import assert_matches_quantized_model

    models = Path(__file__).parents[1] / "export" / "models" / "unlowerable_ops.py"
    case = export_case(f"{models}:CondOnSum", "int8", True, None)
    runner = host_runner(case.result.program_path)
    assert [s.kind for s in runner.steps].count("jump") == 2
    x = case.quantized.loaded.example_inputs[0].numpy()
    ups, downs = runner.run([x])[0], runner.run([-x])[0]
    assert not np.allclose(ups, downs)
    assert_matches_quantized_model(case, [ups])
    np.testing.assert_allclose(ups, x * 2.0, atol=0.05)
    np.testing.assert_allclose(downs, -x - 1.0, atol=0.05)


@pytest.mark.slow
def test_control_flow_on_qemu_equals_the_host_reference(export_case, every_kernel_elf):
    """The firmware's runtime jumps as the host reference does, on both branches."""
    from pathlib import Path

    from sdk.targets.run import run_on_target

    models = Path(__file__).parents[1] / "export" / "models" / "unlowerable_ops.py"
    case = export_case(f"{models}:CondOnSum", "int8", True, None)
    x = case.quantized.loaded.example_inputs[0].numpy()
    for inputs in ([x], [-x]):
        run = run_on_target(
            "qemu", "corstone300", case.result.program_path, inputs, firmware=every_kernel_elf
        )
        [expected] = run_host(case.result.program_path, inputs)
        np.testing.assert_array_equal(run.outputs[0], expected)


@pytest.mark.slow
def test_delegates_sharing_a_command_stream_run_each_with_its_weights(
    export_case, every_kernel_elf
):
    """Two NPU delegates with one command stream: the virtual U55 runs the one whose weights
    region 0 holds (it took the first and called the firmware's right pointer a bus fault)."""
    from pathlib import Path

    from sdk.program.pte import load_program
    from sdk.targets.run import run_on_target

    models = Path(__file__).parents[1] / "export" / "models" / "unlowerable_ops.py"
    case = export_case(f"{models}:TwoCondsOnSums", "int8", True, None)
    delegates = load_program(case.result.program_path).program.backend_delegate_data
    assert len(delegates) >= 2
    x = case.quantized.loaded.example_inputs[0].numpy()
    run = run_on_target(
        "qemu", "corstone300", case.result.program_path, [x], firmware=every_kernel_elf
    )
    np.testing.assert_array_equal(run.outputs[0], run_host(case.result.program_path, [x])[0])
