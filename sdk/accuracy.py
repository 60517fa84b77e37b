"""How close a program's outputs come to the models the user trained: the fp32 PyTorch model
and the quantized PyTorch model (what quantization alone should give).

    measure(actual, reference) -> Accuracy(max_abs, snr_db, cosine)

SNR is 10·log10(Σref² / Σ(actual-ref)²) in dB (None when identical: infinite); cosine is the
cosine similarity of the flattened outputs. The pass thresholds per quantization mode and
reference live in THRESHOLDS, once; the README's table is this table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

REFERENCES = ("quantized", "fp32")  # the quantized PyTorch model, the fp32 PyTorch model


@dataclass(frozen=True)
class Threshold:
    min_snr_db: float
    min_cosine: float

    def to_json(self) -> dict:
        return {"min_snr_db": self.min_snr_db, "min_cosine": self.min_cosine}


# Floors a deployed program must meet against each reference, per quantization mode. Against
# the quantized model the only differences are TOSA's integer rescales vs PyTorch's float
# reference (measured on the examples: INT8 identical; INT16 64.6 dB yolo_attention, 95.9 dB
# shared_split). Against fp32 the floor is what quantization may cost before a deploy fails
# (measured: yolo_attention 36.6 dB INT8 / 46.6 dB INT16, shared_split 16.7 dB both). The
# test zoo's figures and per-model floors: bench/zoo_numerics.py, tests/export/test_zoo.py.
THRESHOLDS: dict[str, dict[str, Threshold]] = {
    "int8": {"quantized": Threshold(40.0, 0.9999), "fp32": Threshold(15.0, 0.98)},
    "int16": {"quantized": Threshold(50.0, 0.99999), "fp32": Threshold(15.0, 0.98)},
}


@dataclass(frozen=True)
class Accuracy:
    max_abs: float
    snr_db: float | None  # None: identical (infinite SNR)
    cosine: float

    def meets(self, threshold: Threshold) -> bool:
        snr_ok = self.snr_db is None or self.snr_db >= threshold.min_snr_db
        return snr_ok and self.cosine >= threshold.min_cosine

    def to_json(self) -> dict:
        return {"max_abs": self.max_abs, "snr_db": self.snr_db, "cosine": self.cosine}

    def describe(self) -> str:
        snr = "identical" if self.snr_db is None else f"SNR {self.snr_db:.1f} dB"
        return f"{snr}, max |err| {self.max_abs:.3g}, cosine {self.cosine:.6f}"


def measure(actual: np.ndarray, reference: np.ndarray) -> Accuracy:
    """`actual` against `reference` (same shape; compared as float64)."""
    a = np.asarray(actual, dtype=np.float64).ravel()
    r = np.asarray(reference, dtype=np.float64).ravel()
    if a.shape != r.shape:
        raise ValueError(f"{a.size} values against a reference of {r.size}")
    if not (np.isfinite(a).all() and np.isfinite(r).all()):
        return Accuracy(math.inf, -math.inf, -1.0)  # a NaN/inf output never passes
    error = a - r
    noise = float(np.dot(error, error))
    signal = float(np.dot(r, r))
    max_abs = float(np.max(np.abs(error))) if error.size else 0.0
    if noise == 0.0:
        snr = None
    elif signal == 0.0:
        snr = -math.inf
    else:
        snr = 10.0 * math.log10(signal / noise)
    norms = float(np.linalg.norm(a) * np.linalg.norm(r))
    # Two all-zero outputs agree; one all-zero output against a non-zero one does not.
    cosine = float(np.dot(a, r) / norms) if norms else float(noise == 0.0)
    return Accuracy(max_abs, snr, cosine)
