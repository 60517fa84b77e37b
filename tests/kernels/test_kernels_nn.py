"""Convolution, pooling, padding and resizing kernels against ExecuTorch: convolution.out
(1-d/2-d, stride, padding, dilation, groups, depthwise, transposed, bias or none, integer
dtypes), max_pool2d_with_indices.out (values and indices, ceil mode, dilation, NaN), avg_pool2d.out
(count_include_pad, divisor_override, ceil mode, Long), constant_pad_nd.out,
upsample_nearest2d/bilinear2d.vec_out and the mean.out a CPU-forced mean.dim lowers to; malformed
calls."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support import koracle as oracle
from tests.support.kprogram import EditedProgram

F = torch.nn.functional
CONV = ["aten::convolution.out"]
MAXPOOL = ["aten::max_pool2d_with_indices.out"]
AVGPOOL = ["aten::avg_pool2d.out"]
PAD = ["aten::constant_pad_nd.out"]
UPSAMPLE = ["aten::upsample_nearest2d.vec_out"]
INT_DTYPES = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]


def data(shape, dtype, seed=0, lo=None, hi=None) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=dtype)
    info = torch.iinfo(dtype)
    lo = info.min if lo is None else max(lo, info.min)
    hi = info.max if hi is None else min(hi, info.max)  # inclusive
    return torch.randint(lo, min(hi, 2**63 - 2) + 1, shape, generator=gen).to(dtype)


# ---- convolution ------------------------------------------------------------------------------

CONV2D = [
    # (in shape, out channels, kernel, stride, padding, dilation, groups, bias)
    ((1, 3, 8, 8), 4, 3, 1, 1, 1, 1, True),
    ((2, 3, 9, 7), 5, 3, 2, 0, 1, 1, True),
    ((1, 4, 10, 10), 6, 3, 1, 2, 2, 2, False),  # dilation, groups
    ((1, 6, 7, 7), 6, 3, 1, 1, 1, 6, True),  # depthwise
    ((1, 4, 6, 6), 8, 3, 2, 1, 1, 4, True),  # depthwise x2 channels, stride 2
    ((1, 8, 5, 5), 3, 1, 1, 0, 1, 1, True),  # pointwise
    ((1, 2, 9, 12), 3, (3, 5), (2, 3), (1, 2), (2, 1), 1, True),  # per-dim parameters
    ((1, 3, 4, 4), 2, 3, 1, 3, 1, 1, True),  # padding wider than half the kernel
    ((1, 2, 3, 37), 3, (1, 3), 1, (0, 1), 1, 1, False),  # long rows (Helium runs and tails)
    ((0, 3, 5, 5), 2, 3, 1, 1, 1, 1, True),  # empty batch
]


@pytest.mark.parametrize("shape,cout,k,s,p,d,g,bias", CONV2D)
def test_conv2d(check, shape, cout, k, s, p, d, g, bias) -> None:
    torch.manual_seed(sum(shape))
    conv = torch.nn.Conv2d(shape[1], cout, k, stride=s, padding=p, dilation=d, groups=g, bias=bias)
    check(conv, data(shape, torch.float32, 1), ops=CONV)


@pytest.mark.parametrize("dtype", oracle.REDUCED)
def test_conv_reduced_float(check, dtype) -> None:
    """Half / BFloat16 accumulate in the dtype (every product and sum rounds), the bias
    last: ExecuTorch's portable kernel, bit for bit."""
    torch.manual_seed(5)
    for shape, cout, k, s, p, d, g, bias in [CONV2D[0], CONV2D[2], CONV2D[3]]:
        conv = torch.nn.Conv2d(shape[1], cout, k, stride=s, padding=p, dilation=d, groups=g,
                               bias=bias).to(dtype)  # fmt: skip
        check(conv, data(shape, dtype, 1) * 4, ops=CONV, rtol=0)
    conv_t = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    check(conv_t.to(dtype), data((1, 4, 5, 5), dtype, 2), ops=CONV, rtol=0)
    check(torch.nn.Conv1d(4, 8, 3, padding=1).to(dtype), data((2, 4, 19), dtype, 3), ops=CONV,
          rtol=0)  # fmt: skip


@pytest.mark.parametrize("s,p,d,g", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2), (3, 1, 1, 4)])
def test_conv1d(check, s, p, d, g) -> None:
    torch.manual_seed(s + p)
    conv = torch.nn.Conv1d(4, 8, 3, stride=s, padding=p, dilation=d, groups=g)
    check(conv, data((2, 4, 19), torch.float32, 2), ops=CONV)


@pytest.mark.parametrize(
    "cin,cout,k,s,p,op,d,g",
    [
        (3, 4, 3, 1, 0, 0, 1, 1),
        (4, 6, 3, 2, 1, 1, 1, 2),  # groups, output_padding
        (2, 2, (2, 3), (2, 1), (0, 1), (1, 0), 1, 1),  # per-dim parameters
        (4, 4, 3, 2, 1, 0, 2, 4),  # dilation, depthwise
    ],
)
def test_conv_transpose2d(check, cin, cout, k, s, p, op, d, g) -> None:
    torch.manual_seed(cin * cout)
    conv = torch.nn.ConvTranspose2d(
        cin, cout, k, stride=s, padding=p, output_padding=op, dilation=d, groups=g
    )
    check(conv, data((2, cin, 5, 6), torch.float32, 3), ops=CONV)


def test_conv_transpose1d(check) -> None:
    torch.manual_seed(5)
    conv = torch.nn.ConvTranspose1d(3, 2, 4, stride=3, padding=1, bias=False)
    check(conv, data((1, 3, 7), torch.float32, 4), ops=CONV)


@pytest.mark.parametrize("dtype", [torch.float64, *INT_DTYPES])
def test_conv_dtypes_wrap_like_executorch(check, dtype) -> None:
    x, w = data((1, 4, 7, 7), dtype, 5), data((6, 2, 3, 3), dtype, 6)
    b = data((6,), dtype, 7)
    (out,) = check(lambda t, u, v: F.conv2d(t, u, v, padding=1, groups=2), x, w, b, ops=CONV)
    if dtype.itemsize <= 2:
        # the sums overflow: results are the exact sums modulo 2^bits (exact in doubles here)
        exact = F.conv2d(x.double(), w.double(), b.double(), padding=1, groups=2).numpy()
        wrapped = np.mod(exact.astype(np.int64), 2 ** (8 * out.itemsize))
        np.testing.assert_array_equal(out.astype(np.int64) % 2 ** (8 * out.itemsize), wrapped)


def test_conv_large_values(check) -> None:
    """Cancellation-prone sums: the kernel adds in ExecuTorch's order, so even these match."""
    x = data((1, 3, 6, 6), torch.float32, 8) * 1e4
    w = data((2, 3, 3, 3), torch.float32, 9)
    check(lambda t, u: F.conv2d(t, u, padding=1), x, w, ops=CONV)


@pytest.fixture(scope="module")
def conv_program() -> bytes:
    conv = torch.nn.Conv2d(2, 4, 3, padding=1)
    return oracle.export(conv, (torch.ones(1, 2, 5, 5),))


def conv_edit(pte, x, w, bias, out_shape, out_dtype=np.float32, **params) -> EditedProgram:
    """convolution.out on new tensors (bias None: no bias) into a new out; `params` override
    stride, padding, dilation, transposed, output_padding, groups."""
    p = {"stride": (1, 1), "padding": (1, 1), "dilation": (1, 1), "transposed": False,
         "output_padding": (0, 0), "groups": 1, **params}  # fmt: skip
    edit = EditedProgram(pte)
    args = [edit.input(x), edit.input(w), edit.none() if bias is None else edit.input(bias)]
    args += [edit.int_list(list(p[k])) for k in ("stride", "padding", "dilation")]
    args += [edit.bool(p["transposed"]), edit.int_list(list(p["output_padding"]))]
    args.append(edit.int(p["groups"]))
    edit.call_with_out(CONV[0], args, out_dtype, out_shape)
    return edit


def test_conv_bias_of_another_dtype(host_run, conv_program) -> None:
    """ExecuTorch converts the bias to the input's dtype; export never makes this, ExecuTorch's
    runtime on the same edited program is the reference."""
    x = data((1, 2, 5, 5), torch.float32, 10).numpy()
    w = data((4, 2, 3, 3), torch.float32, 11).numpy()
    for bias in (np.array([1, -2, 3, 70000], np.int32), np.array([0.5, 1e-9, -3, 2], np.float64)):
        edit = conv_edit(conv_program, x, w, bias, (1, 4, 5, 5))
        pte = edit.to_bytes()
        expected = oracle.run(pte, tuple(torch.from_numpy(a) for a in edit.inputs))
        (got,) = host_run(pte, edit.inputs).outputs()
        oracle.assert_matches(got, oracle.to_numpy(expected[0]))


ONES_X, ONES_W = np.ones((1, 2, 5, 5), np.float32), np.ones((4, 2, 3, 3), np.float32)


@pytest.mark.parametrize(
    "x,w,bias,kwargs,out_shape,error,reason",
    [
        (ONES_X, ONES_W, None, {}, (1, 4, 5, 4), "ShapeMismatch", "expected [1, 4, 5, 5]"),
        (ONES_X, np.ones((4, 3, 3, 3), np.float32), None, {}, (1, 4, 5, 5), "ShapeMismatch",
         "channels"),
        (ONES_X, ONES_W, np.ones(3, np.float32), {}, (1, 4, 5, 5), "ShapeMismatch", "bias"),
        (ONES_X, ONES_W, None, {"groups": 3}, (1, 4, 5, 5), "InvalidArgument", "groups = 3"),
        (ONES_X, ONES_W, None, {"groups": 0}, (1, 4, 5, 5), "InvalidArgument", "groups = 0"),
        (ONES_X, ONES_W, None, {"stride": (0, 1)}, (1, 4, 5, 5), "InvalidArgument",
         "stride[0] = 0"),
        (ONES_X, ONES_W, None, {"stride": (1, 1, 1)}, (1, 4, 5, 5), "InvalidArgument",
         "stride has 3 values"),
        (ONES_X, ONES_W, None, {"padding": (-1, 1)}, (1, 4, 3, 5), "InvalidArgument",
         "padding[0] = -1"),
        (ONES_X, ONES_W, None, {"dilation": (0, 0)}, (1, 4, 5, 5), "InvalidArgument",
         "dilation[0] = 0"),
        (ONES_X, ONES_W, None, {"padding": (0, 0), "dilation": (3, 3)}, (1, 4, 1, 1),
         "InvalidArgument", "invalid output shape"),
        (ONES_X, ONES_W, None, {"transposed": True}, (1, 8, 5, 5), "ShapeMismatch", "transposed"),
        (np.ones((2, 5, 5), np.float32), ONES_W, None, {}, (1, 4, 5, 5), "ShapeMismatch",
         "must have the 3 dims"),
        (np.ones((5, 5), np.float32), ONES_W, None, {}, (1, 4, 5, 5), "ShapeMismatch",
         "3-d or 4-d"),
        (ONES_X, ONES_W.astype(np.float64), None, {}, (1, 4, 5, 5), "DtypeMismatch", "weight"),
        (ONES_X, ONES_W, np.ones(4, np.bool_), {}, (1, 4, 5, 5), "DtypeMismatch", "bias"),
        (ONES_X.astype(np.bool_), ONES_W.astype(np.bool_), None, {}, (1, 4, 5, 5),
         "DtypeMismatch", "Bool"),
    ],
)  # fmt: skip
def test_conv_rejects(refused, conv_program, x, w, bias, kwargs, out_shape, error, reason) -> None:
    out_dtype = x.dtype
    name, why = refused(conv_edit(conv_program, x, w, bias, out_shape, out_dtype, **kwargs))
    assert name == error, why
    assert why.startswith(f"{CONV[0]}: ") and reason in why, why


def test_conv_rejects_output_padding_and_overlap(refused, conv_program) -> None:
    x = np.ones((1, 4, 3, 3), np.float32)
    w = np.ones((4, 2, 3, 3), np.float32)
    edit = conv_edit(conv_program, x, w, None, (1, 2, 6, 6), padding=(0, 0), transposed=True,
                     output_padding=(1, 1))  # fmt: skip
    name, why = refused(edit)
    assert name == "InvalidArgument" and "output_padding[0] = 1" in why, why

    edit = EditedProgram(conv_program)
    xi = edit.input(ONES_X)
    wi = edit.input(ONES_W)
    out = edit.tensor(np.float32, (1, 4, 5, 5), offset=edit.offset_of(xi) + 16)  # over x
    args = [xi, wi, edit.none(), *(edit.int_list([1, 1]) for _ in range(3))]
    args += [edit.bool(False), edit.int_list([0, 0]), edit.int(1)]
    edit.call(CONV[0], [*args, out, out])
    name, why = refused(edit)
    assert name == "InvalidArgument" and "out overlaps an input" in why


def test_conv_wrong_arg_count(refused, conv_program) -> None:
    edit = EditedProgram(conv_program)
    (call,) = edit.exported_calls
    edit.call(CONV[0], call.args[:-1])
    name, why = refused(edit)
    assert name == "InvalidArgument" and why == f"{CONV[0]}: expected 11 arguments, got 10"


# ---- pooling ----------------------------------------------------------------------------------

POOLS = [
    # (kernel, stride, padding, dilation, ceil_mode)
    (3, 2, 1, 1, False),
    (2, None, 0, 1, False),  # stride = kernel
    ((3, 2), (2, 1), (1, 0), 1, False),
    (3, 2, 1, 2, False),  # dilation
    (3, 2, 0, 1, True),  # ceil mode: a last, partial window
    (2, 2, 1, 1, True),
    (3, 3, 1, 1, True),  # ceil mode: a window that would start in the padding is dropped
    (1, 1, 0, 1, False),
]


@pytest.mark.parametrize("k,s,p,d,ceil", POOLS)
def test_max_pool2d_values_and_indices(check, k, s, p, d, ceil) -> None:
    x = data((2, 3, 9, 8), torch.float32, 20)
    check(lambda t: F.max_pool2d(t, k, s, p, d, ceil_mode=ceil, return_indices=True), x,
          ops=MAXPOOL)  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float64, *INT_DTYPES])
def test_max_pool2d_dtypes_and_ties(check, dtype) -> None:
    """Small integer ranges make ties: the first maximum in the window wins."""
    x = data((1, 2, 7, 7), dtype, 21, lo=0, hi=3)
    check(lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True), x, ops=MAXPOOL)


def test_max_pool2d_3d_input_and_values_only(check) -> None:
    check(lambda t: F.max_pool2d(t, 2, 1, 1), data((3, 5, 6), torch.float32, 22), ops=MAXPOOL)
    check(torch.nn.MaxPool2d(3, 2), data((1, 2, 9, 9), torch.float32, 23), ops=MAXPOOL)


def test_max_pool2d_nan_as_executorch(check) -> None:
    """ExecuTorch keeps a NaN that comes first in a window and skips later ones (PyTorch
    propagates every NaN): ExecuTorch is the reference."""
    x = data((1, 1, 6, 6), torch.float32, 24)
    x[0, 0, 0, 0] = x[0, 0, 1, 3] = x[0, 0, 4, 4] = float("nan")
    x[0, 0, 2, 2] = float("inf")
    x[0, 0, 5, 0] = float("-inf")
    check(lambda t: F.max_pool2d(t, 2, 2, return_indices=True), x, ops=MAXPOOL)


AVG = [
    # (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    (3, 2, 1, False, True, None),
    (3, 2, 1, False, False, None),
    (3, 2, 1, True, True, None),
    (3, 2, 1, True, False, None),
    ((2, 3), (1, 2), (1, 1), False, True, None),
    (2, None, 0, False, True, None),
    (3, 2, 1, False, True, 5),
    (3, 1, 1, True, False, -2),
    (4, 3, 2, True, True, None),
]


@pytest.mark.parametrize("k,s,p,ceil,include_pad,divisor", AVG)
def test_avg_pool2d(check, k, s, p, ceil, include_pad, divisor) -> None:
    x = data((2, 3, 9, 8), torch.float32, 25)
    check(lambda t: F.avg_pool2d(t, k, s, p, ceil, include_pad, divisor), x, ops=AVGPOOL)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64])
@pytest.mark.parametrize("divisor", [None, 4, -3])
def test_avg_pool2d_dtypes(check, dtype, divisor) -> None:
    """Long divides as integers (toward zero)."""
    x = data((1, 2, 7, 7), dtype, 26, lo=-1000, hi=1000)
    check(lambda t: F.avg_pool2d(t, 3, 2, 1, False, True, divisor), x, ops=AVGPOOL)
    check(lambda t: F.avg_pool2d(t, 2, 2, 1, True, False, divisor), x, ops=AVGPOOL)


@pytest.mark.parametrize("dtype", oracle.REDUCED)
def test_pools_reduced_float(check, dtype) -> None:
    """Half / BFloat16: max compares through float (ties: the first wins; a first NaN stays),
    avg sums and divides in the dtype (ExecuTorch's portable kernels, bit for bit)."""
    x = (data((1, 2, 7, 7), torch.float32, 28) * 4).round().to(dtype)  # ties
    x[0, 0, 0, 0] = x[0, 1, 3, 3] = float("nan")
    check(lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True), x, ops=MAXPOOL, rtol=0)
    y = data((2, 3, 9, 8), dtype, 29) * 100
    for k, s, p, ceil, include_pad, divisor in [AVG[0], AVG[3], AVG[6], AVG[8]]:
        check(lambda t, a=(k, s, p, ceil, include_pad, divisor): F.avg_pool2d(t, *a), y,
              ops=AVGPOOL, rtol=0)  # fmt: skip


def test_avg_pool2d_3d_input(check) -> None:
    check(torch.nn.AvgPool2d(2), data((4, 6, 6), torch.float32, 27), ops=AVGPOOL)


@pytest.fixture(scope="module")
def pool_programs() -> dict[str, bytes]:
    x = (torch.ones(1, 2, 6, 6),)
    return {
        MAXPOOL[0]: oracle.export(lambda t: F.max_pool2d(t, 2, return_indices=True), x),
        AVGPOOL[0]: oracle.export(lambda t: F.avg_pool2d(t, 2), x),
    }


def pool_edit(
    pte,
    op,
    x,
    k,
    s,
    p,
    d,
    ceil,
    out_shape,
    out_dtype=np.float32,
    idx_shape=None,
    idx_dtype=np.int64,
    include_pad=True,
    divisor=None,
) -> EditedProgram:
    """max_pool2d_with_indices.out / avg_pool2d.out on a new input into new outputs."""
    edit = EditedProgram(pte)
    args = [edit.input(x), edit.int_list(k), edit.int_list(s), edit.int_list(p)]
    if op == MAXPOOL[0]:
        args += [edit.int_list(d), edit.bool(ceil)]
        out = edit.tensor(out_dtype, out_shape)
        idx = edit.tensor(idx_dtype, out_shape if idx_shape is None else idx_shape)
        edit.output(out, idx)
        edit.call(op, [*args, out, idx, edit.tensor_list([out, idx])])
    else:
        args += [edit.bool(ceil), edit.bool(include_pad),
                 edit.none() if divisor is None else edit.int(divisor)]  # fmt: skip
        edit.call_with_out(op, args, out_dtype, out_shape)
    return edit


X6 = np.ones((1, 2, 6, 6), np.float32)


@pytest.mark.parametrize("op", [MAXPOOL[0], AVGPOOL[0]])
@pytest.mark.parametrize(
    "x,k,s,p,out_shape,error,reason",
    [
        (X6, [2, 2], [2, 2], [0, 0], (1, 2, 3, 4), "ShapeMismatch", "expected [1, 2, 3, 3]"),
        (X6, [3, 3], [1, 1], [2, 2], (1, 2, 8, 8), "InvalidArgument", "more than half"),
        (X6, [0, 2], [1, 1], [0, 0], (1, 2, 7, 5), "InvalidArgument", "kernel_size[0] = 0"),
        (X6, [2, 2, 2], [1, 1], [0, 0], (1, 2, 5, 5), "InvalidArgument", "kernel_size has 3"),
        (X6, [2, 2], [0, 1], [0, 0], (1, 2, 5, 5), "InvalidArgument", "stride[0] = 0"),
        (X6, [2, 2], [1, 1], [-1, 0], (1, 2, 3, 5), "InvalidArgument", "padding[0] = -1"),
        (X6, [7, 7], [1, 1], [0, 0], (1, 2, 1, 1), "InvalidArgument", "invalid output shape"),
        (np.ones((6, 6), np.float32), [2, 2], [2, 2], [0, 0], (3, 3), "ShapeMismatch",
         "(C, H, W)"),
        (np.ones((1, 0, 6, 6), np.float32), [2, 2], [2, 2], [0, 0], (1, 0, 3, 3),
         "ShapeMismatch", "non-empty"),
        (X6.astype(np.bool_), [2, 2], [2, 2], [0, 0], (1, 2, 3, 3), "DtypeMismatch", "Bool"),
    ],
)  # fmt: skip
def test_pool_rejects(refused, pool_programs, op, x, k, s, p, out_shape, error, reason) -> None:
    edit = pool_edit(pool_programs[op], op, x, k, s, p, [1, 1], False, out_shape, x.dtype)
    name, why = refused(edit)
    assert name == error, why
    assert why.startswith(f"{op}: ") and reason in why, why


def test_max_pool_rejects_bad_indices_and_dilation(refused, pool_programs) -> None:
    op, pte = MAXPOOL[0], pool_programs[MAXPOOL[0]]
    for kwargs, error, reason in [
        ({"idx_dtype": np.int32}, "DtypeMismatch", "indices has dtype Int, expected Long"),
        ({"idx_shape": (1, 2, 3, 2)}, "ShapeMismatch", "indices has shape [1, 2, 3, 2]"),
        ({"d": [0, 1]}, "InvalidArgument", "dilation[0] = 0"),
    ]:
        args = {"d": [1, 1], **kwargs}
        edit = pool_edit(pte, op, X6, [2, 2], [2, 2], [0, 0], ceil=False, out_shape=(1, 2, 3, 3),
                         **args)  # fmt: skip
        name, why = refused(edit)
        assert name == error and reason in why, why


def test_max_pool_rejects_overlapping_outputs(refused, pool_programs) -> None:
    edit = EditedProgram(pool_programs[MAXPOOL[0]])
    x = edit.input(X6)
    out = edit.tensor(np.float32, (1, 2, 3, 3))
    idx = edit.tensor(np.int64, (1, 2, 3, 3), offset=edit.offset_of(out) + 16)  # over out
    edit.output(out, idx)
    args = [x, *(edit.int_list(v) for v in ([2, 2], [2, 2], [0, 0], [1, 1])), edit.bool(False)]
    edit.call(MAXPOOL[0], [*args, out, idx, edit.tensor_list([out, idx])])
    name, why = refused(edit)
    assert name == "InvalidArgument" and "out overlaps indices" in why


def test_avg_pool_rejects_zero_divisor_and_int8(refused, pool_programs) -> None:
    op, pte = AVGPOOL[0], pool_programs[AVGPOOL[0]]
    edit = pool_edit(pte, op, X6, [2, 2], [2, 2], [0, 0], None, False, (1, 2, 3, 3), divisor=0)
    name, why = refused(edit)
    assert name == "InvalidArgument" and "divisor_override is 0" in why
    x8 = X6.astype(np.int8)
    edit = pool_edit(pte, op, x8, [2, 2], [2, 2], [0, 0], None, False, (1, 2, 3, 3), np.int8)
    name, why = refused(edit)
    assert name == "DtypeMismatch" and "Char" in why


# ---- constant_pad_nd --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape,pad",
    [
        ((1, 3, 5, 6), (1, 2)),
        ((1, 3, 5, 6), (1, 2, 0, 3)),
        ((2, 3, 4), (0, 0, 2, 1, 1, 1)),  # every dim
        ((7,), (3, 0)),
        ((2, 0, 3), (1, 1, 1, 1)),  # empty input: all padding
        ((2, 3), ()),  # nothing
        ((1, 2, 3, 33), (17, 16)),  # rows around the 16/32-byte copy steps
    ],
)
@pytest.mark.parametrize("value", [0.0, -1.5])
def test_constant_pad(check, shape, pad, value) -> None:
    check(lambda t: F.pad(t, pad, value=value), data(shape, torch.float32, 30), ops=PAD)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bool, *INT_DTYPES])
def test_constant_pad_dtypes(check, dtype) -> None:
    value = 1 if dtype in (torch.bool, torch.uint8) else -7
    check(lambda t: F.pad(t, (2, 1, 1, 0), value=value), data((2, 3, 4), dtype, 31), ops=PAD)


def test_constant_pad_float_value_truncates_for_integers(check) -> None:
    check(lambda t: F.pad(t, (1, 1), value=2.7), data((3, 4), torch.int8, 32), ops=PAD)


@pytest.fixture(scope="module")
def pad_program() -> bytes:
    return oracle.export(lambda t: F.pad(t, (1, 1), value=0.5), (torch.ones(2, 3),))


def pad_edit(pte, x, pad, value, out_shape, out_dtype=None) -> EditedProgram:
    edit = EditedProgram(pte)
    v = edit.double(value) if isinstance(value, float) else edit.int(value)
    args = [edit.input(x), edit.int_list(pad), v]
    edit.call_with_out(PAD[0], args, out_dtype or x.dtype, out_shape)
    return edit


@pytest.mark.parametrize(
    "x,value",
    [
        (np.ones((2, 3), np.uint8), -1.0),
        (np.ones((2, 3), np.uint8), 256),
        (np.ones((2, 3), np.int8), 128),
        (np.ones((2, 3), np.int8), -129.0),
        (np.ones((2, 3), np.int8), float("nan")),
        (np.ones((2, 3), np.float32), 1e39),
    ],
)
def test_constant_pad_value_must_fit_like_executorch(refused, pad_program, x, value) -> None:
    """Values that overflow the dtype: ExecuTorch's runtime refuses the same program."""
    edit = pad_edit(pad_program, x, [1, 1], value, (2, 5))
    pte = edit.to_bytes()
    with pytest.raises(RuntimeError):
        oracle.run(pte, tuple(torch.from_numpy(a) for a in edit.inputs))
    name, why = refused(edit)
    assert name == "InvalidArgument" and "value does not fit" in why, why


@pytest.mark.parametrize(
    "x,value",
    [
        (np.ones((2, 3), np.uint8), -255),  # a negative integer wraps into uint8, down to -max
        (np.ones((2, 3), np.uint8), -3),
        (np.ones((2, 3), np.int64), 2.0**62),
        (np.ones((2, 3), np.float32), float("inf")),
        (np.ones((2, 3), np.bool_), 5.5),
    ],
)
def test_constant_pad_value_casts_like_executorch(host_run, pad_program, x, value) -> None:
    edit = pad_edit(pad_program, x, [1, 1], value, (2, 5))
    pte = edit.to_bytes()
    (expected,) = oracle.run(pte, tuple(torch.from_numpy(a) for a in edit.inputs))
    (got,) = host_run(pte, edit.inputs).outputs()
    oracle.assert_matches(got, oracle.to_numpy(expected))


@pytest.mark.parametrize(
    "pad,out_shape,out_dtype,error,reason",
    [
        ([1, 1, 1], (2, 5), None, "InvalidArgument", "not pairs"),
        ([1, 1, 1, 1, 1, 1], (4, 5), None, "InvalidArgument", "3 pairs for 2 dims"),
        ([-1, 1], (2, 3), None, "InvalidArgument", "pad[0] = -1"),
        ([1, 1], (2, 4), None, "ShapeMismatch", "expected [2, 5]"),
        ([1, 1], (2, 5), np.float64, "DtypeMismatch", "out dtype Double"),
    ],
)
def test_constant_pad_rejects(refused, pad_program, pad, out_shape, out_dtype, error, reason):
    x = np.ones((2, 3), np.float32)
    name, why = refused(pad_edit(pad_program, x, pad, 0.5, out_shape, out_dtype))
    assert name == error, why
    assert why.startswith(f"{PAD[0]}: ") and reason in why, why


# ---- upsample_nearest2d -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"scale_factor": 2},
        {"scale_factor": 1.5},
        {"scale_factor": (2, 3)},
        {"scale_factor": 0.5},
        {"scale_factor": 1.7},
        {"size": (5, 11)},
        {"size": (3, 2)},  # smaller than the input
        {"size": (7, 7)},
    ],
)
def test_upsample_nearest(check, kwargs) -> None:
    x = data((2, 3, 5, 6), torch.float32, 40)
    check(lambda t: F.interpolate(t, mode="nearest", **kwargs), x, ops=UPSAMPLE)


@pytest.mark.parametrize("dtype", [torch.float64, *INT_DTYPES])
def test_upsample_nearest_dtypes(check, dtype) -> None:
    x = data((1, 2, 3, 4), dtype, 41)
    check(lambda t: F.interpolate(t, scale_factor=2, mode="nearest"), x, ops=UPSAMPLE)
    check(lambda t: F.interpolate(t, size=(4, 9), mode="nearest"), x, ops=UPSAMPLE)


BILINEAR = ["aten::upsample_bilinear2d.vec_out"]


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize(
    "kwargs",
    [{"scale_factor": 2}, {"scale_factor": 1.5}, {"scale_factor": (2, 3)}, {"scale_factor": 0.5},
     {"size": (5, 11)}, {"size": (3, 2)}, {"size": (5, 6)}, {"size": (1, 1)}],
)  # fmt: skip
def test_upsample_bilinear(check, kwargs, align_corners) -> None:
    """Up and down, an unchanged size (a copy) and one output (align_corners' zero ratio)."""
    x = data((2, 3, 5, 6), torch.float32, 42)
    fn = lambda t: F.interpolate(t, mode="bilinear", align_corners=align_corners, **kwargs)  # noqa: E731
    check(fn, x, ops=BILINEAR)


@pytest.mark.parametrize("dtype", [torch.float64, *INT_DTYPES])
def test_upsample_bilinear_dtypes(check, dtype) -> None:
    """Integer data: float arithmetic, truncated into the element type, as ExecuTorch."""
    x = data((1, 2, 3, 4), dtype, 43)
    fn = lambda t: F.interpolate(t, size=(5, 7), mode="bilinear")  # noqa: E731
    check(fn, x, ops=BILINEAR)


@pytest.fixture(scope="module")
def upsample_program() -> bytes:
    fn = lambda t: F.interpolate(t, scale_factor=2, mode="nearest")  # noqa: E731
    return oracle.export(fn, (torch.ones(1, 1, 2, 2),))


@pytest.mark.parametrize(
    "x,size,scales,out_shape,error,reason",
    [
        (np.ones((1, 1, 2, 2), np.float32), None, None, (1, 1, 4, 4), "InvalidArgument",
         "exactly one"),
        (np.ones((1, 1, 2, 2), np.float32), [4, 4], [2.0, 2.0], (1, 1, 4, 4), "InvalidArgument",
         "exactly one"),
        (np.ones((1, 1, 2, 2), np.float32), None, [2.0, 0.0], (1, 1, 4, 0), "InvalidArgument",
         "two positive"),
        (np.ones((1, 1, 2, 2), np.float32), [4], None, (1, 1, 4, 4), "InvalidArgument",
         "two positive"),
        (np.ones((1, 1, 2, 2), np.float32), None, [0.1, 2.0], (1, 1, 0, 4), "InvalidArgument",
         "empty"),
        (np.ones((1, 2, 2), np.float32), [4, 4], None, (1, 4, 4), "ShapeMismatch", "4-d"),
        (np.ones((1, 1, 2, 2), np.float32), None, [2.0, 2.0], (1, 1, 4, 5), "ShapeMismatch",
         "expected [1, 1, 4, 4]"),
        (np.ones((1, 1, 0, 2), np.float32), [4, 4], None, (1, 1, 4, 4), "ShapeMismatch",
         "no rows or columns"),
        (np.ones((1, 1, 2, 2), np.bool_), [4, 4], None, (1, 1, 4, 4), "DtypeMismatch", "Bool"),
    ],
)  # fmt: skip
def test_upsample_rejects(refused, upsample_program, x, size, scales, out_shape, error, reason):
    edit = EditedProgram(upsample_program)
    args = [edit.input(x), edit.none() if size is None else edit.int_list(size),
            edit.none() if scales is None else edit.double_list(scales)]  # fmt: skip
    edit.call_with_out(UPSAMPLE[0], args, x.dtype, out_shape)
    name, why = refused(edit)
    assert name == error, why
    assert why.startswith(f"{UPSAMPLE[0]}: ") and reason in why, why


# ---- mean.dim as the CPU runs it --------------------------------------------------------------


def test_mean_dim_as_forced_on_cpu(check) -> None:
    """What a CPU-forced mean.dim and AdaptiveAvgPool2d(1) lower to: mean.out over [-1, -2]
    with keepdim (and an integer input with a floating dtype)."""
    x = data((2, 5, 7, 6), torch.float32, 50)
    check(lambda t: t.mean(dim=(-1, -2), keepdim=True), x, ops=["aten::mean.out"])
    check(torch.nn.AdaptiveAvgPool2d(1), x, ops=["aten::mean.out"])
    check(lambda t: t.mean(dim=[2, 3]), x, ops=["aten::mean.out"])
    x8 = data((1, 4, 5, 5), torch.int8, 51)
    check(lambda t: t.mean(dim=(-1, -2), keepdim=True, dtype=torch.float32), x8,
          ops=["aten::mean.out"])  # fmt: skip


def test_mean_of_integers_needs_a_dtype(refused) -> None:
    pte = oracle.export(lambda t: t.mean(dim=[1]), (torch.ones(2, 3),))
    edit = EditedProgram(pte)
    args = [edit.input(np.ones((2, 3), np.int32)), edit.int_list([1]), edit.bool(False),
            edit.none()]  # fmt: skip
    edit.call_with_out("aten::mean.out", args, np.float32, (2,))
    name, why = refused(edit)
    assert name == "DtypeMismatch" and "needs a floating dtype" in why, why
