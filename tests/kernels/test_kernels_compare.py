"""Comparisons, logical and bitwise ops, full against ExecuTorch: eq/ne/lt/le/gt/ge (Tensor
and Scalar forms: dtype promotion, mixed floating dtypes compared in Float, broadcasting, NaN,
infinities and signed zeros), logical_and/or/xor/not (any dtype taken as Bool), bitwise
and/or/xor (Tensor and Scalar forms) and bitwise_not on integers and Bool, the bitwise shifts
(Tensor and Scalar forms, counts C++ leaves undefined), full and full_like;
sign; the mask models they serve (torch.where(x > 0, ...)); out dtypes export does not emit;
malformed calls."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support import koracle as oracle
from tests.support.kprogram import EditedProgram

CMP = ["eq", "ne", "lt", "le", "gt", "ge"]
CMP_TENSOR = [f"aten::{op}.Tensor_out" for op in CMP]
CMP_SCALAR = [f"aten::{op}.Scalar_out" for op in CMP]
LOGICAL = [f"aten::logical_{op}.out" for op in ("and", "or", "xor", "not")]
BITWISE = [f"aten::bitwise_{op}.Tensor_out" for op in ("and", "or", "xor")]
BITWISE_SCALAR = [f"aten::bitwise_{op}.Scalar_out" for op in ("and", "or", "xor")]

# Pairs that are equal, ordered both ways, NaN on either side, infinities, signed zeros.
SPECIAL_A = [1.0, 2.0, -3.0, np.nan, 1.0, np.nan, np.inf, -np.inf, np.inf, -0.0, 0.0, 1e30]
SPECIAL_B = [1.0, -2.0, 3.0, 1.0, np.nan, np.nan, np.inf, np.inf, 1e30, 0.0, -0.0, -np.inf]


def data(shape, dtype, seed=0) -> torch.Tensor:
    """Values from a small range, so that equal pairs are common; specials first for floats."""
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    x = torch.randint(-4, 5, shape, generator=gen).to(torch.float64)
    if dtype.is_floating_point:
        x = x / 2
        flat = x.flatten()
        specials = SPECIAL_A if seed % 2 == 0 else SPECIAL_B
        n = min(len(specials), flat.numel())
        flat[:n] = torch.tensor(specials[:n], dtype=torch.float64)
        x = flat.reshape(shape)
    elif dtype == torch.uint8:
        x = x.abs()
    return x.to(dtype)


def comparisons(x, y):
    return x == y, x != y, x < y, x <= y, x > y, x >= y


@pytest.mark.parametrize(
    "a,b",
    [
        ((torch.float32, (12,)), (torch.float32, (12,))),
        ((torch.float64, (3, 12)), (torch.float64, (12,))),
        ((torch.float16, (12,)), (torch.float16, (12,))),
        ((torch.bfloat16, (2, 12)), (torch.bfloat16, (12,))),
        ((torch.float32, (12,)), (torch.float64, (12,))),  # mixed floating: in Float
        ((torch.int64, (4, 1)), (torch.float64, (12,))),  # Long with Double: in Float
        ((torch.float16, (12,)), (torch.float32, (3, 12))),
        ((torch.int32, (12,)), (torch.float32, (12,))),
        ((torch.int8, (3, 4)), (torch.uint8, (4,))),
        ((torch.int64, (2, 3, 1)), (torch.int16, (1, 5))),
        ((torch.bool, (12,)), (torch.bool, (12,))),
        ((torch.bool, (12,)), (torch.float32, (12,))),
    ],
)
def test_compare_tensor(check, a, b) -> None:
    check(comparisons, data(a[1], a[0], 0), data(b[1], b[0], 1), ops=CMP_TENSOR)


def test_compare_mixed_floating_in_float(check) -> None:
    """ExecuTorch compares a Double with a Float in Float: 1 + 1e-12 equals 1.0 there (PyTorch
    says it is greater)."""
    x = torch.tensor([1 + 1e-12, 1.0, 0.1, 1e300, -1e300], dtype=torch.float64)
    y = torch.tensor([1.0, 1.0, 0.1, np.inf, -np.inf], dtype=torch.float32)
    eq, ne, *_, gt, _ = check(comparisons, x, y, ops=CMP_TENSOR)
    assert eq.all() and not gt.any() and not ne.any()


@pytest.mark.parametrize(
    "dtype,scalar",
    [
        (torch.float32, 0.0),  # -0.0 equals it
        (torch.float32, np.inf),
        (torch.float64, -0.5),
        (torch.float16, 1.0),
        (torch.int32, 2),
        (torch.int32, 0.5),  # a float scalar: in Float
        (torch.int8, 300),  # cast to int8 unchecked: 44
        (torch.uint8, 3),
        (torch.bool, True),
        (torch.bool, 1),  # an integer with Bool: in Long
    ],
)
def test_compare_scalar(check, dtype, scalar) -> None:
    x = data((3, 12), dtype, 2)
    if dtype == torch.int8:
        x[0, :3] = torch.tensor([44, 43, 45], dtype=torch.int8)
    check(lambda t: comparisons(t, scalar), x, ops=CMP_SCALAR)


def test_compare_scalar_nan(check) -> None:
    x = data((12,), torch.float32)
    eq, ne, *others = check(lambda t: comparisons(t, np.nan), x, ops=CMP_SCALAR)
    assert ne.all() and not eq.any() and not any(o.any() for o in others)


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.float16, torch.int8, torch.int64, torch.bool]
)
def test_sign(check, dtype) -> None:
    """-1, 0 or 1 in self's dtype; NaN stays NaN."""
    check(torch.sign, data((3, 12), dtype, 4), ops=["aten::sign.out"])


def logicals(x, y):
    return (torch.logical_and(x, y), torch.logical_or(x, y), torch.logical_xor(x, y),
            torch.logical_not(x))  # fmt: skip


@pytest.mark.parametrize(
    "a,b",
    [
        ((torch.bool, (3, 12)), (torch.bool, (12,))),
        ((torch.float32, (12,)), (torch.int32, (12,))),  # NaN is true, -0.0 false
        ((torch.uint8, (2, 1)), (torch.float16, (12,))),
        ((torch.bfloat16, (12,)), (torch.int64, (3, 1))),
    ],
)
def test_logical(check, a, b) -> None:
    check(logicals, data(a[1], a[0], 0), data(b[1], b[0], 1), ops=LOGICAL)


def bits(dtype, shape, seed) -> torch.Tensor:
    """Random bit patterns over the dtype's width (wrapped from int64)."""
    if dtype == torch.bool:
        return data(shape, dtype, seed)
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(-(2**62), 2**62, shape, generator=gen).to(dtype)


def bitwise(x, y):
    return x & y, x | y, x ^ y, ~x


@pytest.mark.parametrize(
    "a,b",
    [
        ((torch.int32, (3, 12)), (torch.int32, (12,))),
        ((torch.int8, (12,)), (torch.uint8, (12,))),  # in Short
        ((torch.int64, (2, 1)), (torch.bool, (12,))),
        ((torch.bool, (12,)), (torch.bool, (12,))),
        ((torch.uint8, (12,)), (torch.int16, (12,))),
    ],
)
def test_bitwise(check, a, b) -> None:
    check(bitwise, bits(*a, 0), bits(*b, 1), ops=[*BITWISE, "aten::bitwise_not.out"])


@pytest.mark.parametrize(
    "dtype,scalar",
    [(torch.int32, -6), (torch.int8, 0x1F3), (torch.uint8, 0x35), (torch.int64, 2**40 + 3),
     (torch.bool, True), (torch.bool, 6)],  # Bool with an integer: Long
)  # fmt: skip
def test_bitwise_scalar(check, dtype, scalar) -> None:
    x = bits(dtype, (3, 12), 3)
    check(lambda t: (t & scalar, t | scalar, t ^ scalar), x, ops=BITWISE_SCALAR)


SHIFTS = [f"aten::bitwise_{side}_shift.Tensor_out" for side in ("left", "right")]
SHIFTS_SCALAR = [f"aten::bitwise_{side}_shift.Tensor_Scalar_out" for side in ("left", "right")]


def counts(dtype, shape, seed) -> torch.Tensor:
    """Shift counts C++ defines for the dtype (after promotion to at least 32 bits)."""
    gen = torch.Generator().manual_seed(seed)
    width = max(32, 8 * torch.tensor([], dtype=dtype).element_size())
    return torch.randint(0, min(width, 127 if dtype == torch.int8 else width), shape,
                         generator=gen).to(dtype)  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_shifts(check, dtype) -> None:
    """x << y and x >> y as ExecuTorch computes them: narrow operands widened to 32 bits,
    the result cast back (so int8 >> 9 is the sign, int8 << 9 is 0)."""
    x = bits(dtype, (3, 12), 0)
    y = counts(dtype, (12,), 1)
    check(lambda a, b: (torch.bitwise_left_shift(a, b), torch.bitwise_right_shift(a, b)), x, y,
          ops=SHIFTS, core_aten=False)  # fmt: skip


@pytest.mark.parametrize("dtype,count", [(torch.int32, 5), (torch.int8, 3), (torch.int64, 40)])
def test_shifts_by_a_scalar(check, dtype, count) -> None:
    x = bits(dtype, (3, 12), 2)
    check(lambda a: (torch.bitwise_left_shift(a, count), torch.bitwise_right_shift(a, count)),
          x, ops=SHIFTS_SCALAR, core_aten=False)  # fmt: skip


def test_shift_counts_c_leaves_undefined_give_what_pytorch_gives(check) -> None:
    """Negative counts and counts of the widened width or more: 0 to the left, the sign to
    the right (ExecuTorch's `a << b` is undefined there; PyTorch's results are the rule)."""
    x = torch.tensor([5, -5, 1, -1, 7, -7], dtype=torch.int32)
    y = torch.tensor([32, 32, 40, 33, -1, -2], dtype=torch.int32)
    expected = [torch.zeros(6, dtype=torch.int32), torch.tensor([0, -1, 0, -1, 0, -1],
                dtype=torch.int32)]  # fmt: skip
    check(
        lambda a, b: (torch.bitwise_left_shift(a, b), torch.bitwise_right_shift(a, b)),
        x,
        y,
        ops=SHIFTS,
        core_aten=False,
        expected=expected,
    )


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: (torch.full((2, 3), 1.5), torch.full((4,), 7), torch.full((2, 1), True)),
        lambda t: (torch.full((3,), -0.0, dtype=torch.float16),
                   torch.full((2, 2), -5, dtype=torch.int8),
                   torch.full((), np.inf, dtype=torch.float64), torch.full((0, 3), 2.0)),
    ],
)  # fmt: skip
def test_full(check, fn) -> None:
    check(fn, torch.ones(2), ops=["aten::full.out"])


@pytest.mark.parametrize("dtype", [torch.float32, torch.int16, torch.bool, torch.bfloat16])
def test_full_like(check, dtype) -> None:
    fill = -1.5 if dtype.is_floating_point else 1

    def fn(t):
        return torch.zeros_like(t), torch.ones_like(t), torch.full_like(t, fill)

    check(fn, data((2, 5), dtype), ops=["aten::full_like.out"])


def test_mask_models(check) -> None:
    """What models do with masks now runs on the CPU: a where on x > 0, a combined mask, a
    masked fill."""
    x, y = data((3, 12), torch.float32, 0), data((3, 12), torch.float32, 1)
    where = ["aten::where.self_out"]
    check(lambda a, b: torch.where(a > 0, a, b), x, y, ops=["aten::gt.Scalar_out", *where])
    check(lambda a, b: torch.where((a > 0) & (b <= a), a, b), x, y,
          ops=["aten::gt.Scalar_out", "aten::le.Tensor_out", "aten::bitwise_and.Tensor_out",
               *where])  # fmt: skip


@pytest.fixture(scope="module")
def cmp_program() -> bytes:
    return oracle.export(lambda x, y: x > y, (torch.ones(4), torch.ones(4)))


def binary_edit(pte, op, a, b, out_dtype, out_shape=None) -> EditedProgram:
    """`op`(a, b): b an array (a new input) or a Python scalar."""
    edit = EditedProgram(pte)
    args = [edit.input(a)]
    if isinstance(b, np.ndarray):
        args.append(edit.input(b))
    elif b is not None:
        args.append(edit.double(b) if isinstance(b, float) else edit.int(b))
    edit.call_with_out(op, args, out_dtype, a.shape if out_shape is None else out_shape)
    return edit


F = np.array([1.5, np.nan, -0.0, 2.0, -np.inf, 3.0], np.float32)
G = np.array([1.5, 1.0, 0.0, -2.0, -np.inf, np.nan], np.float32)
K = np.array([0, 3, -1, 2, 0, 7], np.int32)


@pytest.mark.parametrize(
    "op,a,b,out_dtype",
    [
        ("aten::gt.Tensor_out", F, G, np.float32),
        ("aten::ne.Scalar_out", F, 1.5, np.int32),
        ("aten::le.Tensor_out", K, F, np.float16),
        ("aten::logical_or.out", F, K, np.int64),
        ("aten::logical_not.out", F, None, np.float32),
        ("aten::bitwise_xor.Tensor_out", K, K[::-1].copy(), np.float32),
        ("aten::bitwise_and.Scalar_out", K, 6, np.float64),
    ],
)
def test_out_dtypes(check_edit, cmp_program, op, a, b, out_dtype) -> None:
    """Out dtypes export does not emit (ExecuTorch writes 1 or 0, or the value, in any)."""
    check_edit(binary_edit(cmp_program, op, a, b, out_dtype))


@pytest.mark.parametrize(
    "op,a,b,out_dtype,error,reason",
    [
        ("aten::gt.Tensor_out", F, G[:4].copy(), np.bool_, "ShapeMismatch", "do not broadcast"),
        ("aten::eq.Tensor_out", F, G, np.bool_, "ShapeMismatch", "out has shape"),
        ("aten::bitwise_and.Tensor_out", F, K, np.float32, "DtypeMismatch", "Float"),
        ("aten::bitwise_or.Tensor_out", K, K, np.bool_, "DtypeMismatch", "cannot be cast"),
        ("aten::bitwise_xor.Scalar_out", K, 1.5, np.float32, "DtypeMismatch", "Float"),
        ("aten::bitwise_not.out", K, None, np.int64, "DtypeMismatch", "Int != out dtype Long"),
        ("aten::logical_not.out", F, None, np.bool_, "ShapeMismatch", "self shape [6] != out"),
    ],
)
def test_refused(refused, cmp_program, op, a, b, out_dtype, error, reason) -> None:
    shape = (3,) if reason in ("out has shape", "self shape [6] != out") else None
    name, why = refused(binary_edit(cmp_program, op, a, b, out_dtype, shape))
    assert name == error, why
    assert why.startswith(f"{op}: ") and reason in why, why


@pytest.mark.parametrize("value,dtype", [(300, np.int8), (1e39, np.float32), (np.nan, np.int32)])
def test_full_refuses_overflow(refused, cmp_program, value, dtype) -> None:
    edit = EditedProgram(cmp_program)
    fill = edit.double(value) if isinstance(value, float) else edit.int(value)
    edit.call_with_out("aten::full.out", [edit.int_list([2, 3]), fill], dtype, (2, 3))
    name, why = refused(edit)
    assert name == "InvalidArgument" and why.startswith("aten::full.out: fill_value overflows"), why
