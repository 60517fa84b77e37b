"""aten::bmm.out against ExecuTorch: every dtype its portable kernel takes, edge shapes,
integer wrap-around, and malformed calls."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support import koracle as oracle
from tests.support.kprogram import EditedProgram

OPS = ["aten::bmm.out"]
INT_DTYPES = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]


def magnitude(a: torch.Tensor, b: torch.Tensor) -> list[np.ndarray] | None:
    """The comparison scales of a float bmm (oracle.bmm_magnitude); integers: exact."""
    return [oracle.bmm_magnitude(a, b)] if a.dtype.is_floating_point else None


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


@pytest.fixture(scope="module")
def bmm_program() -> bytes:
    return oracle.export(torch.bmm, (torch.ones(2, 3, 4), torch.ones(2, 4, 6)))


def bmm_edit(pte: bytes, a, b, out_shape, out_dtype) -> EditedProgram:
    """The bmm program edited to multiply new inputs `a`, `b` into a new `out`."""
    edit = EditedProgram(pte)
    edit.call_with_out(OPS[0], [edit.input(a), edit.input(b)], out_dtype, out_shape)
    return edit


@pytest.mark.parametrize(
    "a_shape,b_shape,out_shape,out_dtype,error,reason",
    [
        ((2, 3, 4), (2, 5, 6), (2, 3, 6), np.float32, "ShapeMismatch", "do not multiply"),
        ((2, 3, 4), (3, 4, 6), (3, 3, 6), np.float32, "ShapeMismatch", "do not multiply"),
        ((2, 3, 4), (2, 4, 6), (2, 3, 5), np.float32, "ShapeMismatch", "expected [2, 3, 6]"),
        ((3, 4), (4, 6), (3, 6), np.float32, "ShapeMismatch", "must both be 3-d"),
        ((2, 3, 4), (2, 4, 6), (2, 3, 6), np.int32, "DtypeMismatch", "out dtype Int"),
    ],
)
def test_rejects_bad_calls(
    refused, bmm_program, a_shape, b_shape, out_shape, out_dtype, error, reason
) -> None:
    a, b = np.ones(a_shape, np.float32), np.ones(b_shape, np.float32)
    name, why = refused(bmm_edit(bmm_program, a, b, out_shape, out_dtype))  # nothing written
    assert name == error, why
    assert why.startswith("aten::bmm.out: ") and reason in why, why


def test_rejects_wrong_arg_count_and_tags(refused, bmm_program) -> None:
    edit = EditedProgram(bmm_program)
    (call,) = edit.exported_calls
    edit.call(OPS[0], call.args[:3])  # the exported call, its return value dropped
    name, why = refused(edit)
    assert name == "InvalidArgument"
    assert why == "aten::bmm.out: expected 4 arguments, got 3"

    edit = EditedProgram(bmm_program)
    (call,) = edit.exported_calls
    self_, _, out, ret = call.args
    edit.call(OPS[0], [self_, edit.int(3), out, ret])  # mat2 an Int
    name, why = refused(edit)
    assert name == "InvalidArgument"
    assert "mat2 (argument 1) must be Tensor, got Int" in why


def test_rejects_unsupported_dtype(refused, bmm_program) -> None:
    a = np.ones((1, 2, 2), np.bool_)
    name, why = refused(bmm_edit(bmm_program, a, a, (1, 2, 2), np.bool_))
    assert name == "DtypeMismatch"
    assert "Bool" in why


def test_rejects_out_overlapping_an_input(refused, bmm_program) -> None:
    edit = EditedProgram(bmm_program)
    x = edit.input(np.ones((1, 2, 2), np.float32))
    out = edit.tensor(np.float32, (1, 2, 2), offset=edit.offset_of(x) + 8)  # half over x
    edit.call(OPS[0], [x, x, out, out])
    name, why = refused(edit)
    assert name == "InvalidArgument" and "out overlaps an input" in why


@pytest.mark.parametrize("dtype", oracle.REDUCED)
def test_reduced_float_accumulates_in_the_dtype(check, dtype) -> None:
    """ExecuTorch's portable bmm sums Half / BFloat16 in the dtype (a rounding per product and
    per sum; the second batch overflows to inf and NaN); its pip runtime's optimized bmm sums
    in float, so the reference is that portable computation (oracle.reduced_matmul)."""
    gen = torch.Generator().manual_seed(2)
    a, b = rand((2, 5, 33), dtype, gen), rand((2, 33, 7), dtype, gen)
    a[1] *= 300
    b[1] *= 300
    check(torch.bmm, a, b, ops=OPS, rtol=0, expected=[oracle.reduced_matmul(a, b)])
    a0, b0 = rand((1, 3, 0), dtype, gen), rand((1, 0, 4), dtype, gen)
    check(torch.bmm, a0, b0, ops=OPS, rtol=0, expected=[oracle.reduced_matmul(a0, b0)])
