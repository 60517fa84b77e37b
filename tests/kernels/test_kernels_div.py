"""Division against ExecuTorch: div.out (true division, broadcasting, integer inputs computed
in Float), div.out_mode (trunc/floor for integers and floats, Python's floor-division
corrections, zero divisors), div.Scalar_out and div.Scalar_mode_out; malformed calls."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support import koracle as oracle
from tests.support.kprogram import EditedProgram

DIV, DIV_MODE = ["aten::div.out"], ["aten::div.out_mode"]
DIV_SCALAR, DIV_SCALAR_MODE = ["aten::div.Scalar_out"], ["aten::div.Scalar_mode_out"]


def data(shape, dtype, seed=0, nonzero=False) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        x = torch.randint(0, 2, shape, generator=gen).bool()
        return torch.ones(shape, dtype=torch.bool) if nonzero else x
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=dtype) * 10
    info = torch.iinfo(dtype)
    lo, hi = (1, 20) if nonzero and dtype == torch.uint8 else (info.min, info.max)
    x = torch.randint(lo, hi, shape, generator=gen, dtype=torch.int64)
    if nonzero:
        # small divisors of both signs (-1 included), never 0
        x = torch.where(x == 0, 1, x % 23 - 11).clamp(info.min, info.max)
        x = torch.where(x == 0, 7, x)
    return x.to(dtype)


SPECIAL_A = [7.5, -7.5, 5.0, -0.0, 0.0, 1e30, np.inf, -np.inf, np.nan, 1.0, -1.0, 6.0, -6.0]
SPECIAL_B = [2.0, 2.0, -3.0, 0.0, -0.0, 3e-9, 2.0, np.inf, 1.0, np.inf, -np.inf, -4.0, 4.0]


def specials(dtype=torch.float32):
    return (torch.tensor(SPECIAL_A, dtype=torch.float64).to(dtype),
            torch.tensor(SPECIAL_B, dtype=torch.float64).to(dtype))  # fmt: skip


@pytest.mark.parametrize(
    "a_shape,b_shape", [((4, 5), (4, 5)), ((4, 5), (5,)), ((2, 1, 3), (4, 1)), ((3, 4), ()),
                        ((2, 0, 3), (3,))]
)  # fmt: skip
def test_div_broadcasting(check, a_shape, b_shape) -> None:
    check(torch.div, data(a_shape, torch.float32, 1), data(b_shape, torch.float32, 2), ops=DIV)


@pytest.mark.parametrize(
    "a_dtype,b_dtype",
    [(torch.int32, torch.int32), (torch.int8, torch.int16), (torch.int64, torch.float32),
     (torch.float32, torch.float64), (torch.uint8, torch.bool), (torch.float64, torch.float64)],
)  # fmt: skip
def test_div_promotion(check, a_dtype, b_dtype) -> None:
    check(torch.div, data((3, 17), a_dtype, 3), data((17,), b_dtype, 4), ops=DIV)


def test_div_specials(check) -> None:
    check(torch.div, *specials(), ops=DIV)


MODES = ["trunc", "floor"]
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", INTS)
def test_div_mode_int(check, mode, dtype) -> None:
    a, b = data((6, 9), dtype, 5), data((9,), dtype, 6, nonzero=True)
    check(lambda x, y: torch.div(x, y, rounding_mode=mode), a, b, ops=DIV_MODE)


@pytest.mark.parametrize("mode", MODES)
def test_div_mode_int_min_by_minus_one(check, mode) -> None:
    """int8 MIN / -1 wraps (ExecuTorch computes int8 in int); int32 MIN / -1 is not covered
    here (x86 traps on it in ExecuTorch; the kernel wraps)."""
    a = torch.tensor([-128, -128, 127, -7, 7, 0], dtype=torch.int8)
    b = torch.tensor([-1, 1, -1, 2, -2, -5], dtype=torch.int8)
    check(lambda x, y: torch.div(x, y, rounding_mode=mode), a, b, ops=DIV_MODE)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_div_mode_float(check, mode, dtype) -> None:
    check(lambda x, y: torch.div(x, y, rounding_mode=mode), *specials(dtype), ops=DIV_MODE)
    a, b = data((5, 8), dtype, 7), data((5, 1), dtype, 8)
    check(lambda x, y: torch.div(x, y, rounding_mode=mode), a, b, ops=DIV_MODE)


def test_floor_divide_operator(check) -> None:
    a, b = data((4, 6), torch.int32, 9), data((6,), torch.int32, 10, nonzero=True)
    check(lambda x, y: x // y, a, b, ops=DIV_MODE)


@pytest.fixture(scope="module")
def div_program() -> bytes:
    return oracle.export(torch.div, (torch.ones(4), torch.ones(4)))


def mode_edit(pte, op, a, b, mode, out_dtype, out_shape=None) -> EditedProgram:
    """`op`(a, b, mode): b an array (a new input) or a Python scalar; mode a str or None."""
    edit = EditedProgram(pte)
    args = [edit.input(a)]
    if isinstance(b, np.ndarray):
        args.append(edit.input(b))
    else:
        args.append(edit.double(b) if isinstance(b, float) else edit.int(b))
    if mode != "no mode argument":
        args.append(edit.none() if mode is None else edit.string(mode))
    if out_shape is None:
        try:
            out_shape = np.broadcast_shapes(a.shape, getattr(b, "shape", ()))
        except ValueError:  # a call the kernel must refuse
            out_shape = a.shape
    edit.call_with_out(op, args, out_dtype, out_shape)
    return edit


L = np.array([2**60 + 1, -(2**60) - 3, 7, -7, 2**53 + 1, -(2**62) + 1], np.int64)
LB = np.array([1, 1, 2, 2, 1, 3], np.int64)


@pytest.mark.parametrize("mode", MODES)
def test_div_mode_long_like_executorch(check_edit, div_program, mode) -> None:
    """ExecuTorch's Long trunc goes through double (2**60 + 1 -> 2**60); floor is exact."""
    check_edit(mode_edit(div_program, "aten::div.out_mode", L, LB, mode, np.int64))


def test_div_mode_none_and_float_out(check_edit, div_program) -> None:
    a, b = np.array(SPECIAL_A, np.float32), np.array(SPECIAL_B, np.float32)
    check_edit(mode_edit(div_program, "aten::div.out_mode", a, b, None, np.float32))
    i, j = np.array([7, -7, 5, 0, -128], np.int32), np.array([2, 2, -3, 1, -1], np.int32)
    check_edit(
        mode_edit(div_program, "aten::div.out_mode", i, j, "floor", np.float32)
    )  # Int -> Float out
    check_edit(mode_edit(div_program, "aten::div.out", i, j, "no mode argument", np.float64))


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: torch.ops.aten.div.Scalar(t, 3.0),
        lambda t: torch.ops.aten.div.Scalar(t, -0.0),
        lambda t: torch.ops.aten.div.Scalar(t, 7),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int8])
def test_div_scalar(check, fn, dtype) -> None:
    x = specials(dtype)[0] if dtype.is_floating_point else data((3, 7), dtype, 11)
    check(fn, x, ops=DIV_SCALAR)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "divisor,dtype",
    [
        (d, t)
        for d in (3, -3, -1, 2.5)
        for t in (torch.float32, torch.int32, torch.int8, torch.uint8)
    ]
    + [(-0.0, torch.float32)],  # +-inf by a's sign, not IEEE's
)
def test_div_scalar_mode(check, mode, divisor, dtype) -> None:
    x = specials(dtype)[0] if dtype.is_floating_point else data((3, 7), dtype, 12)
    fn = lambda t: torch.ops.aten.div.Scalar_mode(t, divisor, rounding_mode=mode)  # noqa: E731
    check(fn, x, ops=DIV_SCALAR_MODE)


def test_div_scalar_mode_wrapping_divisor(check_edit, div_program) -> None:
    """300 as int8 is 44 (ExecuTorch casts the scalar without a range check); None = true
    division."""
    x = np.array([7, -7, 5, 0, -128, 127], np.int8)
    check_edit(mode_edit(div_program, "aten::div.Scalar_mode_out", x, 300, "trunc", np.int8))
    check_edit(mode_edit(div_program, "aten::div.Scalar_mode_out", x, 2, None, np.float32))


@pytest.mark.parametrize(
    "op,a,b,mode,out_dtype,error,reason",
    [
        ("aten::div.out", np.ones(4, np.int32), np.ones(4, np.int32), "no mode argument", np.int32,
         "DtypeMismatch", "not floating"),
        ("aten::div.out", np.ones(4, np.float32), np.ones(3, np.float32), "no mode argument",
         np.float32, "ShapeMismatch", "do not broadcast"),
        ("aten::div.out_mode", np.ones(4, np.float32), np.ones(4, np.float32), "round", np.float32,
         "InvalidArgument", "rounding_mode"),
        ("aten::div.out_mode", np.arange(1, 5, dtype=np.int32), np.array([1, 2, 0, 1], np.int32),
         "floor", np.int32, "InvalidArgument", "division by zero"),
        ("aten::div.out_mode", np.ones(4, np.bool_), np.ones(4, np.bool_), "trunc", np.int32,
         "DtypeMismatch", "Bool"),
        ("aten::div.out_mode", np.ones(4, np.float32), np.ones(4, np.float32), "trunc", np.int32,
         "DtypeMismatch", "cannot be cast"),
        ("aten::div.Scalar_out", np.ones(4, np.int32), 2, "no mode argument", np.float64,
         "DtypeMismatch", "!= out dtype"),
        ("aten::div.Scalar_mode_out", np.ones(4, np.int32), 0, "trunc", np.int32,
         "InvalidArgument", "division by zero"),
        ("aten::div.Scalar_mode_out", np.ones(4, np.int8), 256, "trunc", np.int8,
         "InvalidArgument", "divisor is 0"),
        ("aten::div.Scalar_mode_out", np.ones(4, np.float32), 2.0, "ceil", np.float32,
         "InvalidArgument", "rounding_mode"),
    ],
)  # fmt: skip
def test_div_refused(refused, div_program, op, a, b, mode, out_dtype, error, reason) -> None:
    name, why = refused(mode_edit(div_program, op, a, b, mode, out_dtype))
    assert name == error, why
    assert why.startswith(f"{op}: ") and reason in why, why


def test_div_mode_rejects_a_non_string_mode(refused, div_program) -> None:
    edit = EditedProgram(div_program)
    args = [edit.input(np.ones(4, np.float32)), edit.input(np.ones(4, np.float32)), edit.int(1)]
    edit.call_with_out("aten::div.out_mode", args, np.float32, (4,))
    name, why = refused(edit)
    assert name == "InvalidArgument" and "rounding_mode (argument 2) must be String" in why, why


@pytest.mark.parametrize("dtype", oracle.REDUCED)
def test_div_reduced_float(check, dtype) -> None:
    """Half and BFloat16 divide in Float and round to the 16-bit type; rounded modes too."""
    a, b = oracle.reduced_edges(dtype)
    sa, sb = specials(dtype)
    check(torch.div, torch.cat([a, sa]), torch.cat([b, sb]), ops=DIV, rtol=0)
    for mode in MODES:
        check(lambda x, y, m=mode: torch.div(x, y, rounding_mode=m), sa, sb, ops=DIV_MODE, rtol=0)
    check(lambda t: torch.ops.aten.div.Scalar(t, 3.0), a, ops=DIV_SCALAR)
    fn = lambda t: torch.ops.aten.div.Scalar_mode(t, -3, rounding_mode="floor")  # noqa: E731
    check(fn, sa, ops=DIV_SCALAR_MODE, rtol=0)
