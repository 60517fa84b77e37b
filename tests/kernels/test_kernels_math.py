"""Element-wise and reduction kernels against ExecuTorch: add/sub/mul (Tensor and Scalar
forms, broadcasting, alpha, dtype promotion), sum, amax/amin, any, mean, softmax, sigmoid."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support import koracle as oracle
from tests.support.kprogram import EditedProgram

ADD, SUB, MUL = ["aten::add.out"], ["aten::sub.out"], ["aten::mul.out"]


def data(shape, dtype, seed=0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=dtype) * 10
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=gen, dtype=torch.int64).to(dtype)


BROADCASTS = [
    ((4, 5), (4, 5)),
    ((4, 5), (5,)),
    ((4, 1), (1, 5)),
    ((2, 1, 3), (4, 1)),
    ((3, 4, 5), ()),  # a 0-d tensor
    ((1, 9), (7, 1)),
    ((2, 0, 3), (3,)),  # empty
]


@pytest.mark.parametrize("a_shape,b_shape", BROADCASTS)
@pytest.mark.parametrize("op,ops", [(torch.add, ADD), (torch.sub, SUB), (torch.mul, MUL)])
def test_broadcasting(check, a_shape, b_shape, op, ops) -> None:
    check(op, data(a_shape, torch.float32, 1), data(b_shape, torch.float32, 2), ops=ops)


@pytest.mark.parametrize(
    "a_dtype,b_dtype",
    [
        (torch.int8, torch.int8),  # wraps in int8
        (torch.int16, torch.int16),
        (torch.uint8, torch.int8),  # promotes to int16
        (torch.int32, torch.float32),
        (torch.int64, torch.int32),
        (torch.bool, torch.int16),
        (torch.float32, torch.float64),
        (torch.uint8, torch.uint8),
    ],
)
@pytest.mark.parametrize("op,ops", [(torch.add, ADD), (torch.mul, MUL)])
def test_promotion(check, a_dtype, b_dtype, op, ops) -> None:
    check(op, data((3, 17), a_dtype, 3), data((17,), b_dtype, 4), ops=ops)


def test_bool_add_and_mul(check) -> None:
    a, b = data((5, 6), torch.bool, 1), data((5, 6), torch.bool, 2)
    check(torch.add, a, b, ops=ADD)
    check(torch.mul, a, b, ops=MUL)


@pytest.mark.parametrize("alpha", [2, -3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int16])
def test_alpha(check, alpha, dtype) -> None:
    a, b = data((4, 8), dtype, 5), data((8,), dtype, 6)
    check(lambda x, y: torch.add(x, y, alpha=alpha), a, b, ops=ADD)
    check(lambda x, y: torch.sub(x, y, alpha=alpha), a, b, ops=SUB)


def test_float_alpha(check) -> None:
    a, b = data((4, 8), torch.float32, 5), data((4, 8), torch.float32, 6)
    check(lambda x, y: torch.add(x, y, alpha=0.37), a, b, ops=ADD)


SCALAR_FORMS = [
    ("add 2.5", lambda t: torch.ops.aten.add.Scalar(t, 2.5), ["aten::add.Scalar_out"]),
    ("add 3 alpha 2", lambda t: torch.ops.aten.add.Scalar(t, 3, alpha=2), ["aten::add.Scalar_out"]),
    ("sub 7", lambda t: torch.ops.aten.sub.Scalar(t, 7), ["aten::sub.Scalar_out"]),
    ("mul -4", lambda t: torch.ops.aten.mul.Scalar(t, -4), ["aten::mul.Scalar_out"]),
    ("mul 0.125", lambda t: torch.ops.aten.mul.Scalar(t, 0.125), ["aten::mul.Scalar_out"]),
]


@pytest.mark.parametrize(
    "name,fn,ops,dtype",
    [
        (name, fn, ops, dtype)
        for name, fn, ops in SCALAR_FORMS
        for dtype in (torch.float32, torch.int32, torch.int8)
        # ExecuTorch refuses int + float scalar: see test_add_scalar_keeps_dtype
        if not (name == "add 2.5" and dtype != torch.float32)
    ],
)
def test_scalar_forms(check, name, fn, ops, dtype) -> None:
    check(fn, data((3, 7), dtype, 8), ops=ops)


@pytest.fixture(scope="module")
def add_program() -> bytes:
    return oracle.export(torch.add, (torch.ones(4), torch.ones(4)))


def test_add_scalar_keeps_dtype(refused, add_program) -> None:
    """ExecuTorch's add.Scalar_out needs the promoted dtype to be self's: int32 + 2.5 -> error."""
    edit = EditedProgram(add_program)
    args = [edit.input(np.arange(1, 5, dtype=np.int32)), edit.double(2.5), edit.int(1)]
    edit.call_with_out("aten::add.Scalar_out", args, np.float32, (4,))
    name, why = refused(edit)
    assert name == "DtypeMismatch" and "promote" in why


def test_python_scalars_become_tensors(check) -> None:
    """What export makes of `x * 2 + 1.5`: a 0-d constant cast to Float, then mul/add."""
    check(lambda t: t * 2 + 1.5, data((2, 3, 4), torch.float32, 9), ops=[*MUL, *ADD])


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_rsub_and_python_scalars(check, dtype) -> None:
    """`1 - t` and `t - 3`: export's rsub becomes a cast 0-d constant and sub.out."""
    x = data((4, 5), dtype, 10)
    check(lambda t: 1 - t, x, ops=SUB)
    check(lambda t: (t - 3, torch.rsub(t, 2, alpha=3)), x, ops=SUB)


def binary_edit(pte: bytes, op: str, a, b, out_shape, out_dtype, alpha=None) -> EditedProgram:
    """`op`(a, b[, alpha]) on new inputs into a new out (alpha: an int is an Int, a float a
    Double)."""
    edit = EditedProgram(pte)
    args = [edit.input(a), edit.input(b)]
    if alpha is not None:
        args.append(edit.double(alpha) if isinstance(alpha, float) else edit.int(alpha))
    edit.call_with_out(op, args, out_dtype, out_shape)
    return edit


@pytest.mark.parametrize(
    "op,a,b,out_shape,out_dtype,alpha,error,reason",
    [
        ("aten::add.out", (3, 4), (5,), (3, 4), np.float32, 1, "ShapeMismatch", "do not broadcast"),
        ("aten::add.out", (3, 4), (4,), (3, 5), np.float32, 1, "ShapeMismatch", "expected [3, 4]"),
        ("aten::add.out", (3, 4), (4,), (3, 4), np.int32, 1, "DtypeMismatch", "cannot be cast"),
        ("aten::mul.out", (3, 4), (4,), (3, 4), np.bool_, None, "DtypeMismatch", "cannot be cast"),
    ],
)
def test_binary_rejects(
    refused, add_program, op, a, b, out_shape, out_dtype, alpha, error, reason
) -> None:
    ones = np.ones(a, np.float32), np.ones(b, np.float32)
    name, why = refused(binary_edit(add_program, op, *ones, out_shape, out_dtype, alpha))
    assert name == error, why
    assert why.startswith(f"{op}: ") and reason in why, why


def test_float_alpha_for_floats(host_run, add_program) -> None:
    a, b = np.full((3, 4), 2, np.float32), np.arange(4, dtype=np.float32)
    edit = binary_edit(add_program, "aten::add.out", a, b, (3, 4), np.float32, 2.5)
    (got,) = host_run(edit.to_bytes(), edit.inputs).outputs()
    np.testing.assert_array_equal(got, a + b * np.float32(2.5))


def test_float_alpha_rejected_for_integers(refused, add_program) -> None:
    ones = np.ones(4, np.int32)
    edit = binary_edit(add_program, "aten::add.out", ones, ones, (4,), np.int32, 0.5)
    name, why = refused(edit)
    assert name == "InvalidArgument" and "alpha" in why


def test_sub_rejects_bool(refused, add_program) -> None:
    ones = np.ones(4, np.bool_)
    name, why = refused(binary_edit(add_program, "aten::sub.out", ones, ones, (4,), np.bool_, 1))
    assert name == "DtypeMismatch" and "Bool" in why


@pytest.mark.parametrize(
    "dims,keepdim", [([1], True), ([-1], False), ([0, 2], False), ([], False), ([2, 0], True)]
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int8, torch.int32, torch.bool])
def test_sum(check, dims, keepdim, dtype) -> None:
    x = data((3, 4, 5), dtype, 11)
    fn = (lambda t: t.sum()) if dims == [] else (lambda t: t.sum(dim=dims, keepdim=keepdim))
    check(fn, x, ops=["aten::sum.IntList_out"])


def test_sum_with_dtype_and_empty(check) -> None:
    check(lambda t: t.sum(dim=1, dtype=torch.float64), data((3, 4), torch.float32, 2),
          ops=["aten::sum.IntList_out"])  # fmt: skip
    check(lambda t: t.sum(dim=1), torch.zeros(3, 0), ops=["aten::sum.IntList_out"])


@pytest.mark.parametrize("which", ["amax", "amin"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int8, torch.int16, torch.int64, torch.bool])
@pytest.mark.parametrize(
    "dims,keepdim", [([1], True), ([-1], False), ([0, 2], False), ([], False), ([2, 0], True)]
)
def test_amax_amin(check, which, dtype, dims, keepdim) -> None:
    x = data((3, 4, 5), dtype, 19)
    fn = getattr(torch, which)
    check(lambda t: fn(t, dim=dims, keepdim=keepdim), x, ops=[f"aten::{which}.out"])


@pytest.mark.parametrize("which", ["amax", "amin"])
def test_amax_amin_propagate_nan(check, which) -> None:
    x = data((3, 4), torch.float32, 20)
    x[1, 2] = float("nan")
    fn = getattr(torch, which)
    check(lambda t: fn(t, dim=1), x, ops=[f"aten::{which}.out"])


@pytest.mark.parametrize("dtype", [torch.float32, torch.int8, torch.uint8, torch.bool])
@pytest.mark.parametrize(
    "how", ["all", "dim1", "dim-1-keep", "dims02", "dims-none-keep", "mostly-zero"]
)
def test_any(check, dtype, how) -> None:
    """any over everything, one dim and several (any.all_out, .out, .dims_out); zeros with a
    few non-zeros, so both answers occur, and NaN counts as non-zero."""
    x = (data((3, 4, 5), torch.float32, 17) > 1.2).to(dtype)
    if how == "mostly-zero" and dtype == torch.float32:
        x = torch.zeros(3, 4, 5)
        x[1, 2, 3] = float("nan")
    fn, op = {
        "all": (lambda t: t.any(), "aten::any.all_out"),
        "dim1": (lambda t: t.any(dim=1), "aten::any.out"),
        "dim-1-keep": (lambda t: t.any(dim=-1, keepdim=True), "aten::any.out"),
        "dims02": (lambda t: t.any(dim=(0, 2)), "aten::any.dims_out"),
        "dims-none-keep": (lambda t: t.any(dim=(0, 1, 2), keepdim=True), "aten::any.dims_out"),
        "mostly-zero": (lambda t: t.any(dim=2), "aten::any.out"),
    }[how]
    check(fn, x, ops=[op])


@pytest.mark.parametrize("dims,keepdim", [([1], True), ([-1], False), ([0, 2], False)])
def test_mean(check, dims, keepdim) -> None:
    check(lambda t: t.mean(dim=dims, keepdim=keepdim), data((3, 4, 5), torch.float32, 12),
          ops=["aten::mean.out"])  # fmt: skip


def test_mean_all(check) -> None:
    check(lambda t: t.mean(), data((6, 7), torch.float32, 13), ops=["aten::mean.dtype_out"])


@pytest.mark.parametrize(
    "shape,dim", [((4, 6), -1), ((4, 6), 0), ((2, 3, 5), 1), ((1, 1), -1), ((7,), 0)]
)
def test_softmax(check, shape, dim) -> None:
    check(
        lambda t: torch.softmax(t, dim=dim),
        data(shape, torch.float32, 14),
        ops=["aten::_softmax.out"],
    )


def test_softmax_large_values(check) -> None:
    x = torch.tensor([[1000.0, 999.0, -1000.0], [-50.0, -50.0, -50.0]])
    check(lambda t: torch.softmax(t, dim=-1), x, ops=["aten::_softmax.out"])


@pytest.mark.parametrize("dtype", [torch.float32, torch.int16, torch.bool])
def test_sigmoid(check, dtype) -> None:
    x = (
        data((5, 9), dtype, 15)
        if dtype != torch.int16
        else torch.arange(-20, 25, dtype=torch.int16)
    )
    check(torch.sigmoid, x, ops=["aten::sigmoid.out"])


def test_zero_dim_tensors(check) -> None:
    x, y = torch.tensor(3.25), torch.tensor(-1.5)
    check(lambda a, b: (a * b, a + b, torch.sigmoid(a), a.sum()), x, y,
          ops=[*MUL, *ADD, "aten::sigmoid.out", "aten::sum.IntList_out"])  # fmt: skip


# Half and BFloat16 compute in Float and round the result to the 16-bit type (ties to even).
@pytest.mark.parametrize("dtype", oracle.REDUCED)
@pytest.mark.parametrize("op,ops", [(torch.add, ADD), (torch.sub, SUB), (torch.mul, MUL)])
def test_reduced_float_edges(check, dtype, op, ops) -> None:
    a, b = oracle.reduced_edges(dtype)
    check(op, a, b, ops=ops, rtol=0)
    check(op, a.reshape(4, 8), b[:8], ops=ops, rtol=0)  # broadcast


@pytest.mark.parametrize("dtype", oracle.REDUCED)
def test_reduced_float_alpha_and_scalars(check, dtype) -> None:
    a, b = oracle.reduced_edges(dtype)
    check(lambda x, y: torch.add(x, y, alpha=3), a, b, ops=ADD, rtol=0)
    check(lambda x, y: torch.sub(x, y, alpha=0.37), a, b, ops=SUB, rtol=0)
    check(lambda x: torch.ops.aten.add.Scalar(x, 2.5, alpha=2), a, ops=["aten::add.Scalar_out"],
          rtol=0)  # fmt: skip
    check(lambda x: torch.ops.aten.mul.Scalar(x, 0.1), a, ops=["aten::mul.Scalar_out"], rtol=0)
    check(lambda x: torch.ops.aten.sub.Scalar(x, 7), a, ops=["aten::sub.Scalar_out"], rtol=0)


@pytest.mark.parametrize(
    "a_dtype,b_dtype",
    [
        (torch.float16, torch.float32),  # -> Float
        (torch.float16, torch.bfloat16),  # -> Float
        (torch.float16, torch.int32),  # -> Half
        (torch.bool, torch.float16),  # -> Half
        (torch.float16, torch.float64),  # -> Double
    ],
)
def test_reduced_float_promotion(check, a_dtype, b_dtype) -> None:
    a = (
        data((3, 17), a_dtype, 3)
        if a_dtype != torch.float16
        else data((3, 17), torch.float32, 3).half()
    )
    b = data((17,), b_dtype, 4)
    if b_dtype == torch.bfloat16:  # bfloat16 is not a program input here: make it in the program
        check(lambda x, y: torch.add(x, y.to(torch.bfloat16)), a, b.float(), ops=ADD)
        return
    check(torch.add, a, b, ops=ADD, rtol=0)
    check(torch.mul, a, b, ops=MUL, rtol=0)


@pytest.mark.parametrize("dtype", oracle.REDUCED)
def test_reduced_float_sigmoid(check, dtype) -> None:
    a, b = oracle.reduced_edges(dtype)
    check(torch.sigmoid, torch.cat([a, b]), ops=["aten::sigmoid.out"], rtol=0)


@pytest.mark.parametrize("dtype", oracle.REDUCED)
def test_reduced_float_sum_and_mean(check, dtype) -> None:
    """A Half / BFloat16 out accumulates in float and rounds once (ExecuTorch's ACC)."""
    x = data((3, 40, 5), dtype, 16) * 100
    for dims in ([1], [-1], [0, 2]):
        check(lambda t, d=dims: t.sum(dim=d), x, ops=["aten::sum.IntList_out"], rtol=0)
        check(lambda t, d=dims: t.mean(dim=d), x, ops=["aten::mean.out"], rtol=0)
    check(lambda t: t.sum(dim=1, dtype=torch.float32), x, ops=["aten::sum.IntList_out"], rtol=0)
    check(lambda t: t.mean(), x, ops=["aten::mean.dtype_out"], rtol=0)


@pytest.mark.parametrize("dtype", oracle.REDUCED)
def test_reduced_float_softmax(check, dtype) -> None:
    """Half / BFloat16: the max in the dtype, exp and the sum in float, one rounding."""
    for shape, dim in [((4, 6), -1), ((2, 3, 5), 1)]:
        x = data(shape, dtype, 14)
        check(lambda t, d=dim: torch.softmax(t, dim=d), x, ops=["aten::_softmax.out"], rtol=0)
