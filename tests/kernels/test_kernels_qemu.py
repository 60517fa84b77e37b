"""The kernels as the Cortex-M55 runs them: Helium (MVE) paths included, in the board firmware
with every kernel (built once), on QEMU's mps3-an547, against ExecuTorch on the host.

Every case is a one-op program booted with its inputs preloaded (no rebuild per case). A boot
takes about 0.1 s, an export about 0.8 s: the boots run in the background while the next
programs are exported."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from tests.support import koracle as oracle
from tests.support.kprogram import EditedProgram

pytestmark = pytest.mark.slow  # firmware builds and QEMU runs

qd = torch.ops.quantized_decomposed
F = torch.nn.functional
GEN = torch.Generator().manual_seed(1234)


@dataclass
class Edited:
    """A case export never makes: the edited program and its reference outputs."""

    pte: bytes
    expected: list[np.ndarray]


def ints(shape, dtype) -> torch.Tensor:
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -(2**31)), min(info.max, 2**31 - 1)
    return torch.randint(lo, hi + 1, shape, generator=GEN, dtype=torch.int64).to(dtype)


def floats(shape) -> torch.Tensor:
    return torch.randn(shape, generator=GEN)


def bmm_cases():
    # M around the 3-row block, N around the 8/16/32-column blocks, K odd/even/0/large
    shapes = [(1, 3, 16, 8), (2, 7, 33, 17), (1, 4, 64, 32), (1, 2, 5, 9), (3, 1, 1, 1),
              (1, 6, 0, 8), (1, 3, 2047, 33), (1, 3, 257, 31), (1, 9, 12, 33),
              (1, 5, 3, 64)]  # fmt: skip
    for b, m, k, n in shapes:
        a, w = floats((b, m, k)), floats((b, k, n))
        yield f"bmm-f32-{m}x{k}x{n}", torch.bmm, (a, w), [oracle.bmm_magnitude(a, w)]
    for dtype in (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64):
        for b, m, k, n in shapes[:7]:  # up to the large K
            yield (
                f"bmm-{dtype}-{m}x{k}x{n}",
                torch.bmm,
                (ints((b, m, k), dtype), ints((b, k, n), dtype)),
                None,
            )


def quant_cases():
    for dtype, lo, hi in [
        (torch.int8, -128, 127),
        (torch.int16, -32768, 32767),
        (torch.uint8, 0, 255),
    ]:
        for n in (1, 4, 7, 64, 129):
            x = floats((n,)) * 200
            # half the values are exact ties at scale 0.5: (k + 0.5) * 0.5
            x[: n // 2] = (torch.round(x[: n // 2]) + 0.5) * 0.5

            def q(t, scale, zp, d=dtype, lo=lo, hi=hi):
                return qd.quantize_per_tensor(t, scale, zp, lo, hi, d)

            def dq(t, d=dtype, lo=lo, hi=hi):
                return qd.dequantize_per_tensor(t, 0.0371, 5, lo, hi, d)

            yield f"q-{dtype}-{n}", lambda t, q=q: q(t, 0.5, 3), (x,), None
            yield f"q-{dtype}-{n}-odd", lambda t, q=q: q(t, 0.0137, -2), (x,), None
            yield f"dq-{dtype}-{n}", dq, (ints((n,), dtype),), None


def elementwise_cases():
    for a_shape, b_shape in [
        ((37,), (37,)),
        ((5, 9), (9,)),
        ((5, 9), (5, 1)),
        ((4, 4), ()),
        ((3,), (2, 3)),
    ]:
        a, b = floats(a_shape), floats(b_shape)
        yield f"add-{a_shape}-{b_shape}", torch.add, (a, b), None
        yield f"sub-{a_shape}-{b_shape}", lambda x, y: torch.sub(x, y, alpha=3), (a, b), None
        yield f"mul-{a_shape}-{b_shape}", torch.mul, (a, b), None
    yield "add-int8", torch.add, (ints((33,), torch.int8), ints((33,), torch.int8)), None


def copy_cases():
    for n in (1, 15, 16, 17, 31, 32, 33, 100):
        x = ints((3, n), torch.int8)
        yield f"split-{n}", lambda t, k=n: torch.split(t, [k // 2, k - k // 2], dim=1), (x,), None
        yield f"cat-{n}", lambda t: torch.cat([t, t * 2], dim=1), (x,), None
    yield "permute", lambda t: t.permute(2, 0, 1).contiguous(), (floats((3, 5, 7)),), None
    yield "flip", lambda t: torch.flip(t, [0, 2]), (floats((3, 5, 7)),), None
    yield "any", lambda t: (t > 1.0).any(dim=1), (floats((6, 9)),), None
    yield "repeat", lambda t: t.repeat(2, 1, 3), (floats((2, 3, 4)),), None
    yield "amax", lambda t: torch.amax(t, dim=(0, 2)), (floats((3, 5, 7)),), None
    yield (
        "bilinear",
        lambda t: F.interpolate(t, size=(7, 9), mode="bilinear"),
        (floats((1, 2, 4, 5)),),
        None,
    )
    index = (torch.arange(4 * 12) * 5 % 9).reshape(4, 12)
    yield "gather", lambda t, i: torch.gather(t, 1, i), (floats((4, 9)), index), None
    yield "slice", lambda t: t[:, 1:8:3], (floats((4, 9)),), None
    rows, cols = torch.tensor([[3], [0]]), torch.tensor([8, -1, 2])
    yield "index", lambda t, i, j: t[i, :, j], (floats((4, 2, 9)), rows, cols), None
    yield (
        "index_put",
        lambda t, i, v: torch.ops.aten.index_put.default(t, (None, i), v, True),
        (ints((3, 9), torch.int16), torch.tensor([8, 0, 8]), ints((3, 3), torch.int16)),
        None,
    )
    yield "unfold", lambda t: t.unfold(1, 4, 3), (floats((3, 11)),), None


SPECIAL = torch.tensor([float("nan"), -0.0, 0.0, -float("inf"), float("inf"), 1e30, -3.0, 6.0])


def activation_cases():
    # Helium runs (float32: 4 lanes, int8: 16) and their predicated tails
    for n in (1, 4, 7, 33):
        x = torch.cat([SPECIAL, floats((n,)) * 4])
        yield f"clamp-f32-{n}", lambda t: torch.clamp(t, -1.0, 2.5), (x,), None
        yield f"relu-f32-{n}", torch.relu, (x,), None
    for n in (1, 15, 16, 17, 100):
        x = ints((n,), torch.int8)
        yield f"clamp-i8-{n}", lambda t: torch.clamp(t, -20, 90), (x,), None
        yield f"hardtanh-i8-{n}", lambda t: F.hardtanh(t, -5, 7), (x,), None
    yield "clamp-max-f32", lambda t: torch.clamp(t, max=-0.0), (SPECIAL,), None
    yield "clamp-i16", lambda t: torch.clamp(t, -100, 5000), (ints((37,), torch.int16),), None
    yield "relu6", F.relu6, (floats((3, 11)) * 5,), None
    yield "clamp-tensor", torch.clamp, (floats((4, 9)), floats((9,)) - 1, floats((4, 1)) + 1), None
    yield "exp", torch.exp, (torch.cat([SPECIAL, floats((40,)) * 10]),), None
    yield "exp-int", torch.exp, (torch.arange(-50, 50, dtype=torch.int32),), None
    angles = torch.cat([SPECIAL, floats((40,)) * 10])
    yield "sin-cos", lambda t: (torch.sin(t), torch.cos(t)), (angles,), None
    x = floats((3, 17)) * 4
    scales = [oracle.log_softmax_magnitude(x, -1)]
    yield "log-softmax", lambda t: torch.log_softmax(t, dim=-1), (x,), scales


def whole_activation_cases():
    """hardswish and silu as the Arm flow leaves them on the CPU (export decomposes them:
    the program is edited, ExecuTorch's run of the decomposition is the reference)."""
    base = oracle.export(torch.relu, (torch.ones(4),))
    for op, fn in (("aten::hardswish.out", F.hardswish), ("aten::silu.out", F.silu)):
        x = torch.cat([SPECIAL, torch.linspace(-8, 8, 57)])
        edit = EditedProgram(base)
        edit.call_with_out(op, [edit.input(x.numpy())], np.float32, tuple(x.shape))
        expected = oracle.run(oracle.export(fn, (x,)), (x,))
        yield (
            op.split("::")[1],
            Edited(edit.to_bytes(), [oracle.to_numpy(t) for t in expected]),
            (x,),
            None,
        )


def div_cases():
    a, b = floats((5, 9)) * 10, floats((9,))
    yield "div", torch.div, (a, b), None
    yield "div-int", torch.div, (ints((37,), torch.int32), ints((37,), torch.int32)), None
    for mode in ("trunc", "floor"):
        yield f"div-{mode}-f32", lambda x, y, m=mode: torch.div(x, y, rounding_mode=m), (a, b), None
        i, j = ints((4, 9), torch.int32), ints((9,), torch.int16)
        j[j == 0] = 3
        yield f"div-{mode}-int", lambda x, y, m=mode: torch.div(x, y, rounding_mode=m), (i, j), None
    yield "div-scalar", lambda t: torch.ops.aten.div.Scalar(t, 3.0), (a,), None
    yield (
        "div-scalar-floor",
        lambda t: torch.ops.aten.div.Scalar_mode(t, -3, rounding_mode="floor"),
        (ints((21,), torch.int64),),
        None,
    )


def index_cases():
    c = floats((4, 1)) > 0
    yield "where-f32", torch.where, (c, floats((4, 9)), floats((9,))), None
    yield (
        "where-i8",
        torch.where,
        (floats((33,)) > 0, ints((33,), torch.int8), ints((1,), torch.int8)),
        None,
    )
    yield "where-promote", torch.where, (c, ints((4, 3), torch.int16), floats((3,))), None
    yield "select", lambda t: t.select(1, -2), (floats((3, 5, 7)),), None
    idx = torch.tensor([4, 0, 0, 2], dtype=torch.int64)
    yield "index-select", lambda t, i: torch.index_select(t, 1, i), (floats((3, 5, 7)), idx), None
    yield (
        "index-select-rows",
        lambda t, i: torch.index_select(t, 0, i),
        (ints((6, 33), torch.int8), idx),
        None,
    )
    yield "argmax", lambda t: torch.argmax(t, dim=1), (floats((4, 13)),), None
    yield "argmax-all", torch.argmax, (ints((5, 7), torch.int16) % 9,), None


def other_cases():
    yield "softmax", lambda t: torch.softmax(t, dim=-1), (floats((3, 11)) * 4,), None
    yield "sigmoid", torch.sigmoid, (floats((29,)) * 6,), None
    yield "sum", lambda t: t.sum(dim=1), (floats((4, 13)),), None
    yield "to-int8", lambda t: (t * 50).to(torch.int8), (floats((21,)),), None


def mm_cases():
    for m, k, n in [(3, 16, 8), (7, 33, 17), (4, 64, 32), (1, 5, 3)]:
        a, w = floats((m, k)), floats((k, n))
        scale = np.abs(a.double().numpy()) @ np.abs(w.double().numpy())
        yield f"mm-f32-{m}x{k}x{n}", torch.mm, (a, w), [scale]
        bias = floats((n,))
        yield (
            f"addmm-f32-{m}x{k}x{n}",
            lambda x, y, z: torch.addmm(x, y, z, beta=0.5, alpha=2),
            (bias, a, w),
            [2 * scale + np.abs(bias.double().numpy())],
        )
    for dtype in (torch.int8, torch.int16, torch.int32):
        yield f"mm-{dtype}", torch.mm, (ints((5, 37), dtype), ints((37, 19), dtype)), None
        args = (ints((19,), dtype), ints((5, 37), dtype), ints((37, 19), dtype))
        yield f"addmm-{dtype}", lambda x, y, z: torch.addmm(x, y, z, beta=3, alpha=-1), args, None
    linear = torch.nn.Linear(24, 10)
    x = floats((3, 24))
    w = linear.weight.detach().T
    scale = np.abs(x.double().numpy()) @ np.abs(w.double().numpy()) + 1
    yield "linear", linear, (x,), [scale]


def nn_cases():
    # Conv rows of 1..37 columns: the Helium runs (4 floats) and their predicated tails.
    for shape, cout, k, s, p, d, g in [
        ((1, 3, 8, 8), 4, 3, 1, 1, 1, 1),
        ((1, 2, 5, 37), 3, 3, 1, 1, 1, 1),
        ((2, 4, 9, 9), 6, 3, 2, 1, 1, 2),
        ((1, 6, 7, 7), 6, 3, 1, 1, 1, 6),  # depthwise
        ((1, 4, 10, 10), 4, 3, 1, 2, 2, 1),  # dilation
        ((1, 8, 6, 6), 5, 1, 1, 0, 1, 1),  # pointwise
    ]:
        conv = torch.nn.Conv2d(shape[1], cout, k, stride=s, padding=p, dilation=d, groups=g)
        yield f"conv-{shape}-{cout}-k{k}s{s}p{p}d{d}g{g}", conv, (floats(shape),), None
    yield "conv1d", torch.nn.Conv1d(3, 5, 4, stride=2, padding=1), (floats((1, 3, 21)),), None
    convt = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    yield "conv-transposed", convt, (floats((1, 4, 5, 5)),), None
    for dtype in (torch.int8, torch.int32):
        args = (ints((1, 4, 7, 7), dtype), ints((6, 2, 3, 3), dtype), ints((6,), dtype))
        yield f"conv-{dtype}", lambda a, b, c: F.conv2d(a, b, c, padding=1, groups=2), args, None
    x = floats((2, 3, 9, 8))
    yield "maxpool", lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True), (x,), None
    yield "maxpool-ceil-dil", lambda t: F.max_pool2d(t, 3, 2, 1, 2, True), (x,), None
    yield "maxpool-int8", lambda t: F.max_pool2d(t, 2), (ints((1, 3, 6, 6), torch.int8),), None
    yield "avgpool", lambda t: F.avg_pool2d(t, 3, 2, 1, True, False), (x,), None
    yield "avgpool-div", lambda t: F.avg_pool2d(t, 2, 1, 1, False, True, 3), (x,), None
    yield (
        "avgpool-long",
        lambda t: F.avg_pool2d(t, 3, 2, 1),
        (ints((1, 2, 7, 7), torch.int64),),
        None,
    )
    yield "pad", lambda t: F.pad(t, (1, 2, 3, 0), value=-0.5), (x,), None
    yield "pad-int8", lambda t: F.pad(t, (17, 16)), (ints((2, 3, 33), torch.int8),), None
    yield "upsample-2x", lambda t: F.interpolate(t, scale_factor=2, mode="nearest"), (x,), None
    yield "upsample-size", lambda t: F.interpolate(t, size=(5, 13), mode="nearest"), (x,), None
    yield "mean-hw", torch.nn.AdaptiveAvgPool2d(1), (x,), None


def linear_out_cases():
    """aten::linear.out as the Arm flow leaves nn.Linear forced to the CPU (export never makes
    it: the program is edited, ExecuTorch running it is the reference). Its own generator:
    the other cases' inputs stay as they were."""
    gen = torch.Generator().manual_seed(10)
    base = oracle.export(torch.mm, (torch.ones(2, 3), torch.ones(3, 4)))

    def floats(shape):
        return torch.randn(shape, generator=gen)

    def ints(shape, dtype):
        info = torch.iinfo(dtype)
        return torch.randint(info.min, info.max + 1, shape, generator=gen, dtype=dtype)

    f32 = [
        (floats((2, 3, 24)), floats((10, 24)), floats((10,))),
        (floats((5, 7)), floats((3, 7)), None),
    ]
    integer = [
        (ints((4, 37), t), ints((19, 37), t), ints((19,), t))
        for t in (torch.int8, torch.int16, torch.int32)
    ]
    for x, w, b in [*f32, *integer]:
        edit = EditedProgram(base)
        args = [edit.input(x.numpy()), edit.input(w.numpy())]
        args.append(edit.none() if b is None else edit.input(b.numpy()))
        edit.call_with_out("aten::linear.out", args, x.numpy().dtype, (*x.shape[:-1], w.shape[0]))
        pte = edit.to_bytes()
        inputs = (x, w) if b is None else (x, w, b)
        expected = oracle.run_arrays(pte, edit.inputs)
        scales = None
        if x.dtype.is_floating_point:
            scale = np.abs(x.double().numpy()) @ np.abs(w.double().numpy()).T
            scales = [scale if b is None else scale + np.abs(b.double().numpy())]
        name = f"linear.out-{str(x.dtype).split('.')[1]}-{x.dim()}d" + (
            "" if b is None else "-bias"
        )
        yield name, Edited(pte, expected), inputs, scales


def reduced_float_cases():
    """Half and BFloat16 (scalar paths, software conversions): the board's bits are the
    host's. BFloat16 goes in and out as float32 (oracle.bf16_io)."""
    for dtype in oracle.REDUCED:
        a, b = oracle.reduced_edges(dtype)
        cases = [
            ("add", lambda x, y: torch.add(x, y, alpha=3), (a, b)),
            ("mul", torch.mul, (a, b)),
            ("div", torch.div, (a, b)),
            ("clamp", lambda t: torch.clamp(t, -0.1, 0.3), (a,)),
            ("relu", torch.relu, (b,)),
            ("where", lambda t, x, y: torch.where(t, x, y), (a > b, a, b)),
        ]
        for name, fn, inputs in cases:
            if dtype == torch.bfloat16:
                fn, inputs = oracle.bf16_io(fn, inputs)
            yield f"{name}-{str(dtype)[6:]}", fn, inputs, None
        x = torch.cat([a.float(), torch.tensor([1 + 2**-11, 65520.0, 2**-25, 3 * 2**-25])])
        to = (lambda t: t.half()) if dtype == torch.float16 else (lambda t: t.bfloat16().float())
        yield f"to-{str(dtype)[6:]}", to, (x,), None


def mask_cases():
    """Comparisons, masks and fills (scalar paths; last, so the other cases' inputs stay)."""
    a, b = torch.cat([SPECIAL, floats((29,))]), torch.cat([SPECIAL.flip(0), floats((29,))])
    yield "compare", lambda x, y: (x == y, x != y, x < y, x <= y, x > y, x >= y), (a, b), None
    yield (
        "mask-where",
        lambda x, y: torch.where(torch.logical_not((x > 0) & (y <= x)), torch.full_like(x, 2.0), y),
        (a, b),
        None,
    )
    i, j = ints((4, 9), torch.int8), ints((9,), torch.int16)
    yield "bitwise-int", lambda x, y: (x & y, x | 3, x ^ y, ~x, x > 1.5), (i, j), None
    counts = torch.arange(9, dtype=torch.int16) * 3  # 0..24: what C++ defines (32-bit)
    yield (
        "shift-int",
        lambda x, y: (torch.bitwise_left_shift(x, y), torch.bitwise_right_shift(x, y),
                      torch.bitwise_right_shift(x, 2)),
        (i, counts),
        None,
    )  # fmt: skip


CASES = [
    *bmm_cases(),
    *quant_cases(),
    *elementwise_cases(),
    *copy_cases(),
    *other_cases(),
    *mm_cases(),
    *nn_cases(),
    *activation_cases(),
    *whole_activation_cases(),
    *div_cases(),
    *index_cases(),
    *linear_out_cases(),
    *reduced_float_cases(),
    *mask_cases(),
]


@pytest.fixture(scope="module")
def qemu_results(every_kernel_elf, qemu_run):
    """{name: (expected outputs, scales, future of the QEMU run)}."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        results = {}
        for name, fn, inputs, scales in CASES:
            if isinstance(fn, Edited):
                pte, expected = fn.pte, fn.expected
            else:
                pte = oracle.export(fn, inputs, core_aten=False)  # the shifts are not Core ATen
                expected = [oracle.to_numpy(t) for t in oracle.run(pte, inputs)]
            arrays = [oracle.to_numpy(t) for t in inputs]
            results[name] = (expected, scales, pool.submit(qemu_run, every_kernel_elf, pte, arrays))
    return results  # every run done (a failure is reported by its test)


@pytest.mark.slow
@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_on_cortex_m55(qemu_results, name) -> None:
    expected, scales, future = qemu_results[name]
    outputs = future.result().outputs
    assert len(outputs) == len(expected)
    for i, (out, exp) in enumerate(zip(outputs, expected, strict=True)):
        # float: Helium bmm uses fused multiply-add and newlib's expf differs from glibc's
        oracle.assert_matches(out, exp, rtol=2e-6, scale=None if scales is None else scales[i])


@pytest.mark.slow
def test_quantize_non_finite_on_cortex_m55(every_kernel_elf, qemu_run) -> None:
    """The Helium quantize handles NaN and infinities as the scalar path does."""
    pte, expected = oracle.non_finite_quantize(torch.int16, -32768, 32767)
    (got,) = qemu_run(every_kernel_elf, pte, [oracle.NON_FINITE]).outputs
    np.testing.assert_array_equal(got, expected)


@pytest.mark.slow
@pytest.mark.parametrize("name", [c[0] for c in CASES if c[0].startswith("conv")])
def test_convolution_is_bit_exact_on_cortex_m55(qemu_results, name) -> None:
    """Helium float rows multiply, then add, in ExecuTorch's order: bit for bit its results."""
    expected, _, future = qemu_results[name]
    for out, exp in zip(future.result().outputs, expected, strict=True):
        np.testing.assert_array_equal(out, exp)
