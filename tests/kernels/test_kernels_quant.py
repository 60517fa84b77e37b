"""quantize_per_tensor / dequantize_per_tensor / dequantize_per_channel against ExecuTorch:
round-half-to-even ties, clamping, every quantized dtype, the Tensor variants, and the
non-finite inputs ExecuTorch leaves to the platform."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support import koracle as oracle
from tests.support.kprogram import EditedProgram

qd = torch.ops.quantized_decomposed
Q_OUT = ["quantized_decomposed::quantize_per_tensor.out"]
DQ_OUT = ["quantized_decomposed::dequantize_per_tensor.out"]

# (dtype, quant_min, quant_max)
RANGES = [
    (torch.int8, -128, 127),
    (torch.int16, -32768, 32767),
    (torch.uint8, 0, 255),
    (torch.int8, -100, 100),  # a narrower range than the dtype's
]


def ties(scale: float, zp: int, lo: int, hi: int) -> torch.Tensor:
    """Exact halves (k + 0.5) * scale around zero and near both clamp bounds, plus values
    far outside the range: round-half-to-even and clamping are both exercised."""
    k = np.concatenate(
        [np.arange(-6, 6), np.arange(lo - zp - 4, lo - zp + 3), np.arange(hi - zp - 3, hi - zp + 4)]
    )
    halves = (k + 0.5) * scale
    far = np.array([(lo - zp) * scale * 3 - 1, (hi - zp) * scale * 3 + 1, 0.0, -0.0])
    return torch.tensor(np.concatenate([halves, far]), dtype=torch.float32)


@pytest.mark.parametrize("dtype,lo,hi", RANGES)
@pytest.mark.parametrize("scale,zp", [(0.5, 0), (0.25, 3), (1.0, -7)])
def test_quantize_ties_to_even_and_clamps(check, dtype, lo, hi, scale, zp) -> None:
    zp = min(max(zp, lo), hi)
    x = ties(scale, zp, lo, hi)
    (q,) = check(lambda t: qd.quantize_per_tensor(t, scale, zp, lo, hi, dtype), x, ops=Q_OUT)
    # the power-of-two scales make every half exact: the results are even-rounded
    expected = np.clip(np.rint(x.double().numpy() / scale) + zp, lo, hi)
    np.testing.assert_array_equal(q.astype(np.int64), expected.astype(np.int64))


@pytest.mark.parametrize("dtype,lo,hi", RANGES)
@pytest.mark.parametrize("scale,zp", [(0.0137, -5), (1 / 3, 2), (0.003, 0), (123.4, 1)])
def test_quantize_random(check, dtype, lo, hi, scale, zp) -> None:
    zp = min(max(zp, lo), hi)
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(257, generator=gen) * scale * (hi - lo) / 4
    check(lambda t: qd.quantize_per_tensor(t, scale, zp, lo, hi, dtype), x, ops=Q_OUT)


@pytest.mark.parametrize("n", [1, 3, 4, 5])
def test_quantize_sizes(check, n) -> None:
    """Sizes around the 4-lane Helium step (the tail is predicated)."""
    x = torch.linspace(-3, 3, n)
    check(lambda t: qd.quantize_per_tensor(t, 0.02, 1, -128, 127, torch.int8), x, ops=Q_OUT)


@pytest.mark.parametrize(
    "dtype,lo,hi", [(torch.int8, -128, 127), (torch.int16, -32768, 32767), (torch.uint8, 0, 255)]
)
def test_quantize_non_finite(host_run, dtype, lo, hi) -> None:
    pte, expected = oracle.non_finite_quantize(dtype, lo, hi)
    (got,) = host_run(pte, [oracle.NON_FINITE]).outputs()
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype,lo,hi", [*RANGES, (torch.int32, -(2**31), 2**31 - 1)])
@pytest.mark.parametrize("scale,zp", [(0.1, 3), (0.0137, -7), (2.5, 0)])
def test_dequantize(check, dtype, lo, hi, scale, zp) -> None:
    zp = min(max(zp, lo), hi)
    info = torch.iinfo(dtype)
    gen = torch.Generator().manual_seed(3)
    x = torch.randint(max(info.min, -(2**30)), min(info.max, 2**30), (513,), generator=gen).to(
        dtype
    )
    check(lambda t: qd.dequantize_per_tensor(t, scale, zp, lo, hi, dtype), x, ops=DQ_OUT)


@pytest.mark.parametrize("dtype,lo,hi", RANGES[:3])
def test_quantize_half(check, dtype, lo, hi) -> None:
    """A Half input is read as float (ExecuTorch takes no BFloat16 here)."""
    x = torch.cat([ties(0.5, 3, lo, hi), torch.randn(40) * 300]).half()
    for scale, zp in [(0.5, 3), (0.0137, -5)]:
        fn = lambda t, s=scale, z=zp: qd.quantize_per_tensor(t, s, z, lo, hi, dtype)  # noqa: E731
        check(fn, x, ops=Q_OUT)


@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float64, torch.float16])
def test_dequantize_out_dtype(check, out_dtype) -> None:
    x = torch.arange(-128, 128, dtype=torch.int8).reshape(4, 64)
    (y,) = check(
        lambda t: qd.dequantize_per_tensor(
            t, 0.0371, -3, -128, 127, torch.int8, out_dtype=out_dtype
        ),
        x,
        ops=DQ_OUT,
    )
    assert y.dtype == torch.empty(0, dtype=out_dtype).numpy().dtype
    x16 = torch.tensor([-32768, -2051, -2049, 2047, 2049, 4097, 32767], dtype=torch.int16)
    fn = lambda t: qd.dequantize_per_tensor(t, 0.37, 0, -32768, 32767, torch.int16,  # noqa: E731
                                            out_dtype=out_dtype)  # fmt: skip
    check(fn, x16, ops=DQ_OUT)


def test_tensor_variants(check) -> None:
    x = torch.randn(3, 17) * 5
    scale = torch.tensor([0.05], dtype=torch.float64)
    zp = torch.tensor([-2], dtype=torch.int64)

    def fn(t, s, z):
        q = qd.quantize_per_tensor.tensor(t, s, z, -128, 127, torch.int8)
        return q, qd.dequantize_per_tensor.tensor(q, s, z, -128, 127, torch.int8)

    check(
        fn, x, scale, zp,
        ops=[
            "quantized_decomposed::quantize_per_tensor.Tensor_out",
            "quantized_decomposed::dequantize_per_tensor.Tensor_out",
        ],
    )  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.uint8])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("with_zp", [True, False])
def test_dequantize_per_channel(check, dtype, axis, with_zp) -> None:
    info = torch.iinfo(dtype)
    gen = torch.Generator().manual_seed(5)
    x = torch.randint(info.min, info.max + 1, (3, 4, 5), generator=gen).to(dtype)
    n = x.shape[axis]
    scales = torch.rand(n, generator=gen, dtype=torch.float64) * 0.1 + 0.001
    zps = (
        torch.randint(max(info.min, -5), min(info.max, 5) + 1, (n,), generator=gen)
        if with_zp
        else None
    )

    def fn(t):
        return qd.dequantize_per_channel(t, scales, zps, axis, info.min, info.max, dtype)

    check(fn, x, ops=["quantized_decomposed::dequantize_per_channel.out"])


@pytest.mark.parametrize("shape,axis", [((7,), 0), ((3, 7), 1)])
def test_dequantize_per_channel_half(check, shape, axis) -> None:
    """Half out: a 1-d input converts q - zp to Half before the scale (ExecuTorch's 1-d
    path), which rounds the int16 values beyond 2048; more dimensions multiply in float."""
    x = torch.tensor([-32768, -2051, -2049, 2047, 2049, 4097, 32767], dtype=torch.int16)
    x = x.expand(shape).contiguous()
    n = shape[axis]
    scales = torch.linspace(0.013, 0.9, n, dtype=torch.float64)
    zps = torch.arange(n) % 3 - 1

    def fn(t):
        return qd.dequantize_per_channel(t, scales, zps, axis, -32768, 32767, torch.int16,
                                         out_dtype=torch.float16)  # fmt: skip

    check(fn, x, ops=["quantized_decomposed::dequantize_per_channel.out"], rtol=0)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32])
@pytest.mark.parametrize("zp_dtype", [torch.int64, torch.int32])
def test_dequantize_per_channel_float_scales(check, dtype, zp_dtype) -> None:
    """Float scales and Int zero points, as the Arm flow writes a convolution's weight (int8)
    and bias (int32): what a convolution forced to the CPU dequantizes there."""
    info = torch.iinfo(dtype)
    gen = torch.Generator().manual_seed(6)
    x = torch.randint(info.min, info.max, (4, 3, 2), generator=gen, dtype=torch.int64).to(dtype)
    scales = torch.rand(4, generator=gen, dtype=torch.float32) * 0.1 + 0.001
    zps = torch.tensor([0, 3, -2, 1], dtype=zp_dtype)

    def fn(t):
        return qd.dequantize_per_channel(t, scales, zps, 0, info.min, info.max, dtype)

    check(fn, x, ops=["quantized_decomposed::dequantize_per_channel.out"])


@pytest.fixture(scope="module")
def quantize_program() -> bytes:
    return oracle.export(
        lambda t: qd.quantize_per_tensor(t, 0.1, 0, -128, 127, torch.int8), (torch.zeros(4),)
    )


@pytest.mark.parametrize(
    "out_dtype,lo,hi,code,error",
    [
        (np.int8, -129, 127, 1, "range"),  # quant_min below int8
        (np.uint8, 0, 256, 0, "range"),  # quant_max above uint8
        (np.int8, -128, 127, 2, "dtype argument"),  # dtype argument != out dtype
        (np.float32, -128, 127, 6, "does not take"),  # float out
    ],
)
def test_quantize_rejects(refused, quantize_program, out_dtype, lo, hi, code, error) -> None:
    edit = EditedProgram(quantize_program)
    t = edit.input(np.full(4, 1.5, np.float32))
    args = [t, edit.double(0.1), edit.int(0), edit.int(lo), edit.int(hi), edit.int(code)]
    edit.call_with_out(Q_OUT[0], args, out_dtype, (4,))
    name, why = refused(edit)
    assert name in ("InvalidArgument", "DtypeMismatch")
    assert error in why, why


def test_dequantize_rejects_bad_scale_tensor(refused) -> None:
    def fn(t, s, z):
        return qd.dequantize_per_tensor.tensor(t, s, z, -128, 127, torch.int8)

    example = (torch.ones(4, dtype=torch.int8), torch.ones(1, dtype=torch.float64),
               torch.zeros(1, dtype=torch.int64))  # fmt: skip
    edit = EditedProgram(oracle.export(fn, example))
    (call,) = edit.exported_calls
    args = list(call.args)
    args[0] = edit.input(np.ones(4, np.int8))
    args[1] = edit.input(np.array([0.1], np.float32))  # ExecuTorch takes only Double here
    args[2] = edit.input(np.array([0], np.int64))
    edit.output(args[-1])
    edit.call("quantized_decomposed::dequantize_per_tensor.Tensor_out", args)
    name, why = refused(edit)
    assert name == "InvalidArgument"
    assert "scale must be one Double" in why


def test_quantize_to_int32(check) -> None:
    x = torch.tensor([0.25, 0.75, -0.25, 1e6, -1e6, 3e9, -3e9, 12.5])
    (q,) = check(
        lambda t: qd.quantize_per_tensor(t, 0.5, 10, -(2**31), 2**31 - 1, torch.int32), x, ops=Q_OUT
    )
    assert q[0] == 10 and q[1] == 12 and q[2] == 10  # ties to even around the zero point


def test_quantize_zero_dim(check) -> None:
    check(lambda t: qd.quantize_per_tensor(t, 0.1, 0, -128, 127, torch.int8), torch.tensor(2.25),
          ops=Q_OUT)  # fmt: skip
