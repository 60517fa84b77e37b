"""aten::mm.out and aten::addmm.out against ExecuTorch (what nn.Linear lowers to on the CPU:
permute_copy + addmm, or mm without a bias): every dtype their portable kernels take, alpha and
beta, self broadcast, integer wrap-around, and malformed calls. aten::linear.out (what the Arm
partitioner leaves of nn.Linear forced to the CPU; export never makes it, so the programs are
edited) against ExecuTorch's Python runtime (its optimized linear.out), 1-d input (which
ExecuTorch refuses) against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support import koracle as oracle
from tests.support.kprogram import EditedProgram

MM, ADDMM = ["aten::mm.out"], ["aten::addmm.out"]
LINEAR = "aten::linear.out"
PERMUTE = "aten::permute_copy.out"
DTYPES = [torch.float32, torch.float64, torch.int8, torch.uint8, torch.int16, torch.int32,
          torch.int64]  # fmt: skip


def rand(shape, dtype, seed) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=dtype)
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -(2**20)), min(info.max, 2**20)
    return torch.randint(lo, hi + 1, shape, generator=gen, dtype=torch.int64).to(dtype)


def magnitude(a, b, extra=None):
    """Float comparison scales (sum of |products|, see oracle.bmm_magnitude); ints: exact."""
    if not a.dtype.is_floating_point:
        return None
    scale = np.abs(a.double().numpy()) @ np.abs(b.double().numpy())
    return [scale if extra is None else np.abs(extra) + scale]


@pytest.mark.parametrize("dtype", DTYPES)
def test_mm_dtypes_wrap_like_executorch(check, dtype) -> None:
    a, b = rand((7, 33), dtype, 1), rand((33, 19), dtype, 2)
    (out,) = check(torch.mm, a, b, ops=MM, scales=magnitude(a, b))
    if not dtype.is_floating_point:
        exact = a.to(torch.int64).numpy() @ b.to(torch.int64).numpy()
        np.testing.assert_array_equal(out, exact.astype(out.dtype))


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 0, 4), (0, 3, 4), (5, 7, 0), (10, 64, 37),
                                   (4, 1023, 9)])  # fmt: skip
def test_mm_shapes(check, m, k, n) -> None:
    a, b = rand((m, k), torch.float32, m), rand((k, n), torch.float32, n)
    check(torch.mm, a, b, ops=MM, scales=magnitude(a, b))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta,alpha", [(1, 1), (3, -2), (0, 1)])
def test_addmm_dtypes(check, dtype, beta, alpha) -> None:
    s, a, b = rand((9,), dtype, 3), rand((6, 17), dtype, 4), rand((17, 9), dtype, 5)
    scales = None
    if dtype.is_floating_point:
        scales = [abs(alpha) * magnitude(a, b)[0] + abs(beta) * np.abs(s.double().numpy())]
    check(lambda x, y, z: torch.addmm(x, y, z, beta=beta, alpha=alpha), s, a, b, ops=ADDMM,
          scales=scales)  # fmt: skip


@pytest.mark.parametrize("self_shape", [(4, 5), (5,), (1, 5), (4, 1), (), (1, 1)])
def test_addmm_broadcasts_self(check, self_shape) -> None:
    s, a, b = (
        rand(self_shape, torch.float32, 6),
        rand((4, 3), torch.float32, 7),
        rand((3, 5), torch.float32, 8),
    )
    check(lambda x, y, z: torch.addmm(x, y, z, beta=0.5, alpha=1.5), s, a, b, ops=ADDMM,
          scales=[1.5 * magnitude(a, b)[0] + 1])  # fmt: skip


@pytest.mark.parametrize("dtype", oracle.REDUCED)
def test_mm_addmm_reduced_float(check, dtype) -> None:
    """Half / BFloat16: sums in the dtype, rounding every step (ExecuTorch's portable mm; its
    pip runtime's optimized mm sums in float: the reference is oracle.reduced_matmul); addmm
    rounds sum * alpha, self * beta and their sum to the dtype too (portable, in the pip
    runtime as well)."""
    a, b = rand((6, 17), dtype, 4) * 4, rand((17, 9), dtype, 5) * 4
    check(torch.mm, a, b, ops=MM, rtol=0, expected=[oracle.reduced_matmul(a, b)])
    for self_shape in [(9,), (6, 9)]:
        s = rand(self_shape, dtype, 3)
        for beta, alpha in [(1, 1), (3, -2), (0.5, 1.5)]:
            fn = lambda x, y, z, be=beta, al=alpha: torch.addmm(x, y, z, beta=be, alpha=al)  # noqa: E731
            check(fn, s, a, b, ops=ADDMM, rtol=0)


def test_addmm_float_scalars_for_integers(host_run, programs) -> None:
    """A float beta/alpha is converted to the integer dtype (ExecuTorch's scalar_to truncates);
    export never makes this (PyTorch refuses it), so ExecuTorch's runtime runs the same edited
    program as the reference."""
    edit = EditedProgram(programs[ADDMM[0]])
    tensors = [rand(s, torch.int32, 9 + i).numpy() for i, s in enumerate([(3,), (2, 4), (4, 3)])]
    args = [edit.input(t) for t in tensors] + [edit.double(-1.7), edit.double(2.5)]
    edit.call_with_out(ADDMM[0], args, np.int32, (2, 3))
    pte = edit.to_bytes()
    (expected,) = oracle.run(pte, tuple(torch.from_numpy(t) for t in edit.inputs))
    (got,) = host_run(pte, edit.inputs).outputs()
    oracle.assert_matches(got, oracle.to_numpy(expected))


def test_addmm_beta_zero_keeps_nan(check) -> None:
    s = torch.tensor([float("nan"), 1.0, float("inf")])
    a, b = rand((2, 4), torch.float32, 12), rand((4, 3), torch.float32, 13)
    check(lambda x, y, z: torch.addmm(x, y, z, beta=0), s, a, b, ops=ADDMM,
          scales=[magnitude(a, b)[0] + 1])  # fmt: skip


@pytest.mark.parametrize("shape", [(2, 8), (1, 8), (3, 4, 8)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_lowers_to_mm_on_the_cpu(check, shape, bias) -> None:
    torch.manual_seed(14)
    linear = torch.nn.Linear(8, 5, bias=bias)
    x = rand(shape, torch.float32, 15)
    ops = [PERMUTE, *(ADDMM if bias else MM)] + (["aten::view_copy.out"] if len(shape) > 2 else [])
    w = linear.weight.detach().T
    scale = np.abs(x.reshape(-1, 8).double().numpy()) @ np.abs(w.double().numpy()) + 1
    check(linear, x, ops=ops, scales=[scale.reshape(*shape[:-1], 5)])


@pytest.fixture(scope="module")
def programs() -> dict[str, bytes]:
    ones = torch.ones(2, 3), torch.ones(3, 4)
    return {
        MM[0]: oracle.export(torch.mm, ones),
        ADDMM[0]: oracle.export(torch.addmm, (torch.ones(4), *ones)),
    }


def mm_edit(pte, op, tensors, out_shape, out_dtype=np.float32, beta=1, alpha=1) -> EditedProgram:
    edit = EditedProgram(pte)
    args = [edit.input(t) for t in tensors]
    if op == ADDMM[0]:
        args += [edit.int(beta), edit.int(alpha)]
    edit.call_with_out(op, args, out_dtype, out_shape)
    return edit


F32 = np.float32


@pytest.mark.parametrize(
    "op,shapes,out_shape,out_dtype,error,reason",
    [
        (MM[0], [(2, 3), (4, 5)], (2, 5), F32, "ShapeMismatch", "do not multiply"),
        (MM[0], [(2, 3), (3, 5)], (2, 4), F32, "ShapeMismatch", "expected [2, 5]"),
        (MM[0], [(1, 2, 3), (3, 5)], (2, 5), F32, "ShapeMismatch", "must both be 2-d"),
        (MM[0], [(2, 3), (3, 5)], (2, 5), np.float64, "DtypeMismatch", "out dtype Double"),
        (ADDMM[0], [(5,), (2, 3), (4, 5)], (2, 5), F32, "ShapeMismatch", "do not multiply"),
        (ADDMM[0], [(3,), (2, 3), (3, 5)], (2, 5), F32, "ShapeMismatch", "does not broadcast"),
        (ADDMM[0], [(3, 2, 5), (2, 3), (3, 5)], (2, 5), F32, "ShapeMismatch", "does not broadcast"),
        (ADDMM[0], [(5,), (2, 3), (3, 5)], (2, 6), F32, "ShapeMismatch", "expected [2, 5]"),
        (ADDMM[0], [(5,), (2, 3), (3, 5)], (2, 5), np.int32, "DtypeMismatch", "out dtype Int"),
    ],
)
def test_rejects(refused, programs, op, shapes, out_shape, out_dtype, error, reason) -> None:
    tensors = [np.ones(s, np.float32) for s in shapes]
    name, why = refused(mm_edit(programs[op], op, tensors, out_shape, out_dtype))
    assert name == error, why
    assert why.startswith(f"{op}: ") and reason in why, why


def test_rejects_mixed_dtypes_bool_and_overlap(refused, programs) -> None:
    op = ADDMM[0]
    tensors = [np.ones(5, np.float64), np.ones((2, 3), np.float32), np.ones((3, 5), np.float32)]
    name, why = refused(mm_edit(programs[op], op, tensors, (2, 5)))
    assert name == "DtypeMismatch" and "self dtype Double != mat1 dtype Float" in why, why

    b = np.ones((2, 2), np.bool_)
    name, why = refused(mm_edit(programs[MM[0]], MM[0], [b, b], (2, 2), np.bool_))
    assert name == "DtypeMismatch" and "Bool" in why, why

    edit = EditedProgram(programs[op])
    m = edit.input(np.ones((2, 2), np.float32))
    s = edit.input(np.ones((2, 2), np.float32))
    out = edit.tensor(np.float32, (2, 2), offset=edit.offset_of(s) + 4)  # over self only
    edit.call(op, [s, m, m, edit.int(1), edit.int(1), out, out])
    name, why = refused(edit)
    assert name == "InvalidArgument" and "out overlaps self" in why, why


def test_rejects_wrong_arg_count_and_tags(refused, programs) -> None:
    edit = EditedProgram(programs[ADDMM[0]])
    (call,) = edit.exported_calls
    edit.call(ADDMM[0], call.args[:-1])
    name, why = refused(edit)
    assert name == "InvalidArgument" and why == "aten::addmm.out: expected 7 arguments, got 6"

    edit = EditedProgram(programs[ADDMM[0]])
    (call,) = edit.exported_calls
    args = list(call.args)
    args[3] = edit.int_list([1])  # beta a list
    edit.call(ADDMM[0], args)
    name, why = refused(edit)
    assert name == "InvalidArgument" and "beta (argument 3) must be a Scalar" in why, why


def linear_edit(pte, x, w, b, out_shape=None, out_dtype=None) -> EditedProgram:
    """A program of one aten::linear.out call (b None: bias None); out as PyTorch's unless
    given."""
    edit = EditedProgram(pte)
    args = [edit.input(x), edit.input(w), edit.none() if b is None else edit.input(b)]
    if out_shape is None:
        out_shape = (*x.shape[:-1], w.shape[0])
    edit.call_with_out(LINEAR, args, out_dtype or x.dtype, out_shape)
    return edit


def linear_exact(x, w, b) -> np.ndarray:
    """The wrapped integer result: exact in int64, modulo 2^bits of the dtype."""
    out = x.astype(np.int64) @ w.astype(np.int64).T + (0 if b is None else b.astype(np.int64))
    return out.astype(x.dtype)


def torch_linear(x, w, b) -> np.ndarray:
    """PyTorch's F.linear of the arrays."""
    return torch.nn.functional.linear(
        *(None if t is None else torch.from_numpy(t) for t in (x, w, b))
    ).numpy()


def linear_scale(x, w, b) -> np.ndarray:
    scale = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)).T
    return scale if b is None else scale + np.abs(b.astype(np.float64))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 17), (2, 3, 17), (1, 17)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_like_executorch(check_edit, programs, dtype, shape, bias) -> None:
    x, w = rand(shape, dtype, 20).numpy(), rand((9, 17), dtype, 21).numpy()
    b = rand((9,), dtype, 22).numpy() if bias else None
    scales = [linear_scale(x, w, b)] if dtype.is_floating_point else None
    (out,) = check_edit(linear_edit(programs[MM[0]], x, w, b), scales=scales)
    if dtype.is_floating_point:
        oracle.assert_matches(out, torch_linear(x, w, b), scale=scales[0])
    else:
        np.testing.assert_array_equal(out, linear_exact(x, w, b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int8, torch.int32])
def test_linear_bias_of_one_element_broadcasts(check_edit, programs, dtype) -> None:
    x, w, b = (rand(s, dtype, 23 + i).numpy() for i, s in enumerate([(4, 5), (3, 5), (1,)]))
    scales = [linear_scale(x, w, b)] if dtype.is_floating_point else None
    check_edit(linear_edit(programs[MM[0]], x, w, b), scales=scales)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
def test_linear_1d_input_like_pytorch(check_edit, programs, dtype, bias) -> None:
    """A 1-d input gives out (out_features,), as PyTorch's F.linear; ExecuTorch's kernel
    refuses it (in.dim() >= 2), so PyTorch (integers: the exact wrapped result) is the
    reference."""
    x, w = rand((17,), dtype, 26).numpy(), rand((9, 17), dtype, 27).numpy()
    b = rand((9,), dtype, 28).numpy() if bias else None
    if dtype.is_floating_point:
        expected, scales = torch_linear(x, w, b), [linear_scale(x, w, b)]
    else:
        expected, scales = linear_exact(x, w, b), None
    check_edit(linear_edit(programs[MM[0]], x, w, b), expected=[expected], scales=scales)


@pytest.mark.parametrize("bias", [True, False])
def test_linear_half(check_edit, programs, bias) -> None:
    """Half: ExecuTorch's optimized linear (its only one) dots in float (four partial sums),
    adds the bias in float and rounds once; this one dots in k order: at most an ulp of Half
    apart. (BFloat16 runs the same code; numpy, and so an edited program's inputs, has no
    bfloat16.)"""
    x, w = rand((6, 33), torch.float16, 29).numpy(), rand((9, 33), torch.float16, 30).numpy()
    b = rand((9,), torch.float16, 31).numpy() if bias else None
    scales = [linear_scale(x, w, b)]
    (out,) = check_edit(linear_edit(programs[MM[0]], x, w, b), rtol=2**-10, scales=scales)
    exact = torch_linear(*(None if t is None else t.astype(np.float64) for t in (x, w, b)))
    oracle.assert_matches(out, exact.astype(np.float16), rtol=2**-10, scale=scales[0])


def test_linear_wraps_like_executorch(check_edit, programs) -> None:
    x, w, b = np.full((2, 4), 100, np.int8), np.full((3, 4), 100, np.int8), np.full(3, 100, np.int8)
    (out,) = check_edit(linear_edit(programs[MM[0]], x, w, b))
    np.testing.assert_array_equal(out, linear_exact(x, w, b))


@pytest.mark.parametrize(
    "shapes,out_shape,dtypes,out_dtype,error,reason",
    [
        ([(4, 5), (3, 6), None], (4, 3), F32, F32, "ShapeMismatch", "do not multiply"),
        ([(4, 5), (3, 5, 1), None], (4, 3), F32, F32, "ShapeMismatch", "must be 2-d"),
        ([(4, 5), (3, 5), None], (4, 4), F32, F32, "ShapeMismatch", "expected [4, 3]"),
        ([(2, 2, 5), (3, 5), None], (4, 3), F32, F32, "ShapeMismatch", "expected [2, 2, 3]"),
        ([(), (3, 5), None], (3,), F32, F32, "ShapeMismatch", "at least 1 dim"),
        ([(4, 5), (3, 5), (4,)], (4, 3), F32, F32, "ShapeMismatch", "bias [4] must be 1-d"),
        ([(4, 5), (3, 5), (4, 3)], (4, 3), F32, F32, "ShapeMismatch", "bias [4, 3] must be 1-d"),
        ([(4, 5), (3, 5), None], (4, 3), [F32, np.float64, F32], F32, "DtypeMismatch",
         "input dtype Float != weight dtype Double"),
        ([(4, 5), (3, 5), None], (4, 3), F32, np.float64, "DtypeMismatch", "out dtype Double"),
        ([(4, 5), (3, 5), (3,)], (4, 3), [F32, F32, np.int32], F32, "DtypeMismatch",
         "bias dtype Int != out dtype Float"),
        ([(4, 5), (3, 5), None], (4, 3), np.bool_, np.bool_, "DtypeMismatch", "Bool"),
    ],
)  # fmt: skip
def test_linear_rejects(refused, programs, shapes, out_shape, dtypes, out_dtype, error, reason):
    if not isinstance(dtypes, list):
        dtypes = [dtypes] * 3
    x, w, b = (None if s is None else np.ones(s, d) for s, d in zip(shapes, dtypes, strict=True))
    name, why = refused(linear_edit(programs[MM[0]], x, w, b, out_shape, out_dtype))
    assert name == error, why
    assert why.startswith(f"{LINEAR}: ") and reason in why, why


def test_linear_rejects_overlap_and_arg_count(refused, programs) -> None:
    edit = EditedProgram(programs[MM[0]])
    x = edit.input(np.ones((2, 2), np.float32))
    w = edit.input(np.ones((2, 2), np.float32))
    out = edit.tensor(np.float32, (2, 2), offset=edit.offset_of(x) + 4)  # over input only
    edit.call(LINEAR, [x, w, edit.none(), out, out])
    name, why = refused(edit)
    assert name == "InvalidArgument" and "out overlaps an input" in why, why

    ones = np.ones((2, 2), np.float32)
    edit = linear_edit(programs[MM[0]], ones, ones, None)
    (call,) = [i.instr_args for i in edit.plan.chains[0].instructions]
    edit.plan.chains[0].instructions = []
    edit.call(LINEAR, call.args[:-1])
    name, why = refused(edit)
    assert name == "InvalidArgument" and why == f"{LINEAR}: expected 5 arguments, got 4", why
