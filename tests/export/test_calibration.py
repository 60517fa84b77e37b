"""`--calibration` takes what `--dataset` takes (a .npz, a folder of PNG images): the report
says how many samples calibrated the model and each activation observer's range, a different
set of samples is a different program cache key, and a folder the model cannot take is one
`error:` line with exit code 2."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main
from sdk.evaluation.png import PngError, read_png, write_png

IMAGE_MODEL = """
import torch

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.act = torch.nn.ReLU()

    def forward(self, x):
        return self.act(self.conv(x))

def model():
    torch.manual_seed(0)
    return Tiny()

def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(1, 3, 8, 8),)
"""


@pytest.fixture
def image_model(tmp_path: Path) -> Path:
    path = tmp_path / "model" / "tiny.py"
    path.parent.mkdir()
    path.write_text(IMAGE_MODEL)
    return path


def _images(folder: Path, count: int, size: tuple[int, int] = (8, 8), channels: int = 3):
    """`count` seeded RGB images in FOLDER, pixels 10..250; returns them (N, H, W, C)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    images = rng.integers(10, 251, size=(count, *size, channels), dtype=np.uint8)
    images[0, 0, 0, 0], images[-1, -1, -1, -1] = 10, 250  # the range's ends, exactly
    for i, image in enumerate(images):
        write_png(folder / f"img_{i}.png", image)
    return images


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_folder_of_images_calibrates_the_model(image_model, tmp_path, capsys):
    """The acceptance test: three images instead of the example input change the report's
    calibration count and ranges; the input's range is the images' pixels / 255."""
    from sdk.export.pipeline import export_model

    code, out, _ = _cli(capsys, "export", image_model, "-o", tmp_path / "default", "--quiet")
    assert code == 0 and "calibration: 1 sample(s) from example inputs" in out
    default = json.loads((tmp_path / "default" / "report.json").read_text())
    default = default["quantization"]["calibration"]

    images = _images(tmp_path / "calib", 3)
    said: list[str] = []
    result = export_model(
        str(image_model), tmp_path / "folder", calibration=tmp_path / "calib", progress=said.append
    )
    calibrated = result.report["quantization"]["calibration"]
    assert said == [
        "calibration 1/3 samples",
        "calibration 2/3 samples",
        "calibrated on 3 sample(s)",
    ]
    assert (default["samples"], calibrated["samples"]) == (1, 3)
    assert calibrated["source"] == str(tmp_path / "calib")
    ranges = {r["node"]: r for r in calibrated["ranges"]}
    assert ranges["x"]["min"] == pytest.approx(10 / 255, rel=1e-5)
    assert ranges["x"]["max"] == pytest.approx(250 / 255, rel=1e-5)
    assert float(images.min()) == 10 and float(images.max()) == 250
    before = {r["node"]: r for r in default["ranges"]}
    assert before.keys() == ranges.keys() == {"x", "relu"}  # conv + relu: one quantized output
    assert (ranges["x"]["module"], ranges["relu"]["module"]) == (None, "act")
    for node in ranges:  # every observer saw other data than the example input
        assert (ranges[node]["min"], ranges[node]["max"]) != (
            before[node]["min"],
            before[node]["max"],
        ), node
    assert before["x"]["min"] < 0  # the example input is randn: the images are not


def _bad_folder(kind: str, folder: Path) -> Path:
    """A --calibration argument the tiny model cannot take, of the given kind."""
    if kind == "missing":
        return folder
    folder.mkdir()
    if kind == "wrong-size":
        _images(folder, 2, size=(6, 8))
    elif kind == "gray-for-rgb":
        _images(folder, 1, channels=1)
    elif kind == "jpeg":
        (folder / "a.jpg").write_bytes(b"\xff\xd8\xff")
    elif kind == "not-png":
        (folder / "a.png").write_bytes(b"GIF89a")
    return folder


@pytest.mark.parametrize(
    ("kind", "fragment"),
    [
        ("missing", "no such file or folder"),
        ("empty", "no images in the folder"),
        ("wrong-size", "img_0.png is 8x6"),
        ("gray-for-rgb", "with 1 channel(s)"),
        ("jpeg", "only PNG"),
        ("not-png", "not a PNG"),
    ],
)
def test_a_folder_the_model_cannot_take_is_a_usage_error(
    image_model, tmp_path, capsys, kind, fragment
):
    folder = _bad_folder(kind, tmp_path / "calib")
    outdir = tmp_path / "out"
    code, _, err = _cli(capsys, "export", image_model, "-o", outdir, "--calibration", folder)
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2, err
    assert len(lines) == 1 and "--calibration" in lines[0] and fragment in lines[0], err
    assert not outdir.exists()


def test_an_integer_input_takes_the_pixels_as_they_are(tmp_path):
    """Channels first, rows top to bottom; no scaling for an integer input, and none that
    cannot hold the pixels."""
    from sdk.errors import UsageError
    from sdk.evaluation.dataset import read_dataset

    images = _images(tmp_path / "calib", 2)
    data = read_dataset(tmp_path / "calib", [np.zeros((1, 3, 8, 8), np.uint8)], "--calibration")
    assert data.size == 2 and np.array_equal(data.inputs[0][:, 0], np.moveaxis(images, 3, 1))
    with pytest.raises(UsageError, match=r"uint8 pixels, which input 0 \(int8\) cannot hold"):
        read_dataset(tmp_path / "calib", [np.zeros((1, 3, 8, 8), np.int8)], "--calibration")


def test_deploy_refuses_a_missing_calibration_before_it_exports(image_model, tmp_path, capsys):
    outdir = tmp_path / "out"
    argv = ["deploy", image_model, "--target", "qemu", "-o", outdir, "--quiet"]
    code, _, err = _cli(capsys, *argv, "--calibration", tmp_path / "absent")
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1, err
    assert "--calibration" in lines[0] and "no such file or folder" in lines[0]
    assert not (outdir / "program").exists()  # refused before the export


def test_the_program_key_follows_the_calibration_content(image_model, tmp_path):
    from sdk.deploy.keys import program_key_parts
    from sdk.export.model_loader import ModelSpec

    spec = ModelSpec.parse(str(image_model))

    def key(calibration: Path | None) -> str:
        parts = program_key_parts(spec, None, "ethos-u55-128", "int8", [], calibration=calibration)
        return parts["calibration"]

    _images(tmp_path / "a", 2)
    _images(tmp_path / "b", 2)  # the same images elsewhere: the same samples
    assert key(tmp_path / "a") == key(tmp_path / "b") != key(None)
    write_png(tmp_path / "b" / "img_1.png", np.zeros((8, 8, 3), np.uint8))
    assert key(tmp_path / "a") != key(tmp_path / "b")
    before = key(tmp_path / "a")
    (tmp_path / "a" / "notes.txt").write_text("not an image: not a sample")
    assert key(tmp_path / "a") == before
    npz = tmp_path / "cal.npz"
    np.savez(npz, np.zeros((2, 1, 3, 8, 8), np.float32))
    assert key(npz) not in (key(None), key(tmp_path / "a"))


def _filtered_png(image: np.ndarray, filters: list[int]) -> bytes:
    """An 8-bit RGB PNG whose row y is written with PNG filter filters[y] (the encoder side
    of the spec's filters, to check the decoder's)."""
    height, width, channels = image.shape
    data = image.reshape(height, width * channels).astype(np.int64)
    rows = []
    for y, kind in enumerate(filters):
        line, up = data[y], data[y - 1] if y else np.zeros_like(data[0])
        left = np.concatenate([np.zeros(channels, np.int64), line[:-channels]])
        upper_left = np.concatenate([np.zeros(channels, np.int64), up[:-channels]])
        if kind == 4:
            p = left + up - upper_left
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - upper_left)
            predicted = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, up, upper_left))
        else:
            predicted = [0 * line, left, up, (left + up) // 2][kind]
        rows.append(bytes([kind]) + ((line - predicted) % 256).astype(np.uint8).tobytes())

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows)))
        + chunk(b"IEND", b"")
    )


def test_the_png_reader_undoes_every_filter(tmp_path):
    image = np.random.default_rng(3).integers(0, 256, size=(10, 7, 3), dtype=np.uint8)
    path = tmp_path / "filtered.png"
    path.write_bytes(_filtered_png(image, [0, 1, 2, 3, 4, 4, 3, 2, 1, 0]))
    assert np.array_equal(read_png(path), image)
    gray = image[..., 0]
    assert np.array_equal(read_png(write_png(tmp_path / "gray.png", gray))[..., 0], gray)
    palette = bytearray(_filtered_png(image, [0] * 10))
    palette[25] = 3  # colour type 3: a palette image
    path.write_bytes(bytes(palette))
    with pytest.raises(PngError, match="colour type 3"):
        read_png(path)


@pytest.mark.slow
def test_deploy_calibrates_and_validates_on_image_folders(image_model, tmp_path, monkeypatch):
    """sdk deploy on QEMU: --calibration and --dataset take the same folder; another folder
    of calibration images is another program (the firmware is reused)."""
    monkeypatch.setenv("SDK_CACHE_DIR", str(tmp_path / "cache"))
    _images(tmp_path / "three", 3)
    (tmp_path / "five").mkdir()
    for i, image in enumerate(np.random.default_rng(11).integers(0, 256, (5, 8, 8, 3))):
        write_png(tmp_path / "five" / f"{i}.png", image.astype(np.uint8))
    reports = []
    for calibration in ("three", "five"):
        report = tmp_path / f"{calibration}.json"
        code = main([
            "deploy", str(image_model), "--target", "qemu", "-o", str(tmp_path / calibration),
            "--calibration", str(tmp_path / calibration), "--dataset", str(tmp_path / "three"),
            "--quiet", "--json", str(report),
        ])  # fmt: skip
        reports.append(json.loads(report.read_text()))
        assert code == 0, reports[-1].get("failure")
    three, five = reports
    assert [r["quantization"]["calibration"]["samples"] for r in reports] == [3, 5]
    assert three["dataset"]["samples"] == three["dataset"]["measured"] == 3
    assert three["dataset"]["outputs"][0]["rows"]["device_vs_host"]["identical_samples"] == 3
    assert not three["cache"]["program"]["hit"] and not five["cache"]["program"]["hit"]
    assert five["cache"]["firmware"]["hit"]
    relu = [{r["node"]: r for r in rep["quantization"]["calibration"]["ranges"]}["relu"]
            for rep in reports]  # fmt: skip
    assert relu[0]["max"] != relu[1]["max"]
