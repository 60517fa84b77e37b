"""aten::bmm.out against ExecuTorch: every dtype its portable kernel takes, edge shapes,
integer wrap-around, and malformed calls."""

from __future__ import annotations

import kcase
import numpy as np
import pytest
import torch

OPS = ["aten::bmm.out"]
INT_DTYPES = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]


def magnitude(a: torch.Tensor, b: torch.Tensor) -> list[np.ndarray] | None:
    """Sum of |products| per output: the scale float results are compared on. ExecuTorch's
    Python runtime does not sum in plain k order (its float bmm differs from a sequential
    sum by a few ulps of the terms), so bit-exactness is not the bar for floats."""
    if not a.dtype.is_floating_point:
        return None
    return [np.abs(a.double().numpy()) @ np.abs(b.double().numpy())]


def rand(shape, dtype, gen: torch.Generator) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=dtype)
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -(2**20)), min(info.max, 2**20)
    return torch.randint(lo, hi + 1, shape, generator=gen, dtype=torch.int64).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, *INT_DTYPES])
def test_dtypes_wrap_like_executorch(check, dtype) -> None:
    gen = torch.Generator().manual_seed(1)
    a, b = rand((2, 7, 33), dtype, gen), rand((2, 33, 19), dtype, gen)
    (out,) = check(torch.bmm, a, b, ops=OPS, scales=magnitude(a, b))
    if not dtype.is_floating_point:
        # the sums overflow the narrow dtypes: results are the exact sums modulo 2^bits
        exact = a.to(torch.int64).numpy() @ b.to(torch.int64).numpy()
        np.testing.assert_array_equal(out, exact.astype(out.dtype))


@pytest.mark.parametrize(
    "shape",
    [
        (1, 1, 1, 1),  # one MAC
        (3, 1, 5, 1),  # vectors
        (2, 4, 0, 3),  # empty inner dim: zeros
        (0, 3, 4, 5),  # no batches
        (1, 5, 7, 0),  # no columns
        (1, 3, 1023, 8),  # large odd K
        (2, 10, 64, 37),  # row/column edges of the register blocks
        (1, 6, 2, 33),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int8, torch.int16])
def test_edge_shapes(check, shape, dtype) -> None:
    batch, m, k, n = shape
    gen = torch.Generator().manual_seed(sum(shape))
    a, b = rand((batch, m, k), dtype, gen), rand((batch, k, n), dtype, gen)
    check(torch.bmm, a, b, ops=OPS, scales=magnitude(a, b))


def bmm_case(a: np.ndarray, b: np.ndarray, out_shape, out_dtype, nargs: int = 4):
    c = kcase.CaseBuilder()
    x, y = c.tensor(a), c.tensor(b)
    out = c.tensor(dtype=out_dtype, shape=out_shape)
    c.call("aten::bmm.out", [x, y, out, out][:nargs])
    return c


@pytest.mark.parametrize(
    "a_shape,b_shape,out_shape,out_dtype,error",
    [
        ((2, 3, 4), (2, 5, 6), (2, 3, 6), np.float32, "ShapeMismatch"),  # inner dims differ
        ((2, 3, 4), (3, 4, 6), (3, 3, 6), np.float32, "ShapeMismatch"),  # batches differ
        ((2, 3, 4), (2, 4, 6), (2, 3, 5), np.float32, "ShapeMismatch"),  # wrong out
        ((3, 4), (4, 6), (3, 6), np.float32, "ShapeMismatch"),  # not 3-d
        ((2, 3, 4), (2, 4, 6), (2, 3, 6), np.int32, "DtypeMismatch"),  # out dtype
    ],
)
def test_rejects_bad_calls(host, a_shape, b_shape, out_shape, out_dtype, error) -> None:
    a = np.ones(a_shape, np.float32)
    b = np.ones(b_shape, np.float32)
    result = host.run_one(bmm_case(a, b, out_shape, out_dtype))
    assert result.status == error, result.reason
    assert result.reason.startswith("aten::bmm.out: ")
    # nothing was written
    assert result.arenas[2] == bytes([kcase.FILL]) * len(result.arenas[2])


def test_rejects_wrong_arg_count_and_tags(host) -> None:
    a = np.ones((1, 2, 2), np.float32)
    result = host.run_one(bmm_case(a, a, (1, 2, 2), np.float32, nargs=3))
    assert result.status == "InvalidArgument"
    assert "expected 4 arguments, got 3" in result.reason
    c = kcase.CaseBuilder()
    x, n = c.tensor(a), c.int(3)
    c.call("aten::bmm.out", [x, n, x, x])
    result = host.run_one(c)
    assert result.status == "InvalidArgument"
    assert "mat2 (argument 1) must be Tensor, got Int" in result.reason


def test_rejects_unsupported_dtype(host) -> None:
    a = np.ones((1, 2, 2), np.bool_)
    result = host.run_one(bmm_case(a, a, (1, 2, 2), np.bool_))
    assert result.status == "DtypeMismatch"
    assert "Bool" in result.reason


def test_rejects_out_overlapping_an_input(host) -> None:
    c = kcase.CaseBuilder()
    arena = c.arena(64)
    x = c.placed(kcase.CODES[np.dtype(np.float32)], (1, 2, 2), arena, 0)
    c.init(x, np.ones((1, 2, 2), np.float32))
    out = c.placed(kcase.CODES[np.dtype(np.float32)], (1, 2, 2), arena, 8)  # half over x
    c.call("aten::bmm.out", [x, x, out, out])
    result = host.run_one(c)
    assert result.status == "InvalidArgument" and "overlaps" in result.reason
