"""What a deploy measures on the target besides its outputs: the data set (every sample on the
loaded program, against the references) and the per-operator profile (with its trace, its
ETDump and Vela's estimates beside the delegates)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from sdk.deploy.references import DATASET_FILE, DATASET_FILES, INPUTS_FILE
from sdk.evaluation.accuracy import REFERENCES
from sdk.evaluation.dataset import Thresholds, evaluate, read_dataset, run_dataset
from sdk.evaluation.png import confusion_png
from sdk.program.integer_io import IoSection
from sdk.program.pte import LoadedProgram
from sdk.targets.base import RunOptions
from sdk.utils.npz import read_arrays, write_arrays

PROFILE_TRACE_FILE = "profile.trace.json"  # the run as a Chrome/Perfetto trace
PROFILE_ETDUMP_FILE = "profile.etdp"  # the run as ExecuTorch's ETDump (Inspector)
DATASET_OUTPUTS_FILE = "dataset_outputs.npz"  # the device's outputs per sample, per output


def validate_dataset(
    running, program: LoadedProgram, entry: Path, options: RunOptions,
    thresholds: Thresholds | None, show: bool, outputs_file: Path, io: IoSection | None = None,
) -> dict:  # fmt: skip
    """Every sample of the entry's data set on the loaded program (one RUN each; the device's
    outputs into `outputs_file`), the host reference on each, and the figures against the
    PyTorch models' outputs (export time). With integer I/O (`io`) each sample is quantized
    for the program and the outputs dequantized (one-to-one: equal integers, equal floats)."""
    io = io or IoSection("float")
    from sdk.targets.host import HOST_REFERENCE_EXECUTOR, host_runner

    example = read_arrays(entry / INPUTS_FILE)
    data = read_dataset(entry / DATASET_FILE, example)

    def progress(done: int, total: int, seconds: float) -> None:
        if show:
            rate = done / seconds if seconds > 0 else 0.0
            sys.stderr.write(f"\r  data set: {done}/{total} samples, {rate:.1f} samples/s ")
            sys.stderr.flush()

    def run_one(sample: list[np.ndarray]) -> list[np.ndarray]:
        outputs = running.run(program, io.quantize_inputs(sample), options).outputs
        return io.dequantize_outputs(outputs)

    result = run_dataset(data, run_one, progress)
    if show:
        sys.stderr.write("\n")
    write_arrays(outputs_file, result.device)
    reference = host_runner(program, None, HOST_REFERENCE_EXECUTOR)
    host = [
        io.dequantize_outputs(reference.run(io.quantize_inputs(data.sample(i))))
        for i in range(result.measured)
    ]
    references = {
        "host": [np.stack(outs) for outs in zip(*host, strict=True)] if host else [],
        **{ref: read_arrays(entry / DATASET_FILES[ref]) for ref in REFERENCES},
    }
    section = evaluate(result, references, thresholds or Thresholds(), io.output_scales(program))
    for out in section["outputs"]:  # the confusion matrices as images beside the report
        if "classification" in out:
            png = outputs_file.parent / f"confusion_output{out['index']}.png"
            confusion_png(png, out["classification"]["confusion"])
            out["classification"]["confusion_png"] = str(png)
    return section


def profile_of(running, program: LoadedProgram, outdir: Path) -> dict | None:
    """The run's per-operator profile (and its Chrome trace and ETDump), where the target
    keeps one (the host reference does not)."""
    profile = running.profile(program)
    if profile is None:
        return None
    trace = profile.write_chrome_trace(outdir / PROFILE_TRACE_FILE)
    etdump = profile.write_etdump(outdir / PROFILE_ETDUMP_FILE)
    return {**profile.to_json(), "trace": str(trace), "etdump": str(etdump)}


def join_vela_estimates(profile: dict, export_report: dict) -> None:
    """Each delegate row gets Vela's cycle estimate of its NPU work (`vela_estimate_cycles`,
    an estimate beside the measured CPU side)."""
    estimates = {
        d["index"]: (d.get("vela_estimate") or {}).get("total_cycles")
        for d in export_report.get("delegates", [])
    }
    for row in profile["operators"]:
        row["vela_estimate_cycles"] = estimates.get(row.get("delegate"))


def dataset_note(section: dict) -> str:
    rate = section["samples_per_s"]
    speed = f", {rate:.1f} samples/s" if rate else ""
    return f"{section['measured']} of {section['samples']} samples{speed}"
