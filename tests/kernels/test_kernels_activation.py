"""Activations and unary maps against ExecuTorch: relu, clamp (Scalar and Tensor bounds),
hardtanh, exp, _log_softmax; hardswish and silu (ExecuTorch has no kernel for them: held to
ExecuTorch running export's decomposition of the same function, and to PyTorch); NaN,
signed zeros, dtype promotion and the bounds ExecuTorch refuses."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support import koracle as oracle
from tests.support.kprogram import EditedProgram

F = torch.nn.functional
SPECIAL = [np.nan, -0.0, 0.0, -np.inf, np.inf, 1e30, -1e30, 5.9, 6.0, -3.0, -2.9999, 3.0]


def data(shape, dtype, seed=0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=dtype) * 5
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=gen, dtype=torch.int64).to(dtype)


def special(dtype=torch.float32) -> torch.Tensor:
    """Non-finite values, signed zeros and the activations' break points, then random ones."""
    x = torch.cat([torch.tensor(SPECIAL, dtype=torch.float64), data((33,), torch.float64, 3)])
    return x.to(dtype)


REAL = [
    torch.float32,
    torch.float64,
    torch.int8,
    torch.uint8,
    torch.int16,
    torch.int32,
    torch.int64,
]


@pytest.mark.parametrize("dtype", REAL)
def test_relu(check, dtype) -> None:
    x = special(dtype) if dtype.is_floating_point else data((5, 7), dtype, 1)
    check(torch.relu, x, ops=["aten::relu.out"])


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("bounds", [(-1.0, 1.0), (0.0, 6.0), (-2.5, 3.0)])
def test_hardtanh(check, dtype, bounds) -> None:
    x = special(dtype) if dtype.is_floating_point else data((5, 7), dtype, 2)
    lo, hi = bounds
    if not dtype.is_floating_point:
        lo, hi = (max(int(lo), 0), int(hi)) if dtype == torch.uint8 else (int(lo), int(hi))
    check(lambda t, lo=lo, hi=hi: F.hardtanh(t, lo, hi), x, ops=["aten::hardtanh.out"])


def test_relu6_is_hardtanh(check) -> None:
    check(F.relu6, special(), ops=["aten::hardtanh.out"])


CLAMPS = [
    ("both", lambda t: torch.clamp(t, -0.5, 2.0)),
    ("min", lambda t: torch.clamp(t, min=0.0)),
    ("max", lambda t: torch.clamp(t, max=-0.0)),
    ("inverted", lambda t: torch.clamp(t, 3.0, 1.0)),  # min > max: everything is max
    ("nan", lambda t: torch.clamp(t, min=float("nan"))),
    ("inf", lambda t: torch.clamp(t, -float("inf"), float("inf"))),
]


@pytest.mark.parametrize("name,fn", CLAMPS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_clamp_float(check, name, fn, dtype) -> None:
    check(fn, special(dtype), ops=["aten::clamp.out"])


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_clamp_int(check, dtype) -> None:
    lo, hi = (3, 200) if dtype == torch.uint8 else (-100, 27)
    check(lambda t: torch.clamp(t, lo, hi), data((4, 9), dtype, 4), ops=["aten::clamp.out"])
    check(lambda t: torch.clamp(t, max=hi), data((33,), dtype, 5), ops=["aten::clamp.out"])


@pytest.mark.parametrize("n", [1, 4, 15, 16, 17, 33, 100])
def test_clamp_helium_tails(check, n) -> None:
    """Lengths around the 4-lane (float32) and 16-lane (int8) Helium steps."""
    check(
        lambda t: torch.clamp(t, -1.0, 1.5), data((n,), torch.float32, n), ops=["aten::clamp.out"]
    )
    check(lambda t: torch.clamp(t, -7, 9), data((n,), torch.int8, n), ops=["aten::clamp.out"])


@pytest.fixture(scope="module")
def clamp_program() -> bytes:
    return oracle.export(lambda t: torch.clamp(t, 0.0, 1.0), (torch.ones(4),))


def scalar_value(edit: EditedProgram, v) -> int:
    if v is None:
        return edit.none()
    if isinstance(v, bool):
        return edit.bool(v)
    return edit.double(v) if isinstance(v, float) else edit.int(v)


def unary_edit(pte, op, x, extra, out_dtype, out_shape=None) -> EditedProgram:
    edit = EditedProgram(pte)
    args = [edit.input(x), *[scalar_value(edit, v) for v in extra]]
    edit.call_with_out(op, args, out_dtype, x.shape if out_shape is None else out_shape)
    return edit


U8 = np.array([7, 249, 5, 0, 255, 128], np.uint8)
I32 = np.array([7, -7, 5, 0, 2**31 - 1, -(2**31)], np.int32)
F16 = torch.tensor([*SPECIAL, 65504.0, -65504.0, 6e-8, 0.1]).half().numpy()  # 1e30 -> inf


@pytest.mark.parametrize(
    "op,x,bounds,out_dtype",
    [
        # clamp: the common dtype promotes with the scalars (Bool + int -> Long, int + float
        # -> Float); a Bool bound on a Long tensor
        ("aten::clamp.out", np.array([True, False, True]), (0, None), np.int64),
        ("aten::clamp.out", np.array([True, False, True]), (True, None), np.bool_),
        ("aten::clamp.out", I32, (0.5, None), np.float32),
        ("aten::clamp.out", I32.astype(np.int64), (True, 5), np.int64),
        # hardtanh: an integer bound wraps into an unsigned dtype (-255 -> 1), a float bound
        # truncates toward zero; Bool bounds
        ("aten::hardtanh.out", U8, (-255, 6), np.uint8),
        ("aten::hardtanh.out", I32, (-2.5, 2.5), np.int32),
        ("aten::hardtanh.out", np.array(SPECIAL, np.float32), (False, True), np.float32),
        ("aten::hardtanh.out", np.array(SPECIAL, np.float32), (-np.inf, 0.0), np.float32),
        ("aten::hardtanh.out", np.array(SPECIAL, np.float32), (np.nan, 0.0), np.float32),
        # Half: hardtanh's bounds round to Half (0.1, 65504 fits), clamp's stay float
        ("aten::hardtanh.out", F16, (-65504.0, 0.1), np.float16),
        ("aten::hardtanh.out", F16, (-np.inf, 1e-8), np.float16),
        ("aten::clamp.out", F16, (0.1, 65504.0), np.float16),
        ("aten::clamp.out", torch.from_numpy(I32).half().numpy(), (None, np.inf), np.float16),
    ],
)
def test_bounds_like_executorch(check_edit, clamp_program, op, x, bounds, out_dtype) -> None:
    check_edit(unary_edit(clamp_program, op, x, bounds, out_dtype))


@pytest.mark.parametrize(
    "op,x,bounds,out_dtype,error,reason",
    [
        ("aten::clamp.out", I32, (None, None), np.int32, "InvalidArgument", "at least one"),
        ("aten::clamp.out", I32, (0.5, None), np.int32, "DtypeMismatch", "!= out dtype"),
        ("aten::clamp.out", I32.astype(np.int8), (300, None), np.int8, "InvalidArgument",
         "min is out"),
        ("aten::clamp.out", U8, (-1, None), np.uint8, "InvalidArgument", "min is out"),
        ("aten::clamp.out", I32.astype(np.float32), (None, 1e39), np.float32, "InvalidArgument",
         "max is out"),
        ("aten::clamp.out", I32.astype(np.float32), (0.0, 1.0), np.float32, "ShapeMismatch",
         "shape"),
        ("aten::hardtanh.out", U8, (-5.0, 6), np.uint8, "InvalidArgument", "min_val overflows"),
        ("aten::hardtanh.out", U8, (-256, 6), np.uint8, "InvalidArgument", "min_val overflows"),
        ("aten::hardtanh.out", I32.astype(np.int8), (0, 300), np.int8, "InvalidArgument",
         "max_val overflows"),
        ("aten::hardtanh.out", I32, (np.nan, 6), np.int32, "InvalidArgument", "min_val overflows"),
        ("aten::hardtanh.out", I32.astype(np.float32), (-1e39, 0.0), np.float32, "InvalidArgument",
         "min_val overflows"),
        ("aten::hardtanh.out", I32 > 0, (0, 1), np.bool_, "DtypeMismatch", "does not take"),
        ("aten::hardtanh.out", I32, (0, 1), np.int64, "DtypeMismatch", "dtype"),
        ("aten::relu.out", I32 > 0, (), np.bool_, "DtypeMismatch", "does not take"),
        ("aten::relu.out", I32, (), np.float32, "DtypeMismatch", "dtype"),
        ("aten::hardtanh.out", F16, (-70000, 0.0), np.float16, "InvalidArgument",
         "min_val overflows"),
        ("aten::hardtanh.out", F16, (0.0, 65505.0), np.float16, "InvalidArgument",
         "max_val overflows"),
        ("aten::clamp.out", F16, (None, 1e5), np.float16, "InvalidArgument", "max is out"),
    ],
)  # fmt: skip
def test_bounds_refused(refused, clamp_program, op, x, bounds, out_dtype, error, reason) -> None:
    out_shape = (5,) if error == "ShapeMismatch" else None
    name, why = refused(unary_edit(clamp_program, op, x, bounds, out_dtype, out_shape))
    assert name == error, why
    assert why.startswith(f"{op}: ") and reason in why, why


CLAMP_T = ["aten::clamp.Tensor_out"]


@pytest.mark.parametrize(
    "shapes", [((4, 5), (4, 5), (4, 5)), ((4, 5), (5,), (4, 1)), ((2, 1, 3), (4, 1), ()),
               ((3,), (2, 3), (2, 1)), ((0, 3), (3,), (1,))]
)  # fmt: skip
def test_clamp_tensor(check, shapes) -> None:
    x, lo, hi = (data(s, torch.float32, k) for k, s in enumerate(shapes))
    check(lambda t, a, b: torch.clamp(t, a, b), x, lo, hi - 3, ops=CLAMP_T)


def test_clamp_tensor_one_bound_and_promotion(check) -> None:
    x = data((3, 8), torch.int16, 1)
    check(lambda t, a: torch.clamp(t, min=a), x, data((8,), torch.int16, 2), ops=CLAMP_T)
    check(lambda t, b: torch.clamp(t, max=b), x, data((3, 1), torch.int8, 3), ops=CLAMP_T)
    # int16 with float32 bounds: computes and returns Float
    check(lambda t, a, b: torch.clamp(t, a, b), x, data((8,), torch.float32, 4) * 1000,
          data((8,), torch.float32, 5) * 1000 + 10000, ops=CLAMP_T)  # fmt: skip


def test_clamp_tensor_nan_bounds(check) -> None:
    x = special()
    lo = torch.full_like(x, -1.0)
    lo[3] = float("nan")
    hi = torch.ones_like(x)
    hi[5] = float("nan")
    check(lambda t, a, b: torch.clamp(t, a, b), x, lo, hi, ops=CLAMP_T)


def test_clamp_tensor_castable_out(check_edit, clamp_program) -> None:
    """int32 bounds, Float out (promoted Int casts to Float): ExecuTorch converts on store."""
    edit = EditedProgram(clamp_program)
    args = [edit.input(I32), edit.input(np.full(6, -6, np.int32)), edit.none()]
    edit.call_with_out("aten::clamp.Tensor_out", args, np.float32, (6,))
    check_edit(edit)


@pytest.mark.parametrize(
    "x_dtype,lo,hi,out_dtype,out_shape,error,reason",
    [
        (np.float32, None, None, np.float32, (6,), "InvalidArgument", "at least one"),
        (np.float32, (6,), None, np.int32, (6,), "DtypeMismatch", "cannot be cast"),
        (np.float32, (5,), None, np.float32, (6,), "ShapeMismatch", "do not broadcast"),
        (np.float32, (2, 6), None, np.float32, (6,), "ShapeMismatch", "expected [2, 6]"),
    ],
)
def test_clamp_tensor_refused(refused, clamp_program, x_dtype, lo, hi, out_dtype, out_shape,
                              error, reason) -> None:  # fmt: skip
    edit = EditedProgram(clamp_program)
    bound = [edit.none() if s is None else edit.input(np.ones(s, np.float32)) for s in (lo, hi)]
    args = [edit.input(np.arange(1, 7).astype(x_dtype)), *bound]
    edit.call_with_out("aten::clamp.Tensor_out", args, out_dtype, out_shape)
    name, why = refused(edit)
    assert name == error, why
    assert reason in why, why


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.int32, torch.bool, torch.uint8]
)
def test_exp(check, dtype) -> None:
    x = special(dtype) if dtype.is_floating_point else data((6, 5), dtype, 6)
    if dtype in (torch.int32,):
        x = torch.arange(-100, 100, 7, dtype=dtype)
    check(torch.exp, x, ops=["aten::exp.out"])


@pytest.mark.parametrize("fn", [torch.sin, torch.cos])
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.int32, torch.bool, torch.float16]
)
def test_sin_cos(check, fn, dtype) -> None:
    """Computed in float (Double in double), out floating; NaN/inf give NaN."""
    x = special(dtype) if dtype.is_floating_point else data((6, 5), dtype, 7)
    if dtype == torch.int32:
        x = torch.arange(-100, 100, 7, dtype=dtype)
    check(fn, x, ops=[f"aten::{fn.__name__}.out"])


def test_exp_out_dtypes(check_edit, clamp_program) -> None:
    """int -> Double out (computes in float), Double -> Float out (computes in double); Double
    -> Half (through float) and Half -> Float."""
    for x, out_dtype in [(I32 % 50, np.float64), (np.array(SPECIAL), np.float32),
                         (np.array(SPECIAL) / 7, np.float16), (F16, np.float32)]:  # fmt: skip
        check_edit(unary_edit(clamp_program, "aten::exp.out", x, (), out_dtype))


def test_exp_refuses_integer_out(refused, clamp_program) -> None:
    name, why = refused(unary_edit(clamp_program, "aten::exp.out", I32, (), np.int32))
    assert name == "DtypeMismatch" and "out has dtype Int" in why, why


@pytest.mark.parametrize(
    "shape,dim", [((4, 6), -1), ((4, 6), 0), ((2, 3, 5), 1), ((1, 1), -1), ((7,), 0), ((), 0)]
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_log_softmax(check, shape, dim, dtype) -> None:
    """Double: ExecuTorch's portable kernel takes it, but its Python runtime runs the optimized
    kernel (Float only): PyTorch is the reference there. Floats are held to the magnitude of
    the terms (see oracle.log_softmax_magnitude)."""
    x = data(shape, dtype, 14)
    fn = lambda t: torch.log_softmax(t, dim=dim)  # noqa: E731
    expected = [fn(x)] if dtype == torch.float64 else None
    scales = [oracle.log_softmax_magnitude(x, dim)]
    check(fn, x, ops=["aten::_log_softmax.out"], expected=expected, scales=scales)


def test_log_softmax_wide(check) -> None:
    """Rows where one value dominates: outputs near 0 (held to the terms' magnitude)."""
    x = data((64, 100), torch.float32, 15) * 4
    check(lambda t: torch.log_softmax(t, dim=-1), x, ops=["aten::_log_softmax.out"],
          scales=[oracle.log_softmax_magnitude(x, -1)])  # fmt: skip


def test_log_softmax_extremes(check) -> None:
    x = torch.tensor([[1000.0, 999.0, -1000.0], [-50.0, -50.0, -50.0], [np.nan, 1.0, 2.0],
                      [1.0, np.nan, 2.0], [-np.inf, 0.0, 1.0], [np.inf, 0.0, 1.0]])  # fmt: skip
    check(lambda t: torch.log_softmax(t, dim=-1), x, ops=["aten::_log_softmax.out"])


def test_log_softmax_refused(refused) -> None:
    pte = oracle.export(lambda t: torch.log_softmax(t, -1), (torch.ones(2, 3),))
    op = "aten::_log_softmax.out"
    for dim, half, out_dtype, error, reason in [
        (2, False, np.float32, "InvalidArgument", "out of range"),
        (1, True, np.float32, "NotSupported", "half_to_float"),
        (1, False, np.float64, "DtypeMismatch", "dtype"),
    ]:
        edit = EditedProgram(pte)
        args = [edit.input(np.ones((2, 3), np.float32)), edit.int(dim), edit.bool(half)]
        edit.call_with_out(op, args, out_dtype, (2, 3))
        name, why = refused(edit)
        assert name == error and why.startswith(f"{op}: ") and reason in why, why


# hardswish and silu: export decomposes them (add/clamp/mul/div, sigmoid/mul); the Arm
# partitioner keeps them whole, and `--cpu-op` then puts aten::hardswish.out /
# aten::silu.out on the CPU. The reference is ExecuTorch running the decomposition.
WHOLE = [("aten::hardswish.out", F.hardswish), ("aten::silu.out", F.silu)]


@pytest.mark.parametrize("op,fn", WHOLE)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_whole_activation(check_edit, clamp_program, op, fn, dtype) -> None:
    x = torch.cat([special(dtype), torch.linspace(-8, 8, 161, dtype=dtype)])
    decomposed = oracle.export(fn, (x,))
    assert op not in oracle.operators(decomposed)
    expected = oracle.run(decomposed, (x,))
    (got,) = check_edit(unary_edit(clamp_program, op, x.numpy(), (), x.numpy().dtype),
                        expected=[oracle.to_numpy(t) for t in expected])  # fmt: skip
    # and PyTorch's own kernel, within the tolerance (silu: x / (1 + exp(-x)) there)
    oracle.assert_matches(got, oracle.to_numpy(fn(x)), rtol=1e-6)


@pytest.mark.parametrize("op,fn", WHOLE)
def test_whole_activation_refused(refused, clamp_program, op, fn) -> None:
    for x, out_dtype, error in [
        (I32, np.int32, "DtypeMismatch"),
        (I32.astype(np.float32), np.float64, "DtypeMismatch"),
    ]:
        name, why = refused(unary_edit(clamp_program, op, x, (), out_dtype))
        assert name == error and why.startswith(f"{op}: "), why


@pytest.mark.parametrize("dtype", oracle.REDUCED)
def test_reduced_float_activations(check, dtype) -> None:
    """Half and BFloat16: relu and hardtanh select in the dtype (bounds cast to it), clamp
    computes in Float and rounds, exp computes in float."""
    x = torch.cat([special(dtype), *oracle.reduced_edges(dtype)])
    check(torch.relu, x, ops=["aten::relu.out"], rtol=0)
    for lo, hi in [(-1.0, 1.0), (0.0, 6.0), (-2.5, 0.1)]:
        check(lambda t, lo=lo, hi=hi: F.hardtanh(t, lo, hi), x, ops=["aten::hardtanh.out"], rtol=0)
    for _, fn in CLAMPS:
        check(fn, x, ops=["aten::clamp.out"], rtol=0)
    check(lambda t: torch.clamp(t, -0.1, 0.3), x, ops=["aten::clamp.out"], rtol=0)
    lo, hi = -special(dtype).abs(), special(dtype).flip(0)
    check(lambda t, a, b: torch.clamp(t, a, b), special(dtype), lo, hi, ops=CLAMP_T, rtol=0)
    check(torch.exp, x, ops=["aten::exp.out"], rtol=0)
