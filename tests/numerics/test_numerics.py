"""`sdk numerics`: the stages of each output, the delegate outputs against the quantized
model, and the collapsed parts of a concatenated detector output (named, with the fix)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sdk.evaluation.accuracy import THRESHOLDS

DETECTOR = Path(__file__).with_name("detector.py")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    """analysed(spec) -> (loaded, quantized, result, NumericsReport), INT8, once per spec."""
    from sdk.ethosu.config import NpuConfig, QuantMode
    from sdk.evaluation.numerics import analyse
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import lower, quantize

    done = {}

    def get(spec: str, cpu_ops: tuple[str, ...] = ()):
        if (spec, cpu_ops) not in done:
            loaded = load_model(spec)
            quantized = quantize(loaded, NpuConfig.U55_128, QuantMode.INT8)
            result = lower(quantized, tmp_path_factory.mktemp("numerics"), cpu_ops=list(cpu_ops))
            inputs = [t.numpy() for t in loaded.example_inputs]
            done[(spec, cpu_ops)] = (
                loaded,
                quantized,
                result,
                analyse(loaded, quantized, result.program_path, inputs),
            )
        return done[(spec, cpu_ops)]

    return get


def test_the_collapsed_scores_are_named_with_the_fix(analysed):
    *_, report = analysed(str(DETECTOR))
    (collapse,) = report.collapses
    assert collapse.output == 0 and collapse.dim == 1
    parts = collapse.parts
    assert [(p["start"], p["stop"]) for p in parts] == [(0, 4), (4, 12)]
    assert collapse.collapsed == [1]  # the class scores
    assert parts[0]["levels"] >= 64 and parts[1]["levels"] < 16
    assert parts[1]["snr_db"] < THRESHOLDS["int8"]["fp32"].min_snr_db
    message = collapse.describe()
    assert "[4:12]" in message and "separate outputs" in message and "normalise" in message
    assert "--cpu-op aten.cat" not in message  # it does not help: see the test below
    assert report.first_loss.startswith("output 0: at quantization")


def test_separate_outputs_lift_the_scores_above_the_floor(analysed):
    *_, report = analysed(f"{DETECTOR}:SeparateOutputs")
    assert report.collapses == []
    _boxes, scores = report.outputs
    floor = THRESHOLDS["int8"]["fp32"]
    host = {s.stage: s for s in scores.stages}["host"]
    assert host.vs_fp32.snr_db is not None and host.vs_fp32.snr_db >= floor.min_snr_db
    # and the same scores inside the concatenation were below it
    *_, concat = analysed(str(DETECTOR))
    assert concat.collapses[0].parts[1]["snr_db"] < host.vs_fp32.snr_db


def test_normalised_coordinates_lift_the_scores_above_the_floor(analysed):
    """The second fix named: the boxes divided by the image size before the concat."""
    from sdk.evaluation.accuracy import measure
    from sdk.targets.host import run_host

    loaded, _, result, report = analysed(f"{DETECTOR}:NormalisedBoxes")
    assert report.collapses == []
    inputs = [t.numpy() for t in loaded.example_inputs]
    (host,) = run_host(result.program_path, inputs)
    fp32 = loaded.module(*loaded.example_inputs).detach().numpy()
    scores = measure(host[:, 4:], fp32[:, 4:])
    assert scores.snr_db is not None
    assert scores.snr_db >= THRESHOLDS["int8"]["fp32"].min_snr_db


def test_the_concat_on_the_cpu_does_not_save_the_scores(analysed):
    """Why `--cpu-op aten.cat` is not offered as a fix: the quantizer gives the concat's
    inputs and output one scale wherever it runs, so the scores still collapse."""
    from sdk.evaluation.accuracy import measure
    from sdk.targets.host import run_host

    loaded, _, result, report = analysed(str(DETECTOR), ("aten.cat",))
    assert "aten.cat.default" in [n["target"] for n in result.report["cpu_nodes"]]
    (collapse,) = report.collapses
    assert collapse.collapsed == [1]
    (host,) = run_host(result.program_path, [t.numpy() for t in loaded.example_inputs])
    fp32 = loaded.module(*loaded.example_inputs).detach().numpy()
    scores = measure(host[:, 4:], fp32[:, 4:])
    assert scores.snr_db is not None and scores.snr_db < 1.0


def test_the_export_report_carries_the_numerics_it_has(analysed):
    """report.json's `numerics`: the quantized model against fp32 per output and the
    collapse, the same figures `sdk numerics` gives for those stages."""
    _, _, result, report = analysed(str(DETECTOR))
    data = result.report["numerics"]
    assert data["stages"] == ["fp32", "quantized"]
    ((quantized_stage, full),) = [
        ({s["stage"]: s for s in o["stages"]}["quantized"], o) for o in data["outputs"]
    ]
    expected = {s.stage: s for s in report.outputs[0].stages}["quantized"]
    assert quantized_stage["vs_fp32"] == expected.vs_fp32.to_json()
    assert full["scale"] == report.outputs[0].scale
    (collapse,) = data["collapses"]
    assert collapse["collapsed"] == [1] and "[4:12]" in collapse["message"]
    _, _, separate, _ = analysed(f"{DETECTOR}:SeparateOutputs")
    assert separate.report["numerics"]["collapses"] == []
    on_disk = json.loads(result.report_path.read_text())
    assert on_disk["numerics"]["collapses"][0]["collapsed"] == [1]


def test_delegate_outputs_are_matched_to_the_quantized_model(analysed):
    *_, report = analysed(str(DETECTOR))
    assert report.boundaries
    for b in report.boundaries:
        assert b.node is not None and b.node.startswith("quantize_per_tensor")
        assert b.max_lsb == 0  # INT8: the lowered program equals the quantized model


def test_a_wrong_target_output_is_the_first_loss(analysed):
    """Feed the stages a wrong answer: a target output off by a sign is named as the loss."""
    from sdk.evaluation.numerics import analyse

    loaded, quantized, result, _ = analysed(f"{DETECTOR}:SeparateOutputs")
    inputs = [t.numpy() for t in loaded.example_inputs]
    good = analyse(loaded, quantized, result.program_path, inputs, target_outputs=None)
    assert all(o.first_loss is None for o in good.outputs)
    from sdk.targets.host import run_host

    outputs = run_host(result.program_path, inputs)
    wrong = [outputs[0], -outputs[1]]
    bad = analyse(loaded, quantized, result.program_path, inputs, target_outputs=wrong)
    assert bad.outputs[0].first_loss is None and bad.outputs[1].first_loss == "target"
    target = {s.stage: s for s in bad.outputs[1].stages}["target"]
    assert target.lsb_vs_previous is not None and target.lsb_vs_previous[0] > 1


def test_a_perturbed_delegate_output_shows_its_lsb_error():
    from sdk.evaluation.numerics import boundary_numerics

    model = {"quantize_per_tensor_3": np.arange(-8, 8, dtype=np.int8).reshape(4, 4)}
    out = model["quantize_per_tensor_3"].copy()
    out[0, 0] += 3
    (b,) = boundary_numerics([(2, [out])], model)
    assert (b.delegate, b.node, b.max_lsb) == (2, "quantize_per_tensor_3", 3.0)
    assert b.differing == pytest.approx(1 / 16)


def test_cli_json(tmp_path, capsys):
    from sdk.cli.main import main

    code = main(["numerics", str(DETECTOR), "--json", str(tmp_path / "n.json")])
    out = capsys.readouterr().out
    assert code == 0 and "COLLAPSE: output 0" in out
    data = json.loads((tmp_path / "n.json").read_text())
    assert data["schema"] == "sdk.evaluation.numerics/1" and data["collapses"][0]["collapsed"] == [
        1
    ]
