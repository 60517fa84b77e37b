"""The deploy's verdict on its outputs: one rule, ExecuTorch's own.

An output passes when the target equals the host reference (the device computed what the
program says) and lies within the Tolerance of the quantized PyTorch model (ExecuTorch's
criterion for a quantized program). With integer I/O (`--io int`) the first holds the
integers themselves and the second their dequantized values. The SNR/cosine floors against
both PyTorch models are figures in the report; a floor missed is a warning, never a failure
on its own.
"""

from __future__ import annotations

import numpy as np

from sdk.deploy.report import OutputCheck
from sdk.errors import MismatchError, UsageError
from sdk.evaluation.accuracy import (
    REFERENCES,
    THRESHOLDS,
    Tolerance,
    closeness,
    measure,
    zero_reference_bound,
)
from sdk.evaluation.compare import compare_each
from sdk.program.integer_io import IoSection

# The failure line of a target whose outputs differ from the host reference (a wrong device
# result, as opposed to one outside the quantized model's tolerance).
HOST_MISMATCH = "the target differs from the host reference"


def criterion_scales(scales: list[float | None]) -> list[float | None]:
    """Each output's quantization step for the Tolerance: its own dequantize's scale, else the
    first output's that has one (ExecuTorch's tester takes one scale for all outputs)."""
    shared = next((s for s in scales if s is not None), None)
    return [shared if s is None else s for s in scales]


def judge_outputs(
    outputs: list[np.ndarray], host: list[np.ndarray], references: dict[str, list[np.ndarray]],
    quant: str, tolerance: Tolerance, host_rtol: float, scales: list[float | None],
    io: IoSection | None = None,
) -> tuple[list[OutputCheck], str | None, list[str]]:  # fmt: skip
    """(checks, failure, warnings): per output the host comparison, the Tolerance against the
    quantized model and the floors' figures; the failure names the first failing output (host
    mismatches first); a warning per floor missed. `io`: the program's I/O (integer outputs
    are dequantized for the models' comparisons)."""
    try:
        vs_host = compare_each(outputs, host, host_rtol)
        bad = [c.describe() for c in vs_host if not c.ok]
    except MismatchError as exc:  # count, dtype or shape: nothing to compare output by output
        vs_host, bad = None, [exc.message]
    failure = f"{HOST_MISMATCH}: {'; '.join(bad)}" if bad else None
    steps = criterion_scales(list(scales) + [None] * (len(outputs) - len(scales)))
    checks, warnings = [], []
    try:
        values = (io or IoSection("float")).dequantize_outputs(outputs)
    except UsageError as exc:  # the target returned another dtype than the program's
        values = outputs
        failure = failure or f"{HOST_MISMATCH}: {exc}"
    for i, (raw, output) in enumerate(zip(outputs, values)):
        check = OutputCheck(i, str(raw.dtype), list(raw.shape), None if vs_host is None
                            else vs_host[i])  # fmt: skip
        quantized = _reference(references["quantized"], i, output)
        if quantized is None:
            check.problem = f"the quantized model gives no matching output {i}"
        else:
            check.criterion = closeness(output, quantized, tolerance, steps[i])
        if not check.ok and failure is None:
            failure = f"output {i} vs the quantized model: " + (
                check.problem or check.criterion.describe()
            )
        for ref in REFERENCES:
            expected = _reference(references[ref], i, output)
            threshold = THRESHOLDS[quant][ref]
            if expected is None:
                check.add(ref, None, threshold, f"the {ref} model gives no matching output {i}")
                continue
            bound = zero_reference_bound(
                expected, quantized if ref != "quantized" else None, scales[i] if i < len(scales)
                else None,
            )  # fmt: skip
            accuracy = measure(output, expected, bound)
            check.add(ref, accuracy, threshold)
            if not accuracy.meets(threshold):
                floor = (
                    "the model's output is all zeros"
                    if accuracy.zero_reference_bound is not None
                    else f"floor: SNR {threshold.min_snr_db} dB, cosine {threshold.min_cosine}"
                )
                warnings.append(f"output {i} vs the {ref} model: {accuracy.describe()} ({floor})")
        checks.append(check)
    return checks, failure, warnings


def _reference(arrays: list[np.ndarray], i: int, output: np.ndarray) -> np.ndarray | None:
    """Reference output `i` in the output's shape, or None when there is none that size."""
    if i >= len(arrays) or arrays[i].size != output.size:
        return None
    return arrays[i].reshape(output.shape)
