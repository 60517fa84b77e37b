"""ExecuTorch's own runtime as the reference: export a function to a CPU-only program, run it
with the portable (and quantized) kernels, and compare another runtime's outputs with it."""

from __future__ import annotations

import executorch.kernels.quantized  # noqa: F401  (registers quantized_decomposed kernels)
import numpy as np
import torch
from executorch.exir import EdgeCompileConfig, to_edge
from executorch.runtime import Runtime

from sdk.program.pte import load_program, operator_name


def _memoize_cia_op_collection() -> None:
    """torch 2.13's run_decompositions (every to_edge) asks for the set of CompositeImplicit-
    Autograd operators three times, and each time walks every operator the dispatcher has:
    half the time of a one-op export, a thousand times in the kernel tests. No public API
    avoids the walk, so it is memoised here, for the kernel tests' exports alone; the set is
    computed again when the dispatcher's operator count or namespaces change. torch is pinned
    (requirements.lock) and the assert below fails loudly if its internals move."""
    import torch._export.utils as export_utils
    import torch.export.decomp_utils as decomp_utils
    import torch.export.exported_program as exported_program

    collect = export_utils._collect_all_valid_cia_ops
    memo: dict[tuple, frozenset] = {}

    def collect_memoized() -> set:
        key = (len(torch._C._dispatch_get_all_op_names()), tuple(sorted(torch.ops._dir)))
        if key not in memo:
            memo.clear()
            memo[key] = frozenset(collect())
        return set(memo[key])

    for module in (exported_program, decomp_utils):
        assert module._collect_all_valid_cia_ops is collect, "torch changed: drop this memo"
        module._collect_all_valid_cia_ops = collect_memoized


_memoize_cia_op_collection()


# Copies export adds around the ops under test (layout changes, Python-scalar casts).
GLUE_OPS = {"dim_order_ops::_clone_dim_order.out", "dim_order_ops::_to_dim_order_copy.out"}


class Fn(torch.nn.Module):
    """A module whose forward is `fn` (ops under test, written inline by each test)."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def export(fn, inputs: tuple[torch.Tensor, ...], core_aten: bool = True) -> bytes:
    """The .pte of a CPU-only program computing fn(*inputs). (to_edge: with no partitioner
    to_edge_transform_and_lower makes the same program, decomposing twice.) `core_aten`
    False: operators outside the Core ATen opset are kept (the bitwise shifts: ExecuTorch's
    runtime has kernels for them, its to_edge refuses them by default)."""
    ep = torch.export.export(Fn(fn), inputs)
    config = EdgeCompileConfig(_check_ir_validity=core_aten)
    return to_edge(ep, compile_config=config).to_executorch().buffer


def run(pte: bytes, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    program = Runtime.get().load_program(pte)  # holds the data the method reads while it runs
    return list(program.load_method("forward").execute(list(inputs)))


def run_arrays(pte: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """ExecuTorch's outputs for a program fed numpy arrays (an edited program's inputs)."""
    tensors = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in inputs)
    return [to_numpy(t) for t in run(pte, tensors)]


def operators(pte: bytes) -> list[str]:
    """The program's operator table, as the firmware's registry names them."""
    return [operator_name(op) for op in load_program(pte).plan.operators]


def check_operators(pte: bytes, ops) -> None:
    """The program calls exactly `ops`, plus at most GLUE_OPS (so a test cannot silently test
    something else)."""
    called = set(operators(pte))
    missing, extra = set(ops) - called, called - set(ops) - GLUE_OPS
    assert not missing and not extra, f"program calls {sorted(called)}, expected {ops}"


def assert_matches(
    actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-6, scale: np.ndarray | None = None
) -> None:
    """Integers bit-exact; floats within rtol of the expected value, or, with `scale`,
    within rtol * scale (for sums: the sum of the magnitudes of their terms, since a
    different summation order legitimately moves a result by a few ulps of its terms)."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if not np.issubdtype(expected.dtype, np.floating):
        np.testing.assert_array_equal(actual, expected)
    elif scale is None:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=0, equal_nan=True)
    else:
        err = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
        bound = rtol * scale + np.finfo(expected.dtype).tiny
        # equal values (infinities included) and NaN where ExecuTorch has NaN are fine
        same = (actual == expected) | (np.isnan(actual) & np.isnan(expected))
        bad = ~(err <= bound) & ~same
        assert not bad.any(), (
            f"{bad.sum()} of {bad.size} elements off by more than {rtol} x their scale; "
            f"worst error/scale {np.max(err / np.maximum(scale, 1e-300)):.3g}"
        )


def to_numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().contiguous().numpy()


REDUCED = [torch.float16, torch.bfloat16]


def bf16_io(fn, inputs: tuple[torch.Tensor, ...]):
    """(fn', inputs') computing fn on BFloat16 inputs through float32 ones: numpy, and so the
    runners' input and output files, has no bfloat16. fn' converts its float32 inputs to
    BFloat16 and BFloat16 outputs to float32 (_to_dim_order_copy, exact both ways for values
    a bfloat16 holds). Half needs none of this (numpy's float16)."""

    def io(*args):
        result = fn(*(a.to(torch.bfloat16) if a.dtype == torch.float32 else a for a in args))
        outs = result if isinstance(result, tuple) else (result,)
        outs = tuple(o.float() if o.dtype == torch.bfloat16 else o for o in outs)
        return outs if isinstance(result, tuple) else outs[0]

    for t in inputs:
        assert t.dtype != torch.float32, "a bfloat16 case cannot also take float32 inputs"
    return io, tuple(t.float() if t.dtype == torch.bfloat16 else t for t in inputs)


def reduced_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b (batched or not) as ExecuTorch's portable kernels compute Half and BFloat16:
    sum = 0, then sum += a[.., k] * b[.., k, :] for k in order, every product and every sum
    rounded to the dtype (PyTorch's elementwise ops on the dtype round each result so)."""
    out = torch.zeros(*a.shape[:-1], b.shape[-1], dtype=a.dtype)
    for k in range(a.shape[-1]):
        out = out + a[..., k : k + 1] * b[..., k : k + 1, :]
    return out


def reduced_edges(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Operand pairs at the edges of a 16-bit float: sums that are exact ties (round to even,
    down then up), overflow at the largest finite value (a tie, to infinity) and just below,
    the smallest subnormals, signed zeros, infinities and NaN; then random values."""
    f = torch.finfo(dtype)
    eps, top, sub = f.eps, f.max, f.tiny * f.eps  # sub: the smallest subnormal
    half_ulp_top = top / (2 - eps) * eps / 2
    a = [1.0, 1.0 + eps, top, top, -top, sub, -sub, 3 * sub, f.tiny - sub, np.inf, np.nan, -0.0]
    b = [eps / 2, eps / 2, half_ulp_top, half_ulp_top / 2, -half_ulp_top, sub, 2 * sub, -sub,
         sub, -np.inf, 1.0, -0.0]  # fmt: skip
    gen = torch.Generator().manual_seed(len(a))
    x = torch.cat([torch.tensor(a, dtype=torch.float64), torch.randn(20, generator=gen) * 8])
    y = torch.cat([torch.tensor(b, dtype=torch.float64), torch.randn(20, generator=gen) * 8])
    return x.to(dtype), y.to(dtype)


# A case both the host and the QEMU tests run (ExecuTorch is not the reference here).
NON_FINITE = np.array([-np.inf, np.nan, np.inf, 1e30, -1e30, 2.5, 3.5, 0.5, -0.5], np.float32)


def non_finite_quantize(dtype, lo: int, hi: int) -> tuple[bytes, np.ndarray]:
    """A quantize program (scale 1, zero point 0) and what it must give for NON_FINITE:
    -inf and NaN give quant_min (what ExecuTorch does on x86), +inf gives quant_max
    (ExecuTorch's x86 build gives quant_min there: its float -> int64 cast overflows), the
    rest round half to even and clamp."""
    qd = torch.ops.quantized_decomposed
    pte = export(lambda t: qd.quantize_per_tensor(t, 1.0, 0, lo, hi, dtype), (torch.zeros(9),))
    np_dtype = torch.empty(0, dtype=dtype).numpy().dtype
    return pte, np.array([lo, lo, hi, hi, lo, 2, 4, 0, 0], np_dtype)


def bmm_magnitude(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    """Sum of |products| per output of bmm(a, b): the scale float results are compared on.
    ExecuTorch's Python runtime does not sum in plain k order (its float bmm differs from a
    sequential sum by a few ulps of the terms), so bit-exactness is not the bar for floats."""
    return np.abs(a.double().numpy()) @ np.abs(b.double().numpy())


def log_softmax_magnitude(x: torch.Tensor, dim: int) -> np.ndarray:
    """|x - max| + log(s) + 1 per output of log_softmax(x, dim), s = sum(exp(x - max)): the
    scale float results are compared on. ExecuTorch's Python runtime runs its optimized kernel
    (ATen's vectorized exp and lane-wise sums): s (>= 1) is a few ulps from the portable
    formula's, so log(s) is a few ulps of 1 off, and an output near 0 (the difference of the
    terms) cannot be held to a plain relative bound."""
    t = x.double()
    shifted = t - t.amax(dim=dim, keepdim=True)
    return (shifted.abs() + shifted.exp().sum(dim=dim, keepdim=True).log() + 1).numpy()
