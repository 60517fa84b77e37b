"""Data-movement kernels against ExecuTorch: split, permute/transpose, flip, view copies,
slice, cat, expand, repeat, clone, dtype conversion; edge shapes and malformed calls."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support import koracle as oracle
from tests.support.kprogram import EditedProgram

SPLIT = ["aten::split_with_sizes_copy.out"]
DTYPES = [torch.float32, torch.int8, torch.int16, torch.int64, torch.bool]


def sample(shape, dtype) -> torch.Tensor:
    x = torch.arange(int(np.prod(shape)), dtype=torch.int64).reshape(shape)
    return (x % 2).bool() if dtype == torch.bool else (x * 7 - 50).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,sizes,dim",
    [
        ((4, 6), [2, 2], 0),
        ((2, 3, 10), [3, 0, 7], -1),  # an empty split, negative dim
        ((2, 9, 5), [1, 8], 1),
        ((7,), [7], 0),
        ((1, 1, 33), [16, 17], 2),
    ],
)
def test_split_with_sizes(check, dtype, shape, sizes, dim) -> None:
    check(lambda t: torch.split(t, sizes, dim=dim), sample(shape, dtype), ops=SPLIT)


def test_split_chunks(check) -> None:
    check(lambda t: torch.chunk(t, 3, dim=1), sample((2, 7, 3), torch.float32), ops=SPLIT)


@pytest.fixture(scope="module")
def split_program() -> bytes:
    return oracle.export(lambda t: torch.split(t, [2, 2]), (torch.ones(4, 4),))


@pytest.mark.parametrize(
    "sizes,dim,out_shapes,dtype,error,reason",
    [
        ([2, 3], 0, [(2, 4), (3, 4)], None, "InvalidArgument", "does not fit"),  # sum > size
        ([1, 1], 0, [(1, 4), (1, 4)], None, "InvalidArgument", "add up to 2"),  # sum < size
        ([2, 2], 0, [(2, 4)], None, "InvalidArgument", "2 split sizes for 1 outputs"),
        ([2, 2], 2, [(2, 4), (2, 4)], None, "InvalidArgument", "out of range"),
        ([2, 2], 0, [(2, 4), (2, 3)], None, "ShapeMismatch", "expected [2, 4]"),
        ([2, 2], 0, [(2, 4), (2, 4)], np.int32, "DtypeMismatch", "dtype"),
        ([-1, 5], 0, [(1, 4), (3, 4)], None, "InvalidArgument", "does not fit"),
    ],
)
def test_split_rejects(refused, split_program, sizes, dim, out_shapes, dtype, error, reason):
    edit = EditedProgram(split_program)
    t = edit.input(np.arange(1, 17, dtype=np.float32).reshape(4, 4))
    outs = [edit.tensor(dtype or np.float32, s) for s in out_shapes]
    edit.output(*outs)
    out_list = edit.tensor_list(outs)
    edit.call(SPLIT[0], [t, edit.int_list(sizes), edit.int(dim), out_list, out_list])
    name, why = refused(edit)  # (and nothing was written before the checks were done)
    assert name == error, why
    assert why.startswith(f"{SPLIT[0]}: ") and reason in why, why


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("perm", [(1, 0, 2), (2, 0, 1), (0, 2, 1), (-1, 0, 1), (0, 1, 2)])
def test_permute(check, dtype, perm) -> None:
    check(
        lambda t: t.permute(perm).contiguous(),
        sample((3, 4, 5), dtype),
        ops=["aten::permute_copy.out"],
    )


def test_permute_4d_and_size1(check) -> None:
    check(lambda t: t.permute(0, 2, 3, 1).contiguous(), sample((2, 1, 3, 4), torch.float32),
          ops=["aten::permute_copy.out"])  # fmt: skip


@pytest.fixture(scope="module")
def permute_program() -> bytes:
    return oracle.export(lambda t: t.permute(1, 0).contiguous(), (torch.ones(2, 3),))


def test_transpose_copy(host_run, permute_program) -> None:
    """transpose_copy.int_out: export turns transposes into permute_copy; the kernel exists for
    programs made otherwise."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    edit = EditedProgram(permute_program)
    args = [edit.input(x), edit.int(-1), edit.int(0)]
    edit.call_with_out("aten::transpose_copy.int_out", args, np.float32, (4, 3, 2))
    (got,) = host_run(edit.to_bytes(), edit.inputs).outputs()
    np.testing.assert_array_equal(got, x.transpose(2, 1, 0))


def test_permute_rejects_repeated_dim(refused, permute_program) -> None:
    edit = EditedProgram(permute_program)
    args = [edit.input(np.ones((2, 3), np.float32)), edit.int_list([0, 0])]
    edit.call_with_out("aten::permute_copy.out", args, np.float32, (2, 3))
    name, why = refused(edit)
    assert name == "InvalidArgument" and "dim 0 repeats" in why


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,dims",
    [((3, 4, 5), [0]), ((3, 4, 5), [-1]), ((3, 4, 5), [0, 2]), ((2, 3, 4, 5), [1, -1, 0]),
     ((7,), [0]), ((2, 0, 3), [1]), ((1, 6), [0, 1]), ((4, 5), [])],
)  # fmt: skip
def test_flip(check, dtype, shape, dims) -> None:
    check(lambda t: torch.flip(t, dims), sample(shape, dtype), ops=["aten::flip.out"])


def test_flip_rejects_a_repeated_dim_and_a_wrong_out(refused) -> None:
    program = oracle.export(lambda t: torch.flip(t, [0]), (torch.ones(2, 3),))
    for dims, out_shape, error, reason in [
        ([0, -2], (2, 3), "InvalidArgument", "dim 0 repeats"),
        ([2], (2, 3), "InvalidArgument", "out of range"),
        ([0], (3, 2), "ShapeMismatch", "shape"),
    ]:
        edit = EditedProgram(program)
        args = [edit.input(np.ones((2, 3), np.float32)), edit.int_list(dims)]
        edit.call_with_out("aten::flip.out", args, np.float32, out_shape)
        name, why = refused(edit)
        assert name == error and reason in why, (name, why)


UNFOLD = ["aten::unfold_copy.out"]


@pytest.mark.parametrize("dtype", [*DTYPES, torch.float16])
@pytest.mark.parametrize(
    "shape,dim,size,step",
    [((7,), 0, 2, 1), ((3, 8), 1, 3, 2), ((4, 5, 2), 0, 4, 3), ((2, 6, 3), -2, 6, 1),
     ((5, 3), 0, 0, 2), ((2, 9), -1, 1, 4)],
)  # fmt: skip
def test_unfold(check, dtype, shape, dim, size, step) -> None:
    """Overlapping windows, a stride past the window, one window, empty windows."""
    check(lambda t: t.unfold(dim, size, step), sample(shape, dtype), ops=UNFOLD, core_aten=False)


def test_unfold_rejects_bad_windows(refused) -> None:
    program = oracle.export(lambda t: t.unfold(0, 2, 1), (torch.ones(4),), core_aten=False)
    for dim, size, step, out_shape, error, reason in [
        (0, 5, 1, (1, 5), "InvalidArgument", "size 5 is outside [0, 4]"),
        (0, 2, 0, (3, 2), "InvalidArgument", "step is 0"),
        (1, 2, 1, (3, 2), "InvalidArgument", "out of range"),
        (0, 2, 1, (2, 2), "ShapeMismatch", "expected [3, 2]"),
    ]:
        edit = EditedProgram(program)
        args = [edit.input(np.arange(1, 5, dtype=np.float32)), edit.int(dim), edit.int(size)]
        edit.call_with_out(UNFOLD[0], [*args, edit.int(step)], np.float32, out_shape)
        name, why = refused(edit)
        assert name == error and reason in why, (name, why)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,repeats",
    [((2, 3), (2, 1)), ((2, 3), (1, 3)), ((4,), (2, 2, 3)), ((1, 1), (1, 1)), ((2, 3), (0, 2)),
     ((2, 1, 3), (1, 4, 2))],
)  # fmt: skip
def test_repeat(check, dtype, shape, repeats) -> None:
    check(lambda t: t.repeat(*repeats), sample(shape, dtype), ops=["aten::repeat.out"])


def test_repeat_rejects_too_few_repeats_and_a_wrong_out(refused) -> None:
    program = oracle.export(lambda t: t.repeat(2, 1), (torch.ones(2, 3),))
    for repeats, out_shape, error, reason in [
        ([2], (4, 3), "InvalidArgument", "1 repeats for a 2-d self"),
        ([-1, 1], (2, 3), "InvalidArgument", "repeats[0] = -1"),
        ([2, 1], (4, 4), "ShapeMismatch", "shape"),
    ]:
        edit = EditedProgram(program)
        args = [edit.input(np.ones((2, 3), np.float32)), edit.int_list(repeats)]
        edit.call_with_out("aten::repeat.out", args, np.float32, out_shape)
        name, why = refused(edit)
        assert name == error and reason in why, (name, why)


def test_view_unsqueeze_squeeze(check) -> None:
    check(
        lambda t: (t.view(3, -1), t.unsqueeze(0).squeeze(0) * 2, t.reshape(12)[None]),
        sample((3, 4), torch.float32),
        ops=["aten::view_copy.out", "aten::unsqueeze_copy.out", "aten::squeeze_copy.dims_out",
             "aten::mul.out"],
    )  # fmt: skip


def test_view_copy_rejects_wrong_numel(refused) -> None:
    pte = oracle.export(lambda t: t.view(4, 3), (torch.ones(3, 4),))
    edit = EditedProgram(pte)
    args = [edit.input(np.ones((3, 4), np.float32)), edit.int_list([5, 2])]
    edit.call_with_out("aten::view_copy.out", args, np.float32, (5, 2))
    name, why = refused(edit)
    assert name == "ShapeMismatch" and "size has 10 elements" in why


@pytest.mark.parametrize(
    "index",
    [
        (slice(None), slice(1, 5, 2)),
        (slice(-3, None),),
        (slice(None), slice(4, 2)),  # empty
        (slice(None), slice(-100, 100, 3)),  # clamped
        (slice(1, 2),),
    ],
)
def test_slice(check, index) -> None:
    check(lambda t: t[index], sample((4, 6), torch.float32), ops=["aten::slice_copy.Tensor_out"])


@pytest.mark.parametrize("dtype", [torch.float32, torch.int8])
def test_cat(check, dtype) -> None:
    a, b, c = sample((2, 3), dtype), sample((2, 0), dtype), sample((2, 5), dtype)
    check(lambda x, y, z: torch.cat([x, y, z], dim=-1), a, b, c, ops=["aten::cat.out"])
    check(lambda x, y: torch.cat([x, y], dim=0), a, a, ops=["aten::cat.out"])


def test_cat_skips_legacy_empty_and_rejects_mismatch(host_run, refused) -> None:
    pte = oracle.export(lambda x, y: torch.cat([x, y]), (torch.ones(2, 3), torch.ones(2, 3)))
    edit = EditedProgram(pte)
    a = edit.input(np.ones((2, 3), np.float32))
    empty = edit.input(np.zeros((0,), np.float32))  # a 1-d empty tensor: skipped, as in ATen
    args = [edit.tensor_list([a, empty, a]), edit.int(0)]
    edit.call_with_out("aten::cat.out", args, np.float32, (4, 3))
    (got,) = host_run(edit.to_bytes(), edit.inputs).outputs()
    np.testing.assert_array_equal(got, np.ones((4, 3), np.float32))

    edit = EditedProgram(pte)
    a, b = edit.input(np.ones((2, 3), np.float32)), edit.input(np.ones((2, 4), np.float32))
    edit.call_with_out("aten::cat.out", [edit.tensor_list([a, b]), edit.int(0)], np.float32, (4, 3))
    name, why = refused(edit)
    assert name == "ShapeMismatch" and "tensors[1]" in why


def test_expand(check) -> None:
    check(lambda t: t.expand(2, 4, 3) + 0, sample((4, 1), torch.float32)[:, :1].reshape(4, 1),
          ops=["aten::expand_copy.out", "aten::add.out"])  # fmt: skip


@pytest.mark.parametrize(
    "src,dst",
    [
        (torch.float32, torch.int32),
        (torch.float32, torch.int8),
        (torch.int8, torch.float32),
        (torch.int64, torch.float32),
        (torch.float32, torch.bool),
        (torch.bool, torch.int16),
        (torch.int16, torch.uint8),
        (torch.float32, torch.float64),
    ],
)
def test_to_dtype(check, src, dst) -> None:
    x = (torch.linspace(-120, 120, 37) if src.is_floating_point else torch.arange(-18, 19)).to(src)
    check(lambda t: t.to(dst), x, ops=["dim_order_ops::_to_dim_order_copy.out"])


COPY = ["dim_order_ops::_to_dim_order_copy.out"]


def readable(dtype: torch.dtype):
    """t -> t.to(dtype), read back as float32 when numpy has no such dtype (bfloat16)."""
    if dtype == torch.bfloat16:
        return lambda t: t.to(dtype).float()
    return lambda t: t.to(dtype)


@pytest.mark.parametrize("dst", oracle.REDUCED)
def test_to_reduced_float(check, dst) -> None:
    """Float and Double -> Half / BFloat16: round to nearest, ties to even (normal and
    subnormal ties, overflow at the tie above the largest value), NaN, signed zeros; Double
    and Long round to float first, then to the 16-bit type (as c10's conversions do)."""
    f = torch.finfo(dst)
    eps, sub, top = f.eps, f.tiny * f.eps, f.max
    tie_top = top / (2 - eps) * eps / 2
    edges = [1 + eps / 2, 1 + 3 * eps / 2, 1 + eps / 2 + eps / 64, -(1 + eps / 2), top + tie_top,
             top + tie_top * 0.99, -(top + tie_top), sub / 2, 3 * sub / 2, sub / 2 * 1.01,
             -sub / 2, f.tiny - sub / 2, 1e-30, -1e-30, np.nan, np.inf, -np.inf, -0.0, 0.0,
             3.14159, 1e10]  # fmt: skip
    x = torch.cat([torch.tensor(edges, dtype=torch.float32), torch.randn(30) * 100])
    check(readable(dst), x, ops=COPY)
    doubles = torch.tensor(
        [1 + eps / 2 + 2**-40, -(1 + eps / 2 + 2**-40), 1 + eps / 4], dtype=torch.float64
    )
    check(readable(dst), torch.cat([doubles, x.double()]), ops=COPY)
    check(readable(dst), torch.tensor([2049, -2051, 65519, 65520, 2**24 + 1, 0, -1]), ops=COPY)


@pytest.mark.parametrize("src", oracle.REDUCED)
@pytest.mark.parametrize(
    "dst", [torch.float32, torch.float64, torch.int32, torch.int8, torch.bool, torch.float16,
            torch.bfloat16]
)  # fmt: skip
def test_from_reduced_float(check, src, dst) -> None:
    """Half / BFloat16 -> other dtypes: through float (exact), then as float converts."""
    if src == dst:
        pytest.skip("no conversion: export leaves no copy")
    x = torch.cat([torch.linspace(-120, 120, 37), torch.tensor([0.5, -0.0, 1e-6, 3e4])])
    if dst.is_floating_point:
        x = torch.cat([x, torch.tensor([np.nan, np.inf, -np.inf, 65504.0, 1e38])])
    check(readable(dst), x.to(src), ops=COPY)


def test_clone(check) -> None:
    check(
        lambda t: t.clone(),
        sample((3, 5), torch.int16),
        ops=["dim_order_ops::_clone_dim_order.out"],
    )


def test_aten_clone_and_memory_format(host_run, refused) -> None:
    """aten::clone.out (export makes _clone_dim_order instead): memory_format None and
    contiguous copy, channels_last is refused."""
    x = np.arange(1, 11, dtype=np.int16).reshape(2, 5)
    pte = oracle.export(lambda t: t.clone(), (torch.from_numpy(x),))
    for fmt in (None, 0, 2):  # 2 = channels_last
        edit = EditedProgram(pte)
        memory_format = edit.none() if fmt is None else edit.int(fmt)
        edit.call_with_out("aten::clone.out", [edit.input(x), memory_format], np.int16, (2, 5))
        if fmt == 2:
            name, why = refused(edit)
            assert name == "NotSupported" and "memory_format" in why, why
        else:
            (got,) = host_run(edit.to_bytes(), edit.inputs).outputs()
            np.testing.assert_array_equal(got, x)
