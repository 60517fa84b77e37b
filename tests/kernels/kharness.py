"""Running cases through a harness and comparing results, shared by the kernel tests."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import kbuild
import kcase
import numpy as np
import torch

# Copies export adds around the ops under test (layout changes, Python-scalar casts).
GLUE_OPS = {"dim_order_ops::_clone_dim_order.out", "dim_order_ops::_to_dim_order_copy.out"}


class Harness:
    """Runs cases through one harness executable (host) or image (QEMU)."""

    def __init__(self, workdir: Path, exe: Path | None = None, elf: Path | None = None) -> None:
        self.workdir = workdir
        self.exe = exe
        self.elf = elf
        self.count = 0

    def run(self, builders: Sequence[kcase.CaseBuilder]) -> list[kcase.Result]:
        pairs = []
        for b in builders:
            self.count += 1
            case = self.workdir / f"case{self.count}.bin"
            case.write_bytes(b.to_bytes())
            pairs.append((case, self.workdir / f"result{self.count}.bin"))
        if self.exe is not None:
            args = [str(p) for pair in pairs for p in pair]
            proc = subprocess.run(
                [str(self.exe), *args], capture_output=True, text=True, timeout=600, check=False
            )
            assert proc.returncode == 0, f"harness failed ({proc.returncode}):\n{proc.stderr}"
        else:
            assert self.elf is not None
            listing = self.workdir / f"list{self.count}.txt"
            listing.write_text("".join(f"{c.name}\n{r.name}\n" for c, r in pairs))
            proc = kbuild.run_qemu(self.elf, listing.name, cwd=self.workdir)
            assert proc.returncode == 0, (
                f"QEMU harness exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"
            )
        results = []
        for b, (case, result) in zip(builders, pairs, strict=True):
            results.append(kcase.parse_result(result.read_bytes(), b))
            case.unlink()
            result.unlink()
        return results

    def run_one(self, builder: kcase.CaseBuilder) -> kcase.Result:
        return self.run([builder])[0]


def assert_matches(
    actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-6, scale: np.ndarray | None = None
) -> None:
    """Integers bit-exact; floats within rtol of the expected value, or, with `scale`,
    within rtol * scale (for sums: the sum of the magnitudes of their terms, since a
    different summation order legitimately moves a result by a few ulps of its terms)."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if not np.issubdtype(expected.dtype, np.floating):
        np.testing.assert_array_equal(actual, expected)
    elif scale is None:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=0, equal_nan=True)
    else:
        err = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
        bound = rtol * scale + np.finfo(expected.dtype).tiny
        bad = ~(err <= bound)
        assert not bad.any(), (
            f"{bad.sum()} of {bad.size} elements off by more than {rtol} x their scale; "
            f"worst error/scale {np.max(err / np.maximum(scale, 1e-300)):.3g}"
        )


def to_numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().contiguous().numpy()
