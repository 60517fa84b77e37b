"""The references a deploy holds its outputs to, as cache entries: the program entry (the
export, the inputs, and both PyTorch models' outputs on them: `export_into`) and the reference
entry (the host reference's outputs: `reference_into`)."""

from __future__ import annotations

import shutil
from pathlib import Path

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

EXPORT_DIR = "export"  # inside a program entry: what `sdk export` writes
INPUTS_FILE = "inputs.npz"  # the inputs the deploy checks, in program order
DATASET_FILE = "dataset.npz"  # --dataset: the data set the program entry was made with
DATASET_FILES = {ref: f"dataset_{ref}.npz" for ref in REFERENCES}  # per output (N, ...)
REFERENCE_FILES = {ref: f"reference_{ref}.npz" for ref in REFERENCES}
HOST_OUTPUTS_FILE = "host.npz"  # inside a reference entry: the host reference's outputs


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

    from sdk.export.calibration import read_calibration
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import lower, quantize

    loaded = load_model(model)
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
    calibrating = read_calibration(calibration, example) if calibration else None
    quantized = quantize(
        loaded, npu, quant, calibrating, vela_args=vela_args, options=options, memories=memories,
        input_layout=input_layout, calibration_from=str(calibration), progress=progress,
    )  # fmt: skip
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
