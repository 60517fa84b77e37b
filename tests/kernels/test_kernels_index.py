"""Selection kernels against ExecuTorch: where (broadcasting three operands, promotion, a Byte
condition), select_copy, index_select (Long and Int indices) and gather (Long), repeats,
argmax (ties, NaN, dim None, keepdim); malformed calls."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support import koracle as oracle
from tests.support.kprogram import EditedProgram

WHERE, SELECT = ["aten::where.self_out"], ["aten::select_copy.int_out"]
INDEX_SELECT, ARGMAX = ["aten::index_select.out"], ["aten::argmax.out"]
DTYPES = [torch.float32, torch.int8, torch.int16, torch.int64, torch.bool, torch.float64]


def data(shape, dtype, seed=0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=dtype) * 10
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=gen, dtype=torch.int64).to(dtype)


@pytest.mark.parametrize(
    "c_shape,a_shape,b_shape",
    [((4, 5), (4, 5), (4, 5)), ((4, 1), (5,), (4, 5)), ((2, 1, 3), (4, 1), (3,)),
     ((3,), (2, 3), (2, 1)), ((1, 9), (7, 1), (1,)), ((0, 3), (3,), (1, 3))],
)  # fmt: skip
def test_where_broadcasting(check, c_shape, a_shape, b_shape) -> None:
    c = data(c_shape, torch.bool, 1)
    check(torch.where, c, data(a_shape, torch.float32, 2), data(b_shape, torch.float32, 3),
          ops=WHERE)  # fmt: skip


@pytest.mark.parametrize("dtype", [*DTYPES, *oracle.REDUCED])
def test_where_dtypes(check, dtype) -> None:
    c = data((3, 11), torch.bool, 4)
    check(torch.where, c, data((3, 11), dtype, 5), data((11,), dtype, 6), ops=WHERE)


@pytest.mark.parametrize(
    "a_dtype,b_dtype",
    [(torch.int8, torch.int16), (torch.int32, torch.float32), (torch.uint8, torch.int8),
     (torch.bool, torch.int64), (torch.float32, torch.float64), (torch.float16, torch.float32),
     (torch.int16, torch.float16)],
)  # fmt: skip
def test_where_promotion(check, a_dtype, b_dtype) -> None:
    c = data((2, 9), torch.bool, 7)
    check(torch.where, c, data((2, 9), a_dtype, 8), data((9,), b_dtype, 9), ops=WHERE)


@pytest.fixture(scope="module")
def where_program() -> bytes:
    c = torch.tensor([True, False])
    return oracle.export(torch.where, (c, torch.ones(2), torch.zeros(2)))


def test_where_byte_condition(check_edit, where_program) -> None:
    edit = EditedProgram(where_program)
    c = edit.input(np.array([[0, 1, 2, 255]], np.uint8))
    args = [c, edit.input(np.arange(8, dtype=np.int16).reshape(2, 4) + 1),
            edit.input(np.full((2, 1), -5, np.int8))]  # fmt: skip
    edit.call_with_out(WHERE[0], args, np.int16, (2, 4))
    check_edit(edit)


@pytest.mark.parametrize(
    "c,a,b,out_dtype,out_shape,error,reason",
    [
        (np.int32, np.float32, np.float32, np.float32, (4,), "DtypeMismatch", "Bool or Byte"),
        (np.bool_, np.int32, np.float32, np.float64, (4,), "DtypeMismatch", "!= out dtype"),
        (np.bool_, np.float32, np.float32, np.float32, (5,), "ShapeMismatch", "expected [4]"),
    ],
)
def test_where_refused(refused, where_program, c, a, b, out_dtype, out_shape, error, reason):
    edit = EditedProgram(where_program)
    args = [edit.input(np.ones(4, c)), edit.input(np.ones(4, a)), edit.input(np.ones(4, b))]
    edit.call_with_out(WHERE[0], args, out_dtype, out_shape)
    name, why = refused(edit)
    assert name == error and why.startswith(f"{WHERE[0]}: ") and reason in why, why


def test_where_three_shapes_refused(refused, where_program) -> None:
    edit = EditedProgram(where_program)
    args = [edit.input(np.ones((2, 1), np.bool_)), edit.input(np.ones(3, np.float32)),
            edit.input(np.ones(4, np.float32))]  # fmt: skip
    edit.call_with_out(WHERE[0], args, np.float32, (2, 4))
    name, why = refused(edit)
    assert name == "ShapeMismatch" and "shapes [3], [4] and [2, 1] do not broadcast" in why, why


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,dim,index", [((4, 5), 0, 2), ((4, 5), 1, -1), ((2, 3, 4), 1, 0), ((2, 3, 4), -1, 3),
                        ((7,), 0, 6), ((2, 0, 3), 2, 1), ((1, 1, 33), 2, 16)]
)  # fmt: skip
def test_select(check, dtype, shape, dim, index) -> None:
    check(lambda t: t.select(dim, index), data(shape, dtype, 10), ops=SELECT)


@pytest.fixture(scope="module")
def select_program() -> bytes:
    return oracle.export(lambda t: t[1], (torch.ones(3, 4),))


@pytest.mark.parametrize(
    "shape,dim,index,out_shape,out_dtype,error,reason",
    [
        ((3, 4), 0, 3, (4,), np.float32, "InvalidArgument", "index 3 is out of range"),
        ((3, 4), 1, -5, (3,), np.float32, "InvalidArgument", "out of range"),
        ((3, 4), 2, 0, (3,), np.float32, "InvalidArgument", "dim = 2 is out of range"),
        ((3, 4), 0, 1, (3,), np.float32, "ShapeMismatch", "expected [4]"),
        ((3, 4), 0, 1, (4,), np.int32, "DtypeMismatch", "dtype"),
        ((), 0, 0, (), np.float32, "InvalidArgument", "at least one dim"),
    ],
)
def test_select_refused(refused, select_program, shape, dim, index, out_shape, out_dtype,
                        error, reason) -> None:  # fmt: skip
    edit = EditedProgram(select_program)
    x = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape)
    edit.call_with_out(
        SELECT[0], [edit.input(x), edit.int(dim), edit.int(index)], out_dtype, out_shape
    )
    name, why = refused(edit)
    assert name == error and why.startswith(f"{SELECT[0]}: ") and reason in why, why


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,dim,index", [((4, 5), 0, [2, 0, 2, 3]), ((4, 5), 1, [4]), ((2, 3, 4), 1, [0, 2, 1, 0]),
                        ((2, 3, 4), -1, [3, 0]), ((6,), 0, []), ((2, 3, 40), 2, [39, 0, 17])]
)  # fmt: skip
def test_index_select(check, dtype, shape, dim, index) -> None:
    idx = torch.tensor(index, dtype=torch.int64)
    check(lambda t, i: torch.index_select(t, dim, i), data(shape, dtype, 11), idx, ops=INDEX_SELECT)


def test_index_select_int_index_and_0d(check) -> None:
    x = data((3, 5), torch.float32, 12)
    check(lambda t, i: torch.index_select(t, 0, i), x, torch.tensor([2, 2, 0], dtype=torch.int32),
          ops=INDEX_SELECT)  # fmt: skip
    check(lambda t, i: torch.index_select(t, 1, i), x, torch.tensor(4), ops=INDEX_SELECT)


GATHER = ["aten::gather.out"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,dim,index_shape", [((4, 5), 0, (3, 5)), ((4, 5), 1, (4, 7)), ((2, 3, 4), 1, (2, 2, 3)),
                              ((2, 3, 4), -1, (1, 3, 4)), ((6,), 0, (9,)), ((3, 4), 0, (0, 4))]
)  # fmt: skip
def test_gather(check, dtype, shape, dim, index_shape) -> None:
    """Repeats, an index smaller than self off `dim`, an empty index; Long indices."""
    size = shape[dim]
    idx = (torch.arange(int(np.prod(index_shape))) * 7 % size).reshape(index_shape)
    check(lambda t, i: torch.gather(t, dim, i), data(shape, dtype, 13), idx, ops=GATHER)


def test_gather_refusals(refused) -> None:
    """As ExecuTorch: an Int index is refused too (its kernel takes Long only)."""
    x = data((3, 5), torch.float32, 14)
    idx = torch.tensor([[2, 0, 1, 1, 0]])
    program = oracle.export(lambda t, i: torch.gather(t, 0, i), (x, idx))
    for index, out_shape, error, reason in [
        (np.array([[2, 0, 1, 1, 0]], np.int32), (1, 5), "DtypeMismatch", "index has dtype Int"),
        ([[0, 3, 0, 0, 0]], (1, 5), "InvalidArgument", "index[1] = 3 is out of range [0, 3)"),
        ([[0] * 6], (1, 6), "InvalidArgument", "larger than self's 5"),
        ([0, 1], (2,), "InvalidArgument", "index has 1 dims, self 2"),
        ([[0] * 5], (5, 1), "ShapeMismatch", "expected [1, 5]"),
    ]:
        edit = EditedProgram(program)
        index = index if isinstance(index, np.ndarray) else np.array(index, np.int64)
        args = [edit.input(x.numpy()), edit.int(0), edit.input(index)]
        args.append(edit.bool(False))
        edit.call_with_out(GATHER[0], args, np.float32, out_shape)
        name, why = refused(edit)
        assert name == error and reason in why, (name, why)


@pytest.fixture(scope="module")
def index_program() -> bytes:
    return oracle.export(
        lambda t, i: torch.index_select(t, 0, i), (torch.ones(3), torch.tensor([0]))
    )


@pytest.mark.parametrize(
    "index,index_dtype,dim,out_shape,error,reason",
    [
        ([0, 3], np.int64, 0, (2, 4), "InvalidArgument", "index[1] = 3 is out of range [0, 3)"),
        ([-1], np.int64, 0, (1, 4), "InvalidArgument", "index[0] = -1"),
        ([0], np.int16, 0, (1, 4), "DtypeMismatch", "index has dtype Short"),
        ([[0]], np.int64, 0, (1, 4), "InvalidArgument", "at most one dim"),
        ([0, 1], np.int32, 1, (3, 3), "ShapeMismatch", "expected [3, 2]"),
        ([0], np.int64, 2, (1, 4), "InvalidArgument", "out of range"),
    ],
)
def test_index_select_refused(refused, index_program, index, index_dtype, dim, out_shape,
                              error, reason) -> None:  # fmt: skip
    edit = EditedProgram(index_program)
    x = edit.input(np.arange(1, 13, dtype=np.float32).reshape(3, 4))
    args = [x, edit.int(dim), edit.input(np.array(index, index_dtype))]
    edit.call_with_out(INDEX_SELECT[0], args, np.float32, out_shape)
    name, why = refused(edit)
    assert name == error and why.startswith(f"{INDEX_SELECT[0]}: ") and reason in why, why


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int8, torch.uint8,
                                   torch.int16, torch.int32, torch.int64])  # fmt: skip
@pytest.mark.parametrize(
    "dim,keepdim", [(None, False), (None, True), (0, False), (1, True), (-1, False), (2, True)]
)
def test_argmax(check, dtype, dim, keepdim) -> None:
    x = data((3, 4, 5), dtype, 13)
    if not dtype.is_floating_point:
        x = x % 7  # ties: the first maximum wins
    check(lambda t: torch.argmax(t, dim=dim, keepdim=keepdim), x, ops=ARGMAX)


def test_argmax_nan_and_ties(check) -> None:
    inf, nan = np.inf, np.nan
    x = torch.tensor([[1.0, nan, 3.0, nan], [2.0, 2.0, -1.0, 2.0], [-inf, -inf, -inf, -inf],
                      [nan, 5.0, 1.0, 0.0], [-0.0, 0.0, -0.0, 0.0]])  # fmt: skip
    check(lambda t: torch.argmax(t, dim=1), x, ops=ARGMAX)
    check(lambda t: torch.argmax(t, dim=0), x, ops=ARGMAX)
    check(lambda t: torch.argmax(t), x, ops=ARGMAX)


def test_argmax_0d_and_empty_outer(check) -> None:
    check(lambda t: torch.argmax(t), torch.tensor(2.5), ops=ARGMAX)
    check(lambda t: torch.argmax(t, dim=1), torch.zeros(0, 3), ops=ARGMAX)


@pytest.fixture(scope="module")
def argmax_program() -> bytes:
    return oracle.export(lambda t: torch.argmax(t, dim=1), (torch.ones(2, 3),))


@pytest.mark.parametrize(
    "shape,dtype,dim,keepdim,out_shape,out_dtype,error,reason",
    [
        ((2, 3), np.float32, 1, False, (2,), np.int32, "DtypeMismatch", "out must be Long"),
        ((2, 3), np.bool_, 1, False, (2,), np.int64, "DtypeMismatch", "does not take"),
        ((2, 3), np.float32, 2, False, (2,), np.int64, "InvalidArgument", "out of range"),
        ((2, 3), np.float32, 1, True, (2,), np.int64, "ShapeMismatch", "expected [2, 1]"),
        ((2, 0), np.float32, 1, False, (2,), np.int64, "InvalidArgument", "empty along dim 1"),
        ((0, 0), np.float32, 1, False, (0,), np.int64, "InvalidArgument", "empty along dim 1"),
        ((0, 3), np.float32, None, False, (), np.int64, "InvalidArgument", "self is empty"),
    ],
)
def test_argmax_refused(refused, argmax_program, shape, dtype, dim, keepdim, out_shape,
                        out_dtype, error, reason) -> None:  # fmt: skip
    edit = EditedProgram(argmax_program)
    x = edit.input(np.arange(1, 1 + int(np.prod(shape))).reshape(shape).astype(dtype))
    args = [x, edit.none() if dim is None else edit.int(dim), edit.bool(keepdim)]
    edit.call_with_out(ARGMAX[0], args, out_dtype, out_shape)
    name, why = refused(edit)
    assert name == error and why.startswith(f"{ARGMAX[0]}: ") and reason in why, why


WHERE_SCALAR = ["aten::scalar_tensor.out", *WHERE]


@pytest.mark.parametrize(
    "fn,x",
    [
        (lambda c, t: torch.where(c, t, 0.0), data((3, 7), torch.float32, 14)),
        (lambda c, t: torch.where(c, -2.5, t), data((3, 7), torch.float64, 15)),
        (lambda c, t: torch.where(c, t, 7), data((3, 7), torch.int16, 16)),
        (lambda c, t: torch.where(c, True, t), data((3, 7), torch.bool, 17)),
    ],
)
def test_where_scalar(check, fn, x) -> None:
    """Export turns where's Python-number operands into scalar_tensor.out + where.self_out."""
    check(fn, data((3, 7), torch.bool, 18), x, ops=WHERE_SCALAR)


@pytest.mark.parametrize(
    "s,out_dtype,out_shape,error,reason",
    [
        (300, np.int8, (), "InvalidArgument", "s overflows dtype Char"),
        (float("nan"), np.int32, (), "InvalidArgument", "s overflows dtype Int"),
        (1e39, np.float32, (), "InvalidArgument", "s overflows dtype Float"),
        (1, np.int32, (1,), "ShapeMismatch", "expected []"),
    ],
)
def test_scalar_tensor_refused(refused, where_program, s, out_dtype, out_shape, error, reason):
    edit = EditedProgram(where_program)
    value = edit.double(s) if isinstance(s, float) else edit.int(s)
    edit.call_with_out(WHERE_SCALAR[0], [value], out_dtype, out_shape)
    name, why = refused(edit)
    assert name == error and why.startswith(f"{WHERE_SCALAR[0]}: ") and reason in why, why


def test_scalar_tensor_like_executorch(check_edit, where_program) -> None:
    """-5 wraps into uint8 (251), 2.75 truncates into int16, anything goes into Bool."""
    for s, out_dtype in [(-5, np.uint8), (2.75, np.int16), (0.5, np.bool_), (-1e30, np.float64)]:
        edit = EditedProgram(where_program)
        value = edit.double(s) if isinstance(s, float) else edit.int(s)
        edit.call_with_out(WHERE_SCALAR[0], [value], out_dtype, ())
        check_edit(edit)


INDEX, INDEX_PUT = ["aten::index.Tensor_out"], ["aten::index_put.out"]


def _idx(values, dtype=torch.int64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


# (self shape, the indexing as a function of (t, i, j), i, j): one index, a dim taken whole
# first, two broadcast together, non-adjacent indices (their dims go first), negative values.
INDEXINGS = [
    ((4, 5), lambda t, i, j: t[i], [2, 0, 2, 3], None),
    ((4, 5), lambda t, i, j: t[:, i], [[4, 0], [1, 1]], None),
    ((3, 4, 5), lambda t, i, j: t[i, j], [[0], [2]], [1, 3, 0]),
    ((3, 4, 5), lambda t, i, j: t[i, :, j], [2, 0], [4, 1]),
    ((2, 3, 4, 5), lambda t, i, j: t[:, i, j], [-1, 0], [-4]),
    ((6,), lambda t, i, j: t[i], [], None),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,fn,i,j", INDEXINGS)
def test_index_tensor(check, dtype, shape, fn, i, j) -> None:
    x = data(shape, dtype, 21)
    ii = _idx(i)
    jj = _idx(j if j is not None else 0)
    check(lambda t, a, b: fn(t, a, b), x, ii, jj, ops=INDEX)


def test_index_tensor_int_index(check) -> None:
    x = data((3, 4), torch.float32, 22)
    check(lambda t, i: t[:, i], x, _idx([3, -4, 1], torch.int32), ops=INDEX)


def _indexing_call(edit, op, x, entries, out_dtype, out_shape, extra=()) -> None:
    """op(x, [entries...], *extra, out): entries are arrays (index tensors) or None."""
    items = [None if e is None else edit.input(e) for e in entries]
    args = [edit.input(x), edit.optional_tensor_list(items), *extra]
    edit.call_with_out(op, args, out_dtype, out_shape)


@pytest.fixture(scope="module")
def index_tensor_program() -> bytes:
    return oracle.export(lambda t, i: t[i], (torch.ones(3), torch.tensor([0])))


@pytest.mark.parametrize(
    "shape,entries,out_shape",
    [
        ((3, 4), [np.array([True, False, True])], (2, 4)),  # a mask over one dim
        ((3, 4), [None, np.array([0, 1, 1, 0], np.uint8)], (3, 2)),  # a Byte mask, after a null
        ((2, 3, 4), [np.array([[1, 0, 1], [0, 0, 1]], np.bool_)], (3, 4)),  # over two dims
        # one true entry broadcasts
        ((3, 4), [np.array([False, True, False]), np.array([0, 3, 2])], (3,)),
        ((3, 4), [None, None], (3, 4)),  # nothing indexed: a copy
    ],
)
def test_index_tensor_masks_and_nulls(check_edit, index_tensor_program, shape, entries, out_shape):
    """Calls export does not make (a bool mask has a data-dependent shape), against ExecuTorch
    running the same program."""
    edit = EditedProgram(index_tensor_program)
    x = np.arange(1, int(np.prod(shape)) + 1, dtype=np.float32).reshape(shape)
    _indexing_call(edit, INDEX[0], x, entries, np.float32, out_shape)
    check_edit(edit)


@pytest.mark.parametrize(
    "entries,out_shape,error,reason",
    [
        ([np.array([0, 3])], (2, 4), "InvalidArgument", "indices[0][1] = 3 is out of bounds"),
        ([np.array([-4])], (1, 4), "InvalidArgument", "indices[0][0] = -4 is out of bounds"),
        ([np.array([0], np.int16)], (1, 4), "DtypeMismatch", "indices[0] has dtype Short"),
        ([np.array([True, False])], (1, 4), "InvalidArgument", "does not match in's dims"),
        ([np.array([0]), np.array([0]), np.array([0])], (1,), "InvalidArgument", "3 indices"),
        ([np.array([0, 1]), np.array([0, 1, 2])], (3,), "InvalidArgument", "does not broadcast"),
        ([np.array([0, 1])], (2, 3), "ShapeMismatch", "expected [2, 4]"),
    ],
)
def test_index_tensor_refused(refused, index_tensor_program, entries, out_shape, error, reason):
    edit = EditedProgram(index_tensor_program)
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    _indexing_call(edit, INDEX[0], x, entries, np.float32, out_shape)
    name, why = refused(edit)
    assert name == error and why.startswith(f"{INDEX[0]}: ") and reason in why, why


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize(
    "shape,indices,values_shape",
    [((5,), ([4, 0, 2],), (3,)), ((4, 5), ([1, 3],), (5,)), ((3, 4, 5), ([2, 0], [1, 3]), (2, 5)),
     ((3, 4), ([0, 2, 0],), (1,)), ((3, 4, 5), (None, [3, 1]), (3, 2, 5))],
)  # fmt: skip
def test_index_put(check, dtype, accumulate, shape, indices, values_shape) -> None:
    """A repeated index writes last (or adds twice), values broadcast, a dim taken whole."""
    if dtype == torch.bool and accumulate:
        pytest.skip("PyTorch's index_put accumulate refuses Bool")
    x = data(shape, dtype, 23)
    v = data(values_shape, dtype, 24)
    n = sum(i is not None for i in indices)
    idx = [_idx(i) for i in indices if i is not None]

    def fn(t, values, *given):
        it = iter(given)
        full = tuple(None if i is None else next(it) for i in indices)
        return torch.ops.aten.index_put.default(t, full, values, accumulate)

    assert len(idx) == n
    check(fn, x, v, *idx, ops=INDEX_PUT)


@pytest.mark.parametrize("dtype", [torch.bool, torch.float16, torch.int8])
def test_index_put_masks(check_edit, index_tensor_program, dtype) -> None:
    """A Bool mask (a call export does not make); ExecuTorch's Bool accumulate is `or`; int8
    wraps; Half rounds every sum."""
    edit = EditedProgram(index_tensor_program)
    x = data((3, 4), dtype, 25).numpy()
    v = data((4,), dtype, 26).numpy()
    mask = np.array([True, False, True])
    items = [edit.input(mask)]
    args = [edit.input(x), edit.optional_tensor_list(items), edit.input(v), edit.bool(True)]
    edit.call_with_out(INDEX_PUT[0], args, x.dtype, (3, 4))
    check_edit(edit)


@pytest.mark.parametrize(
    "values_shape,values_dtype,out_shape,index,error,reason",
    [
        ((3,), np.float32, (3, 4), [0, 2], "InvalidArgument", "do not broadcast"),
        ((4,), np.float64, (3, 4), [0, 2], "DtypeMismatch", "values"),
        ((4,), np.float32, (4, 4), [0, 2], "ShapeMismatch", "expected [3, 4]"),
        ((4,), np.float32, (3, 4), [0, 5], "InvalidArgument", "indices[0][1] = 5 is out of bounds"),
    ],
)
def test_index_put_refused(refused, index_tensor_program, values_shape, values_dtype, out_shape,
                           index, error, reason) -> None:  # fmt: skip
    edit = EditedProgram(index_tensor_program)
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    items = [edit.input(np.array(index, np.int64))]
    values = edit.input(np.ones(values_shape, values_dtype))
    args = [edit.input(x), edit.optional_tensor_list(items), values, edit.bool(False)]
    edit.call_with_out(INDEX_PUT[0], args, np.float32, out_shape)
    name, why = refused(edit)
    assert name == error and why.startswith(f"{INDEX_PUT[0]}: ") and reason in why, why
