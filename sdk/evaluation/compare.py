"""Compare a target's outputs with reference outputs (`sdk run --expect`).

Integer outputs must be identical. Float outputs may differ by `rtol` relative to the
output's largest magnitude (kernels may fuse multiply-adds where ExecuTorch's host build
does not, which moves the last bits of a sum).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sdk.errors import MismatchError

DEFAULT_RTOL = 1e-6


@dataclass(frozen=True)
class OutputComparison:
    index: int
    exact: bool
    max_abs_diff: float
    tolerance: float  # 0 for integer outputs
    ok: bool

    def describe(self) -> str:
        if self.exact:
            return f"output {self.index}: bit-identical"
        return (
            f"output {self.index}: max |diff| {self.max_abs_diff:.3g} "
            f"(tolerance {self.tolerance:.3g}) {'ok' if self.ok else 'MISMATCH'}"
        )


def compare_outputs(
    actual: list[np.ndarray], expected: list[np.ndarray], rtol: float = DEFAULT_RTOL
) -> list[OutputComparison]:
    """Per-output comparison; raises MismatchError when any output is out of tolerance."""
    results = compare_each(actual, expected, rtol)
    bad = [r for r in results if not r.ok]
    if bad:
        raise MismatchError("; ".join(r.describe() for r in bad))
    return results


def compare_each(
    actual: list[np.ndarray], expected: list[np.ndarray], rtol: float = DEFAULT_RTOL
) -> list[OutputComparison]:
    """Each output's comparison, good or bad; MismatchError only when the outputs cannot be
    compared at all (count, dtype or shape differ)."""
    if len(actual) != len(expected):
        raise MismatchError(f"{len(actual)} outputs, {len(expected)} expected")
    results = []
    for i, (a, e) in enumerate(zip(actual, expected)):
        if a.shape != e.shape or a.dtype != e.dtype:
            raise MismatchError(
                f"output {i} is {a.dtype} {list(a.shape)}, expected {e.dtype} {list(e.shape)}"
            )
        if a.dtype == np.bool_:
            # By their bytes: ExecuTorch's bool is 0 or 1 (numpy would call a 0xFF byte True);
            # a firmware that leaves another byte there hands its kernels a broken bool.
            a, e = a.view(np.uint8), e.view(np.uint8)
        exact = np.array_equal(a, e, equal_nan=np.issubdtype(a.dtype, np.floating))
        if exact:
            results.append(OutputComparison(i, True, 0.0, 0.0, True))
            continue
        diff = float(np.max(np.abs(a.astype(np.float64) - e.astype(np.float64))))
        tolerance = 0.0
        if np.issubdtype(a.dtype, np.floating):
            tolerance = rtol * float(np.max(np.abs(e.astype(np.float64))))
        results.append(OutputComparison(i, False, diff, tolerance, diff <= tolerance))
    return results
