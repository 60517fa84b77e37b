"""Data-movement kernels against ExecuTorch: split, permute/transpose, view copies, slice,
cat, expand, clone, dtype conversion; edge shapes and malformed calls."""

from __future__ import annotations

import kcase
import numpy as np
import pytest
import torch

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


def split_case(x: np.ndarray, sizes: list[int], dim: int, out_shapes, out_dtype=None):
    c = kcase.CaseBuilder()
    t = c.tensor(x)
    outs = [c.tensor(dtype=out_dtype or x.dtype, shape=s) for s in out_shapes]
    c.call(SPLIT[0], [t, c.int_list(sizes), c.int(dim), c.tensor_list(outs)])
    return c


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
def test_split_rejects(host, sizes, dim, out_shapes, dtype, error, reason) -> None:
    result = host.run_one(split_case(np.zeros((4, 4), np.float32), sizes, dim, out_shapes, dtype))
    assert result.status == error, result.reason
    assert reason in result.reason
    # nothing written before the checks were done
    for arena in result.arenas[1:]:
        assert arena == bytes([kcase.FILL]) * len(arena)


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


def test_transpose_copy(host) -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    c = kcase.CaseBuilder()
    t = c.tensor(x)
    out = c.tensor(dtype=np.float32, shape=(4, 3, 2))
    c.call("aten::transpose_copy.int_out", [t, c.int(-1), c.int(0), out, out])
    np.testing.assert_array_equal(host.run_one(c).ok().tensor(out), x.transpose(2, 1, 0))


def test_permute_rejects_repeated_dim(host) -> None:
    c = kcase.CaseBuilder()
    t = c.tensor(np.zeros((2, 3), np.float32))
    out = c.tensor(dtype=np.float32, shape=(2, 3))
    c.call("aten::permute_copy.out", [t, c.int_list([0, 0]), out, out])
    result = host.run_one(c)
    assert result.status == "InvalidArgument" and "repeats" in result.reason


def test_view_unsqueeze_squeeze(check) -> None:
    check(
        lambda t: (t.view(3, -1), t.unsqueeze(0).squeeze(0) * 2, t.reshape(12)[None]),
        sample((3, 4), torch.float32),
        ops=["aten::view_copy.out", "aten::unsqueeze_copy.out", "aten::squeeze_copy.dims_out",
             "aten::mul.out"],
    )  # fmt: skip


def test_view_copy_rejects_wrong_numel(host) -> None:
    c = kcase.CaseBuilder()
    t = c.tensor(np.zeros((3, 4), np.float32))
    out = c.tensor(dtype=np.float32, shape=(5, 2))
    c.call("aten::view_copy.out", [t, c.int_list([5, 2]), out, out])
    result = host.run_one(c)
    assert result.status == "ShapeMismatch" and "size has 10 elements" in result.reason


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


def test_cat_skips_legacy_empty_and_rejects_mismatch(host) -> None:
    c = kcase.CaseBuilder()
    a = c.tensor(np.ones((2, 3), np.float32))
    empty = c.tensor(np.zeros((0,), np.float32))
    out = c.tensor(dtype=np.float32, shape=(4, 3))
    c.call("aten::cat.out", [c.tensor_list([a, empty, a]), c.int(0), out, out])
    np.testing.assert_array_equal(host.run_one(c).ok().tensor(out), np.ones((4, 3), np.float32))
    c = kcase.CaseBuilder()
    a, b = c.tensor(np.ones((2, 3), np.float32)), c.tensor(np.ones((2, 4), np.float32))
    out = c.tensor(dtype=np.float32, shape=(4, 3))
    c.call("aten::cat.out", [c.tensor_list([a, b]), c.int(0), out, out])
    result = host.run_one(c)
    assert result.status == "ShapeMismatch" and "tensors[1]" in result.reason


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


def test_clone(check) -> None:
    check(
        lambda t: t.clone(),
        sample((3, 5), torch.int16),
        ops=["dim_order_ops::_clone_dim_order.out"],
    )


def test_aten_clone_and_memory_format(host) -> None:
    x = np.arange(10, dtype=np.int16).reshape(2, 5)
    for fmt, status in [(None, "Ok"), (0, "Ok"), (2, "NotSupported")]:  # 2 = channels_last
        c = kcase.CaseBuilder()
        t = c.tensor(x)
        out = c.tensor(dtype=np.int16, shape=(2, 5))
        c.call("aten::clone.out", [t, c.none() if fmt is None else c.int(fmt), out, out])
        result = host.run_one(c)
        assert result.status == status, result.reason
        if status == "Ok":
            np.testing.assert_array_equal(result.tensor(out), x)
