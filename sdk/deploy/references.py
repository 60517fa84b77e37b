"""The references a deploy holds its outputs to, as cache entries: the program entry (the
export, the inputs, and both PyTorch models' outputs on them: `export_into`) and the reference
entry (the host reference's outputs: `reference_into`)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import shutil
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sdk.errors import UsageError
from sdk.ethosu.config import NpuConfig, QuantMode
from sdk.evaluation.accuracy import REFERENCES
from sdk.evaluation.dataset import read_dataset
from sdk.export.calibration import Progress
from sdk.export.model_loader import ModelSpec, output_tensors
from sdk.export.quant_options import QuantOptions
from sdk.program.layout import AS_MODEL
from sdk.program.pte import LoadedProgram
from sdk.utils.npz import read_arrays, write_arrays

if TYPE_CHECKING:
    from sdk.export.pipeline import QuantizedModel

EXPORT_DIR = "export"  # inside a program entry: what `sdk export` writes
INPUTS_FILE = "inputs.npz"  # the inputs the deploy checks, in program order
DATASET_FILE = "dataset.npz"  # --dataset: the data set the program entry was made with
DATASET_FILES = {ref: f"dataset_{ref}.npz" for ref in REFERENCES}  # per output (N, ...)
REFERENCE_FILES = {ref: f"reference_{ref}.npz" for ref in REFERENCES}
HOST_OUTPUTS_FILE = "host.npz"  # inside a reference entry: the host reference's outputs


# The quantized models of the current `shared_quantization` block, by `_quantization_key`.
_SHARED: ContextVar[dict[str, QuantizedModel] | None] = ContextVar("shared", default=None)


@contextlib.contextmanager
def shared_quantization() -> Iterator[dict[str, QuantizedModel]]:
    """Within the block (one tuning), the exports of one model with one quantization share its
    load, torch.export, calibration and PT2E conversion: tuning candidates differ in Vela's
    configuration, the program's I/O and the operators kept on the CPU, all applied when the
    quantized graph is lowered (`export_into`); the lowerings of one graph and one --cpu-op set
    share its edge program too (sdk.export.pipeline.shared_edge_programs): only the backend's
    lowering (TOSA, Vela) runs per candidate. Yields the quantized models it holds; a block
    nested in another shares the outer's."""
    from sdk.export.pipeline import shared_edge_programs

    shared = _SHARED.get()
    if shared is not None:
        yield shared
        return
    token = _SHARED.set(shared := {})
    try:
        with shared_edge_programs():  # and each graph's edge program (sdk.export.pipeline)
            yield shared
    finally:
        _SHARED.reset(token)


def _quantization_key(
    model: ModelSpec,
    npu: NpuConfig,
    quant: QuantMode,
    options: QuantOptions,
    input_layout: str,
    calibration: Path | None,
) -> str:
    """What a quantized model is a function of: the model file's text and name, the NPU (its
    TOSA profile is the quantizer's), the quantization settings, the input layout and the
    calibration data's content."""
    from sdk.evaluation.dataset import content_digest

    parts = (model.path.read_bytes(), str(model), npu.value, quant.value, repr(options.to_json()))
    calibrated = content_digest(calibration, "--calibration") if calibration else ""
    digest = hashlib.sha256()
    for part in (*parts, input_layout, calibrated):
        digest.update(part if isinstance(part, bytes) else part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _quantized(
    model: ModelSpec, npu: NpuConfig, quant: QuantMode, options: QuantOptions | None,
    vela: tuple[list[str] | None, tuple[str, str] | None], input_layout: str,
    calibration: Path | None, progress: Progress | None,
) -> QuantizedModel:  # fmt: skip
    """The model quantized for this export (`vela`: its Vela flags and memories; `calibration`,
    `progress`: sdk.export.calibration's): from the current `shared_quantization` block when
    one export there quantized it already (its graph copied: a lowering must not see another's
    changes), else loaded and quantized now."""
    import copy

    from sdk.export.calibration import read_calibration
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import quantize

    vela_args, memories = vela
    shared = _SHARED.get()
    key = None
    if shared is not None:
        key = _quantization_key(
            model, npu, quant, options or QuantOptions(), input_layout, calibration
        )
        if key in shared:
            first = shared[key]
            return dataclasses.replace(
                first, exported=copy.deepcopy(first.exported), vela_args=list(vela_args or []),
                memories=memories,
            )  # fmt: skip
    loaded = load_model(model)
    samples = read_calibration(calibration, loaded.example_inputs) if calibration else None
    quantized = quantize(
        loaded, npu, quant, samples, vela_args=vela_args, options=options, memories=memories,
        input_layout=input_layout, calibration_from=str(calibration), progress=progress,
    )  # fmt: skip
    if shared is not None and key is not None:
        shared[key] = quantized
    return quantized


def export_into(
    folder: Path, model: ModelSpec, inputs_file: Path | None, npu: NpuConfig, quant: QuantMode,
    cpu_ops: list[str], failure_logs: Path | None = None, options: QuantOptions | None = None,
    dataset: Path | None = None, io: str = "float", *, memories: tuple[str, str] | None = None,
    vela_args: list[str] | None = None, input_layout: str = AS_MODEL,
    calibration: Path | None = None, progress: Progress | None = None,
) -> None:  # fmt: skip
    """A program entry: the export, the inputs, and both PyTorch models' outputs on them (and
    on every sample of `dataset`, with a copy of it). A failed lowering's Vela log goes into
    `failure_logs` (the entry is removed on failure). The inputs are kept as the user gave
    them (float): with `io="int"` the deploy quantizes them with the program's figures.
    `memories`, `vela_args`: the Vela configuration, `input_layout` the program's (both
    sdk.export.pipeline.quantize's); `calibration`, `progress`: sdk.export.calibration's."""
    import torch

    from sdk.export.pipeline import lower

    quantized = _quantized(
        model, npu, quant, options, (vela_args, memories), input_layout, calibration, progress
    )
    loaded = quantized.loaded
    example = loaded.example_inputs
    if inputs_file is not None:
        arrays = read_arrays(inputs_file)
        wanted = [(str(t.numpy().dtype), list(t.shape)) for t in example]
        given = [(str(a.dtype), list(a.shape)) for a in arrays]
        if given != wanted:  # never cast: float inputs to an int model would be truncated
            raise UsageError(f"{inputs_file}: inputs {given}; {model} takes {wanted}")
        tensors = tuple(torch.from_numpy(a) for a in arrays)
    else:
        tensors = example
    samples = read_dataset(dataset, [t.numpy() for t in example]) if dataset else None
    lower(
        quantized, folder / EXPORT_DIR, cpu_ops=cpu_ops, failure_logs=failure_logs,
        etrecord=True, io=io,
    )  # fmt: skip
    write_arrays(folder / INPUTS_FILE, [t.numpy() for t in tensors])
    with torch.no_grad():
        models = {"fp32": loaded.module, "quantized": quantized.graph_module}
        for ref, module in models.items():
            outputs = output_tensors(module(*tensors))
            write_arrays(folder / REFERENCE_FILES[ref], [o.detach().numpy() for o in outputs])
            if samples is not None:
                per_sample = [
                    [o.detach().numpy() for o in output_tensors(module(*map(torch.from_numpy, x)))]
                    for x in map(samples.sample, range(samples.size))
                ]
                stacked = [np.stack(outs) for outs in zip(*per_sample, strict=True)]
                write_arrays(folder / DATASET_FILES[ref], stacked)
    if samples is not None and samples.path.is_dir():  # a folder of images: what was read
        write_arrays(folder / DATASET_FILE, samples.inputs)
    elif samples is not None:
        shutil.copyfile(samples.path, folder / DATASET_FILE)


def reference_into(folder: Path, program: LoadedProgram, inputs: list[np.ndarray]) -> None:
    """A reference entry: the host reference's outputs on the inputs."""
    from sdk.targets.host import run_host  # ExecuTorch's runtime: imports torch

    write_arrays(folder / HOST_OUTPUTS_FILE, run_host(program, inputs))
