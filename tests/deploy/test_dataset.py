"""`sdk deploy --dataset`: a trained classifier over held-out samples on QEMU; the report's
figures against an independent computation, and bad data sets refused in one line."""

from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from sdk.cli.main import main
from sdk.evaluation.dataset import Dataset, DatasetResult, Thresholds, evaluate, read_dataset

MODEL = Path(__file__).parent / "models" / "blob_classifier.py"


def load_model_module():
    spec = importlib.util.spec_from_file_location("blob_classifier", MODEL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def held_out(tmp_path_factory) -> tuple[Path, np.ndarray, np.ndarray]:
    points, labels = load_model_module().held_out()
    path = tmp_path_factory.mktemp("dataset") / "held_out.npz"
    x = points.numpy()[:, None, :]  # (N, 1, 8): input 0 per sample is [1, 8]
    np.savez(path, arr_0=x, labels=labels.numpy())
    return path, x, labels.numpy()


@pytest.mark.slow
def test_a_classifier_over_a_data_set_reports_what_an_independent_count_finds(
    held_out, tmp_path, monkeypatch
):
    monkeypatch.setenv("SDK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SDK_FVP", str(tmp_path / "no-fvp-here"))
    path, x, labels = held_out
    out = tmp_path / "out"
    code = main([
        "deploy", str(MODEL), "--dataset", str(path), "-o", str(out), "--quiet",
        "--json", str(tmp_path / "report.json"),
    ])  # fmt: skip
    report = json.loads((tmp_path / "report.json").read_text())
    section = report["dataset"]
    assert code == 0 and report["passed"], report["failure"]
    assert section["samples"] == section["measured"] == len(labels) and not section["interrupted"]
    (device,) = np.load(out / "dataset_outputs.npz").values()
    assert device.shape == (len(labels), 1, 4)
    # Independently: the fp32 model in PyTorch, and top-1 counts with plain numpy.
    net = load_model_module().model()
    with torch.no_grad():
        fp32 = net(torch.from_numpy(x.reshape(-1, 8))).numpy()
    (result,) = section["outputs"]
    figures = result["classification"]
    device_top1 = device.reshape(len(labels), -1).argmax(axis=1)
    assert figures["top1"]["device"] == pytest.approx(np.mean(device_top1 == labels) * 100)
    assert figures["top1"]["fp32"] == pytest.approx(np.mean(fp32.argmax(axis=1) == labels) * 100)
    assert figures["agreement"]["device_vs_fp32"] == pytest.approx(
        np.mean(device_top1 == fp32.argmax(axis=1)) * 100
    )
    assert figures["top1"]["fp32"] > 80  # the model did learn: the check is not vacuous
    matrix = np.array(figures["confusion"])
    assert matrix.sum() == len(labels) and np.trace(matrix) == np.sum(device_top1 == labels)
    png = Path(figures["confusion_png"]).read_bytes()
    width, height = struct.unpack(">II", png[16:24])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and width == height == 4 * 16
    assert result["rows"]["device_vs_host"]["identical_samples"] == len(labels)
    rmse = float(np.sqrt(np.mean((device.reshape(fp32.shape).astype(np.float64) - fp32) ** 2)))
    assert result["rows"]["device_vs_fp32"]["rmse"] == pytest.approx(rmse, rel=1e-6)


def test_a_wrong_label_file_or_shape_is_one_line(held_out, tmp_path):
    _, x, labels = held_out
    example = [x[0]]
    cases = {
        "labels_short": ({"arr_0": x, "labels": labels[:-1]}, "one per sample"),
        "labels_float": ({"arr_0": x, "labels": labels.astype(np.float32)}, "integers"),
        "wrong_shape": ({"arr_0": x[:, :, :4]}, "input 0 takes float32 [1, 8]"),
        "two_inputs": ({"arr_0": x, "arr_1": x}, "unknown ['arr_1']"),
        "nan": (
            {"arr_0": np.where(np.arange(x.size).reshape(x.shape) == 17, np.nan, x)},
            "sample 2",
        ),
    }
    for name, (arrays, fragment) in cases.items():
        bad = tmp_path / f"{name}.npz"
        np.savez(bad, **arrays)
        with pytest.raises(Exception) as caught:
            read_dataset(bad, example)
        message = str(caught.value)
        assert fragment in message and "\n" not in message, (name, message)
    with pytest.raises(Exception, match="no such file"):
        read_dataset(tmp_path / "absent.npz", example)
    # Samples stacked on the batch axis are the same data set.
    flat = tmp_path / "flat.npz"
    np.savez(flat, arr_0=x.reshape(len(x), 8), labels=labels)
    assert read_dataset(flat, example).inputs[0].shape == x.shape


def _result(device: np.ndarray, labels: np.ndarray | None, interrupted=False) -> DatasetResult:
    dataset = Dataset(Path("d.npz"), [device], labels)
    return DatasetResult(dataset, [device], len(device), 1.0, interrupted)


def test_the_verdict_fails_on_a_device_that_differs_a_lost_accuracy_or_an_interruption():
    rng = np.random.default_rng(0)
    labels = np.arange(20) % 4
    fp32 = np.eye(4, dtype=np.float32)[labels][:, None, :] * 5 + rng.normal(0, 0.1, (20, 1, 4))
    fp32 = fp32.astype(np.float32)
    refs = {"host": [fp32], "quantized": [fp32], "fp32": [fp32]}
    assert evaluate(_result(fp32, labels), refs, Thresholds())["passed"]
    wrong = fp32.copy()
    wrong[3, 0, 0] += 1.0  # one sample off the host reference
    section = evaluate(_result(wrong, labels), refs, Thresholds())
    assert (
        not section["passed"] and "differs from the host reference on 1 of 20" in section["failure"]
    )
    confused = fp32[np.r_[1:20, 0]]  # every prediction shifted: the device's accuracy falls
    refs_same = {"host": [confused], "quantized": [fp32], "fp32": [fp32]}
    section = evaluate(_result(confused, labels), refs_same, Thresholds())
    assert not section["passed"] and "quantization-quality miss" in section["failure"]
    section = evaluate(_result(fp32, labels, interrupted=True), refs, Thresholds())
    assert not section["passed"] and section["failure"].startswith("interrupted after 20")


def test_the_confusion_matrix_is_labels_by_predictions():
    from sdk.evaluation.dataset import confusion

    assert confusion(np.array([2, 2, 0]), np.array([1, 2, 0]), 3) == [
        [1, 0, 0],
        [0, 0, 1],  # label 1 predicted as 2
        [0, 0, 1],
    ]


def test_labels_no_output_can_hold_or_a_missing_reference_fail_in_one_line():
    out = np.eye(4, dtype=np.float32)[np.arange(8) % 4][:, None, :]
    refs = {"host": [out], "quantized": [out], "fp32": [out]}
    section = evaluate(_result(out, np.arange(8) + 1), refs, Thresholds())  # 1-based: 8 > 4
    assert not section["passed"] and "fit no output" in section["failure"]
    short = {"host": [out], "quantized": [], "fp32": [out[:, :, :2]]}
    section = evaluate(_result(out, None), short, Thresholds())
    assert not section["passed"]
    assert "no matching output of quantized, fp32" in section["failure"]
