"""Element-wise and reduction kernels against ExecuTorch: add/sub/mul (Tensor and Scalar
forms, broadcasting, alpha, dtype promotion), sum, mean, softmax, sigmoid."""

from __future__ import annotations

import kcase
import numpy as np
import pytest
import torch

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


def test_add_scalar_keeps_dtype(host) -> None:
    """ExecuTorch's add.Scalar_out needs the promoted dtype to be self's: int32 + 2.5 -> error."""
    c = kcase.CaseBuilder()
    x = c.tensor(np.arange(4, dtype=np.int32))
    out = c.tensor(dtype=np.float32, shape=(4,))
    c.call("aten::add.Scalar_out", [x, c.double(2.5), c.int(1), out, out])
    result = host.run_one(c)
    assert result.status == "DtypeMismatch" and "promote" in result.reason


def test_python_scalars_become_tensors(check) -> None:
    """What export makes of `x * 2 + 1.5`: a 0-d constant cast to Float, then mul/add."""
    check(lambda t: t * 2 + 1.5, data((2, 3, 4), torch.float32, 9), ops=[*MUL, *ADD])


def binary_case(op, a, b, out_shape, out_dtype, alpha=None):
    c = kcase.CaseBuilder()
    x, y = c.tensor(a), c.tensor(b)
    out = c.tensor(dtype=out_dtype, shape=out_shape)
    extra = [] if alpha is None else [alpha(c)]
    c.call(op, [x, y, *extra, out, out])
    return c


@pytest.mark.parametrize(
    "op,a,b,out_shape,out_dtype,alpha,error,reason",
    [
        ("aten::add.out", (3, 4), (5,), (3, 4), np.float32, 1, "ShapeMismatch", "do not broadcast"),
        ("aten::add.out", (3, 4), (4,), (3, 5), np.float32, 1, "ShapeMismatch", "expected [3, 4]"),
        ("aten::add.out", (3, 4), (4,), (3, 4), np.int32, 1, "DtypeMismatch", "cannot be cast"),
        ("aten::mul.out", (3, 4), (4,), (3, 4), np.bool_, None, "DtypeMismatch", "cannot be cast"),
        ("aten::add.out", (3, 4), (4,), (3, 4), np.float32, 2.5, "Ok", ""),
    ],
)
def test_binary_rejects(host, op, a, b, out_shape, out_dtype, alpha, error, reason) -> None:
    def make_alpha(c):
        return c.double(alpha) if isinstance(alpha, float) else c.int(alpha)

    case = binary_case(
        op, np.ones(a, np.float32), np.ones(b, np.float32), out_shape, out_dtype,
        None if alpha is None else make_alpha,
    )  # fmt: skip
    result = host.run_one(case)
    assert result.status == error, result.reason
    assert reason in result.reason


def test_float_alpha_rejected_for_integers(host) -> None:
    case = binary_case(
        "aten::add.out", np.ones(4, np.int32), np.ones(4, np.int32), (4,), np.int32,
        lambda c: c.double(0.5),
    )  # fmt: skip
    result = host.run_one(case)
    assert result.status == "InvalidArgument" and "alpha" in result.reason


def test_sub_rejects_bool(host) -> None:
    case = binary_case(
        "aten::sub.out",
        np.ones(4, np.bool_),
        np.ones(4, np.bool_),
        (4,),
        np.bool_,
        lambda c: c.int(1),
    )
    result = host.run_one(case)
    assert result.status == "DtypeMismatch" and "Bool" in result.reason


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
