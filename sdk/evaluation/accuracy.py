"""How close a program's outputs come to the models the user trained: the fp32 PyTorch model
and the quantized PyTorch model (what quantization alone should give).

    closeness(actual, quantized, Tolerance(), scale) -> Closeness   # the verdict
    measure(actual, reference) -> Accuracy(max_abs, snr_db, cosine)  # the figures, the floors

The verdict is ExecuTorch's own criterion for a quantized program (`Tolerance`); the SNR and
cosine floors (THRESHOLDS) are reported beside it as warnings, never a reason to fail alone.

SNR is 10·log10(Σref² / Σ(actual-ref)²) in dB (None when identical: infinite); cosine is the
cosine similarity of the flattened outputs. The pass thresholds per quantization mode and
reference live in THRESHOLDS, once; the README's table is this table.

A reference that is all zeros (`acos(1)`, a relu of negatives) has no signal: SNR is -inf and
cosine 0 for any error at all, so they judge nothing. There the output is held to an absolute
bound instead (`zero_reference_bound`): what quantization alone costs (the quantized model's
max error against that reference) plus ZERO_REFERENCE_STEPS steps of the output's scale.

A reference value that is not finite (`logit(0)` is -inf in fp32) cannot be met by any
quantized output: the figures are of the finite positions, and the count left out is said
(with none finite, nothing is judged). An output that is not finite where its reference is
never passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

REFERENCES = ("quantized", "fp32")  # the quantized PyTorch model, the fp32 PyTorch model


@dataclass(frozen=True)
class Tolerance:
    """ExecuTorch's criterion for a quantized program (its tester's `_compare_outputs`, with
    the U55 INT pipeline's defaults): every value within atol + qtol·scale + rtol·|reference|
    of the quantized model, `scale` the output's quantization step (the dequantize that makes
    it; an output with none takes the first output's, as ExecuTorch does)."""

    atol: float = 1e-3
    rtol: float = 1e-3
    qtol: float = 1.0

    def to_json(self) -> dict:
        return {"atol": self.atol, "rtol": self.rtol, "qtol": self.qtol}


@dataclass(frozen=True)
class Closeness:
    """An output against the quantized model under a Tolerance: the verdict of one output."""

    max_abs: float
    outside: int  # values outside the tolerance (a NaN/inf where the reference has none too)
    total: int
    scale: float | None
    allowed: float  # atol + qtol·scale: the bound at a reference value of 0
    tolerance: Tolerance

    @property
    def ok(self) -> bool:
        return self.outside == 0

    def describe(self) -> str:
        scale = "" if self.scale is None else f", scale {self.scale:.3g}"
        bound = (
            f"atol {self.tolerance.atol:g} + qtol {self.tolerance.qtol:g} x step{scale}"
            f" + rtol {self.tolerance.rtol:g} x |ref|"
        )
        where = f"{self.outside} of {self.total} values outside" if self.outside else "all within"
        return f"max |err| {self.max_abs:.3g}, {where} ({bound})"

    def to_json(self) -> dict:
        return {
            **self.tolerance.to_json(),
            "scale": self.scale,
            "allowed": self.allowed,
            "max_abs": self.max_abs,
            "outside": self.outside,
            "values": self.total,
            "ok": self.ok,
        }


def closeness(
    actual: np.ndarray, reference: np.ndarray, tolerance: Tolerance, scale: float | None
) -> Closeness:
    """`actual` against `reference` (same size) as torch.allclose(atol=atol + qtol·scale,
    rtol, equal_nan=True) judges them, value by value."""
    a = np.asarray(actual, dtype=np.float64).ravel()
    r = np.asarray(reference, dtype=np.float64).ravel()
    if a.shape != r.shape:
        raise ValueError(f"{a.size} values against a reference of {r.size}")
    allowed = tolerance.atol + tolerance.qtol * (scale or 0.0)
    with np.errstate(invalid="ignore"):
        error = np.abs(a - r)
        close = error <= allowed + tolerance.rtol * np.abs(r)
    same = (a == r) | (np.isnan(a) & np.isnan(r))  # inf == inf and NaN == NaN are close
    finite = np.isfinite(a) & np.isfinite(r)
    close = (close & finite) | same  # a non-finite value is close to itself alone
    errors = error[np.isfinite(error)]
    max_abs = float(errors.max()) if errors.size else 0.0
    if not (np.isfinite(error) | same).all():
        max_abs = math.inf
    outside = int(a.size - np.count_nonzero(close))
    return Closeness(max_abs, outside, int(a.size), scale, allowed, tolerance)


@dataclass(frozen=True)
class Threshold:
    min_snr_db: float
    min_cosine: float

    def to_json(self) -> dict:
        return {"min_snr_db": self.min_snr_db, "min_cosine": self.min_cosine}


# Floors a deployed program should meet against each reference, per quantization mode; a miss
# is a warning in the report (the verdict is the Tolerance). Against the quantized model the
# only differences are TOSA's integer rescales vs PyTorch's float reference (measured on the
# examples: INT8 identical; INT16 64.6 dB yolo_attention, 95.9 dB shared_split). Against fp32
# the floor is what quantization may cost before a deploy warns (measured: yolo_attention
# 36.6 dB INT8 / 46.6 dB INT16, shared_split 16.7 dB both). The test zoo's figures and
# per-model floors: bench/zoo_numerics.py, tests/export/test_zoo.py.
THRESHOLDS: dict[str, dict[str, Threshold]] = {
    "int8": {"quantized": Threshold(40.0, 0.9999), "fp32": Threshold(15.0, 0.98)},
    "int16": {"quantized": Threshold(50.0, 0.99999), "fp32": Threshold(15.0, 0.98)},
}


# Quantization steps of the output's scale an output may stray beyond what quantization alone
# costs, where its reference is all zeros (the INT16 tolerance of the regression programs).
ZERO_REFERENCE_STEPS = 4


@dataclass(frozen=True)
class Accuracy:
    max_abs: float
    snr_db: float | None  # None: identical (infinite SNR)
    cosine: float
    # Set when the reference is all zeros: max_abs is held to it, SNR and cosine are not.
    zero_reference_bound: float | None = None
    # Reference values that are not finite (logit(0) = -inf, a NaN): no quantized value can
    # equal them, so the figures are of the other positions (all of them: nothing judged).
    excluded: int = 0
    judged: int | None = None  # the positions the figures are of (None: every one)

    def meets(self, threshold: Threshold) -> bool:
        if self.judged == 0:
            return True  # no finite reference value: nothing to hold the output to
        if self.zero_reference_bound is not None:
            return self.max_abs <= self.zero_reference_bound
        snr_ok = self.snr_db is None or self.snr_db >= threshold.min_snr_db
        return snr_ok and self.cosine >= threshold.min_cosine

    def to_json(self) -> dict:
        data = {"max_abs": self.max_abs, "snr_db": self.snr_db, "cosine": self.cosine}
        if self.zero_reference_bound is not None:
            data["zero_reference_bound"] = self.zero_reference_bound
        if self.excluded:
            data["excluded_non_finite_reference"] = self.excluded
        return data

    def describe(self) -> str:
        if self.judged == 0:
            return f"not judged: no reference value is finite ({self.excluded})"
        skipped = (
            f" ({self.excluded} non-finite reference values left out)" if self.excluded else ""
        )
        if self.zero_reference_bound is not None:
            return (
                f"all-zero reference: max |err| {self.max_abs:.3g} "
                f"(bound {self.zero_reference_bound:.3g}){skipped}"
            )
        snr = "identical" if self.snr_db is None else f"SNR {self.snr_db:.1f} dB"
        return f"{snr}, max |err| {self.max_abs:.3g}, cosine {self.cosine:.6f}{skipped}"


def zero_reference_bound(
    reference: np.ndarray, quantized: np.ndarray | None, scale: float | None
) -> float | None:
    """The max error allowed against an all-zero `reference`: the quantized model's own error
    there plus ZERO_REFERENCE_STEPS steps of `scale` (None: not all zeros, or not finite)."""
    r = np.asarray(reference, dtype=np.float64)
    if r.size == 0 or np.any(r != 0.0):
        return None
    own = 0.0
    if quantized is not None:
        q = np.asarray(quantized, dtype=np.float64)
        if q.size != r.size or not np.isfinite(q).all():
            return None
        own = float(np.max(np.abs(q))) if q.size else 0.0
    return own + ZERO_REFERENCE_STEPS * (scale or 0.0)


def measure(actual: np.ndarray, reference: np.ndarray, zero_bound: float | None = None) -> Accuracy:
    """`actual` against `reference` (same shape; compared as float64). `zero_bound`
    (zero_reference_bound) replaces the SNR and cosine floors when the reference is all
    zeros."""
    a = np.asarray(actual, dtype=np.float64).ravel()
    r = np.asarray(reference, dtype=np.float64).ravel()
    if a.shape != r.shape:
        raise ValueError(f"{a.size} values against a reference of {r.size}")
    finite = np.isfinite(r)
    excluded = int(r.size - np.count_nonzero(finite))
    a, r = a[finite], r[finite]
    if not np.isfinite(a).all():
        return Accuracy(math.inf, -math.inf, -1.0)  # a NaN/inf output never passes
    if excluded and not r.size:
        return Accuracy(0.0, None, 1.0, None, excluded, 0)
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
    bound = zero_bound if signal == 0.0 else None
    return Accuracy(max_abs, snr, cosine, bound, excluded, r.size if excluded else None)
