"""`sdk deploy MODEL --dataset D.npz`: the program on the device over a whole data set, with the
figures engineers compare tools by (ST Edge AI's `validate`: ACC, RMSE, MAE, L2R, COS, the
X-cross rows, a confusion matrix).

D.npz holds `arr_0..arr_{k-1}`, input i of every sample with a leading sample axis (N, *shape;
a model input with batch 1 may drop it: N, *shape[1:]), and optionally `labels` (N integers,
the ground truth of the classification outputs: every output with at least two classes per
sample and more classes than the largest label). The program is loaded once and each sample is
one RUN over the link; the host reference, the quantized and the fp32 model run on the host.

`read_dataset` also takes a folder of PNG images for a one-input model (`read_image_folder`):
what `--calibration` reads too.

Rows, per output: device vs host reference (identical samples), device vs quantized model,
device vs fp32 model, quantized vs fp32 (what quantization alone costs); with labels, top-1 and
top-5 accuracy of device, quantized and fp32, the device's top-1 agreement with both models and
the device's confusion matrix. The verdict is the host's (`Thresholds`, defaults in the README):
the device must give the host reference's outputs on every sample (it runs the program
right), and with labels its top-1 accuracy may fall at most `max_accuracy_drop` points below
the fp32 model's (quantization quality).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sdk.errors import UsageError
from sdk.evaluation.png import PngError, read_png

LABELS = "labels"
# Image files a folder may hold; only PNG is decoded (no imaging package in the pinned stack).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".ppm", ".pgm", ".tif", ".tiff")
WORST_SAMPLES = 5
TOP_K = 5


@dataclass(frozen=True)
class Thresholds:
    """What a data-set validation must meet (the host decides)."""

    max_accuracy_drop: float = 2.0  # top-1 points below the fp32 model's, with labels
    rtol: float = 0.0  # device vs host reference, as the single-input check (`--host-rtol`)

    def to_json(self) -> dict:
        return {"max_accuracy_drop": self.max_accuracy_drop, "rtol": self.rtol}


@dataclass
class Dataset:
    path: Path
    inputs: list[np.ndarray]  # per model input: (N, *the input's shape)
    labels: np.ndarray | None

    @property
    def size(self) -> int:
        return len(self.inputs[0])

    def sample(self, i: int) -> list[np.ndarray]:
        return [np.ascontiguousarray(a[i]) for a in self.inputs]


def read_dataset(path: Path, example: Sequence[np.ndarray], flag: str = "--dataset") -> Dataset:
    """D.npz (or a folder of images: read_image_folder) checked against the model's example
    inputs: one line naming what is wrong, with the `flag` that gave it."""
    path = Path(path)
    if path.is_dir():
        return read_image_folder(path, example, flag)
    _check_exists(path, flag)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except (OSError, ValueError) as exc:
        raise UsageError(f"{flag} {path}: not a readable .npz ({exc})") from None
    wanted = [f"arr_{i}" for i in range(len(example))]
    unknown = sorted(set(arrays) - {*wanted, LABELS})
    missing = [name for name in wanted if name not in arrays]
    if missing or unknown:
        raise UsageError(
            f"{flag} {path}: the model takes {len(example)} input(s) ({', '.join(wanted)}"
            f" and optionally {LABELS}); missing {missing or 'none'}, unknown {unknown or 'none'}"
        )
    inputs = []
    for i, (name, want) in enumerate(zip(wanted, example, strict=True)):
        got = arrays[name]
        shape = tuple(want.shape)
        if got.ndim == len(shape) and shape[:1] == (1,) and got.shape[1:] == shape[1:]:
            got = got.reshape(got.shape[0], *shape)  # samples on the batch axis
        if got.shape[1:] != shape or got.dtype != want.dtype:
            raise UsageError(
                f"{flag} {path}: {name} is {got.dtype} {list(got.shape)}; input {i} takes "
                f"{want.dtype} {list(shape)} per sample (N, {', '.join(map(str, shape))})"
            )
        if got.dtype.kind == "f" and not np.isfinite(got).all():
            bad = int(np.argwhere(~np.isfinite(got.reshape(len(got), -1)).all(axis=1))[0][0])
            what = "NaN" if np.isnan(got[bad]).any() else "Inf"
            raise UsageError(f"{flag} {path}: {name} sample {bad} (input {i}) holds {what}")
        inputs.append(got)
    counts = {len(a) for a in inputs}
    if len(counts) != 1 or 0 in counts:
        raise UsageError(f"{flag} {path}: inputs hold {sorted(counts)} samples, not one N >= 1")
    labels = arrays.get(LABELS)
    if labels is not None:
        if labels.ndim != 1 or labels.dtype.kind not in "iu" or len(labels) != len(inputs[0]):
            raise UsageError(
                f"{flag} {path}: {LABELS} is {labels.dtype} {list(labels.shape)}; it must "
                f"be {len(inputs[0])} integers, one per sample"
            )
        if labels.size and labels.min() < 0:
            raise UsageError(f"{flag} {path}: {LABELS} holds a negative class")
    return Dataset(path, inputs, labels)


def _check_exists(path: Path, flag: str) -> None:
    if not path.is_file() and not path.is_dir():
        raise UsageError(f"{flag} {path}: no such file or folder")


def content_digest(path: Path, flag: str = "--dataset") -> str:
    """What read_dataset reads from `path`, as one hash (for a cache key): the .npz's bytes, or
    the folder's image files, their paths and bytes."""
    path = Path(path)
    _check_exists(path, flag)
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    digest = hashlib.sha256()
    for file in image_files(path):
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def image_files(folder: Path) -> list[Path]:
    """The image files below `folder` (class subfolders too), in path order; hidden ones left."""
    return sorted(
        p for p in Path(folder).rglob("*")
        if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )  # fmt: skip


def image_layout(shape: Sequence[int]) -> tuple[int, int, int] | None:
    """(channels, height, width) of an image input: (1, C, H, W), (C, H, W), (1, H, W) or
    (H, W), channels first as PyTorch takes images; None for another shape."""
    dims = list(shape)
    if len(dims) == 4 and dims[0] == 1:
        dims = dims[1:]
    if len(dims) == 2:
        return 1, dims[0], dims[1]
    return (dims[0], dims[1], dims[2]) if len(dims) == 3 else None


def read_image_folder(folder: Path, example: Sequence[np.ndarray], flag: str) -> Dataset:
    """Every PNG below FOLDER as one sample of a one-input image model, unchanged in size: 8-bit
    pixels scaled to 0..1 (16-bit ones too) for a float input, as they are for an integer one.
    Each image must have the input's size and channels (no resizing: that is the model's
    preprocessing to choose)."""
    where = f"{flag} {folder}"
    if len(example) != 1:
        raise UsageError(
            f"{where}: a folder of images feeds one input; the model takes {len(example)}"
        )
    want = example[0]
    layout = image_layout(want.shape)
    if layout is None:
        raise UsageError(
            f"{where}: input 0 is {list(want.shape)}, not an image ((1, C, H, W), (C, H, W) or "
            "(H, W)); give a .npz"
        )
    channels, height, width = layout
    files = image_files(folder)
    if not files:
        raise UsageError(f"{where}: no images in the folder (PNG files, or a .npz instead)")
    samples = []
    for file in files:
        name = file.relative_to(folder).as_posix()
        if file.suffix.lower() != ".png":
            raise UsageError(f"{where}: {name}: only PNG images are read (convert it to PNG)")
        try:
            image = read_png(file)
        except (OSError, PngError) as exc:
            raise UsageError(f"{where}: {name}: {exc}") from None
        if image.shape != (height, width, channels):
            raise UsageError(
                f"{where}: {name} is {image.shape[1]}x{image.shape[0]} with {image.shape[2]} "
                f"channel(s); input 0 {list(want.shape)} takes {width}x{height} images with "
                f"{channels} (images are not resized)"
            )
        pixels = np.moveaxis(image, 2, 0)  # (C, H, W)
        if want.dtype.kind == "f":
            pixels = pixels / float(np.iinfo(image.dtype).max)
        elif not np.can_cast(image.dtype, want.dtype):
            raise UsageError(
                f"{where}: {name} has {image.dtype} pixels, which input 0 ({want.dtype}) cannot "
                "hold; give a .npz"
            )
        samples.append(pixels.astype(want.dtype).reshape(want.shape))
    return Dataset(Path(folder), [np.stack(samples)], None)


def errors(actual: np.ndarray, reference: np.ndarray, step: float | None = None) -> dict:
    """RMSE, MAE, L2R (||a - r|| / ||r||), COS, max |a - r| (and in quantization steps) over
    all samples of one output."""
    a = actual.astype(np.float64).ravel()
    r = reference.astype(np.float64).ravel()
    d = a - r
    norm_r = float(np.linalg.norm(r))
    norm_a = float(np.linalg.norm(a))
    max_abs = float(np.abs(d).max()) if d.size else 0.0
    out = {
        "rmse": float(math.sqrt(np.mean(d * d))) if d.size else 0.0,
        "mae": float(np.mean(np.abs(d))) if d.size else 0.0,
        "l2r": float(np.linalg.norm(d)) / norm_r if norm_r else (0.0 if not d.any() else None),
        "cos": float(a @ r) / (norm_a * norm_r) if norm_a and norm_r else None,
        "max_abs": max_abs,
    }
    if step:
        out["max_steps"] = max_abs / step
    return out


def classes_of(output: np.ndarray, labels: np.ndarray | None) -> bool:
    """Is this output (N, ...) a classification the labels can judge?"""
    per_sample = int(np.prod(output.shape[1:])) if output.ndim > 1 else 1
    return labels is not None and per_sample >= 2 and per_sample > int(labels.max(initial=0))


def top_k(output: np.ndarray, k: int) -> np.ndarray:
    """(N, k): each sample's k highest classes, best first."""
    flat = output.reshape(len(output), -1).astype(np.float64)
    k = min(k, flat.shape[1])
    return np.argsort(-flat, axis=1, kind="stable")[:, :k]


def accuracy(output: np.ndarray, labels: np.ndarray, k: int) -> float:
    return float(np.mean([label in row for label, row in zip(labels, top_k(output, k))]) * 100)


def confusion(predicted: np.ndarray, labels: np.ndarray, classes: int) -> list[list[int]]:
    """matrix[true][predicted] counts."""
    matrix = np.zeros((classes, classes), dtype=np.int64)
    np.add.at(matrix, (labels, predicted), 1)
    return matrix.tolist()


@dataclass
class DatasetResult:
    """What the device gave over the data set, beside the host's three references."""

    dataset: Dataset
    device: list[np.ndarray] = field(default_factory=list)  # per output: (n, ...) measured
    measured: int = 0
    seconds: float = 0.0
    interrupted: bool = False


def run_dataset(
    dataset: Dataset,
    run_one: Callable[[list[np.ndarray]], list[np.ndarray]],
    progress: Callable[[int, int, float], None] | None = None,
) -> DatasetResult:
    """Each sample through `run_one` (one RUN on the loaded program), in order. Ctrl-C keeps
    what was measured (`interrupted`); any other failure propagates."""
    result = DatasetResult(dataset)
    per_output: list[list[np.ndarray]] = []
    start = time.monotonic()
    try:
        for i in range(dataset.size):
            outputs = run_one(dataset.sample(i))
            if not per_output:
                per_output = [[] for _ in outputs]
            for store, out in zip(per_output, outputs, strict=True):
                store.append(out)
            result.measured = i + 1
            if progress is not None:
                progress(result.measured, dataset.size, time.monotonic() - start)
    except KeyboardInterrupt:
        result.interrupted = True
    result.seconds = time.monotonic() - start
    result.device = [np.stack(store) for store in per_output]
    return result


def evaluate(
    result: DatasetResult,
    references: dict[str, list[np.ndarray]],
    thresholds: Thresholds,
    steps: Sequence[float | None] = (),
) -> dict:
    """The report's `dataset` section: per-output rows, classification figures, the worst
    samples, and the verdict. `references`: host / quantized / fp32, each per output (N, ...)."""
    n = result.measured
    labels = None if result.dataset.labels is None else result.dataset.labels[:n]
    outputs, failures = [], []
    for i, device in enumerate(result.device):
        missing = [
            name for name, refs in references.items()
            if i >= len(refs) or np.asarray(refs[i][:n]).size != device.size
        ]  # fmt: skip
        if missing:
            failures.append(
                f"output {i}: no matching output of {', '.join(missing)} to compare "
                f"(device {list(device.shape)})"
            )
            continue
        ref = {
            name: np.asarray(refs[i][:n]).reshape(device.shape) for name, refs in references.items()
        }
        step = steps[i] if i < len(steps) else None
        tolerance = thresholds.rtol * max(float(np.abs(ref["host"]).max(initial=0)), 1e-30)
        differs = np.abs(device.astype(np.float64) - ref["host"]).reshape(n, -1).max(axis=1)
        identical = int(np.sum(differs <= tolerance))
        rows = {
            "device_vs_host": {**errors(device, ref["host"], step), "identical_samples": identical},
            "device_vs_quantized": errors(device, ref["quantized"], step),
            "device_vs_fp32": errors(device, ref["fp32"], step),
            "quantized_vs_fp32": errors(ref["quantized"], ref["fp32"], step),
        }
        vs_quantized = np.abs(device.astype(np.float64) - ref["quantized"]).reshape(n, -1)
        order = np.argsort(-vs_quantized.max(axis=1), kind="stable")[:WORST_SAMPLES]
        entry: dict = {
            "index": i,
            "rows": rows,
            "worst_samples": [
                {"sample": int(s), "max_abs_vs_quantized": float(vs_quantized[s].max())}
                for s in order
            ],
        }
        if identical < n:
            first = int(np.argmax(differs > tolerance))
            failures.append(
                f"output {i}: the device differs from the host reference on {n - identical} of "
                f"{n} samples (first: sample {first}, max |diff| {differs[first]:.6g})"
            )
        if labels is not None and classes_of(device, labels):
            entry["classification"] = classify(device, ref, labels)
            drop = (
                entry["classification"]["top1"]["fp32"] - entry["classification"]["top1"]["device"]
            )
            if drop > thresholds.max_accuracy_drop:
                failures.append(
                    f"output {i}: device top-1 {entry['classification']['top1']['device']:.2f}% "
                    f"is {drop:.2f} points below the fp32 model's (at most "
                    f"{thresholds.max_accuracy_drop:g}): a quantization-quality miss, see "
                    "`sdk numerics`"
                )
        outputs.append(entry)
    if labels is not None and n and not any("classification" in o for o in outputs):
        failures.append(
            f"the labels (classes 0..{int(labels.max())}) fit no output: none has that many "
            "values per sample (are they 1-based, or with an 'ignore' value?)"
        )
    if result.interrupted:
        failures.insert(0, f"interrupted after {n} of {result.dataset.size} samples")
    if n == 0:
        failures.insert(0, "no sample was measured")
    return {
        "file": str(result.dataset.path),
        "samples": result.dataset.size,
        "measured": n,
        "interrupted": result.interrupted,
        "seconds": result.seconds,
        "samples_per_s": n / result.seconds if result.seconds > 0 else None,
        "labels": labels is not None,
        "thresholds": thresholds.to_json(),
        "outputs": outputs,
        "passed": not failures,
        "failure": "; ".join(failures) or None,
    }


def classify(device: np.ndarray, ref: dict[str, np.ndarray], labels: np.ndarray) -> dict:
    tops = {"device": device, "quantized": ref["quantized"], "fp32": ref["fp32"]}
    predicted = {name: top_k(out, 1)[:, 0] for name, out in tops.items()}
    classes = int(np.prod(device.shape[1:]))
    return {
        "top1": {name: accuracy(out, labels, 1) for name, out in tops.items()},
        f"top{TOP_K}": {name: accuracy(out, labels, TOP_K) for name, out in tops.items()},
        "agreement": {
            "device_vs_fp32": float(np.mean(predicted["device"] == predicted["fp32"]) * 100),
            "device_vs_quantized": float(
                np.mean(predicted["device"] == predicted["quantized"]) * 100
            ),
        },
        "confusion": confusion(predicted["device"], labels, classes),
    }
