"""Weight and scale streams of real exports decode to exactly the TOSA graph's weights, biases
and RESCALE scaling (sdk/ethosu/functional/weights.py); the stream order also agrees with the
wheel's own
`mlw_codec.reorder_encode` on shapes the exports do not reach."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from sdk.errors import ProgramError
from sdk.ethosu.functional.weights import (
    WeightOrder,
    decode_scales,
    decode_streams,
    decode_weights,
    encode_scales,
    stream_order,
)
from tests.support.cmdscan import signed16


def _order(op, ifm_bits: int) -> WeightOrder:
    stride = op.regs["KERNEL_STRIDE"]
    return WeightOrder(
        ofm_block_depth=op.regs["OFM_BLK_DEPTH_M1"] + 1,
        ifm_bits=ifm_bits,
        part_kernel=bool(stride & 4),
        depthwise=op.name == "DEPTHWISE",
        dilation=(1 + ((stride >> 4) & 1), 1 + ((stride >> 3) & 1)),
    )


def _same_scaling(npu_scale: int, npu_shift: int, multiplier: int, shift: int) -> bool:
    """The NPU's (scale, shift) is TOSA's multiplier * 2^-shift exactly (Vela may reduce it)."""
    return Fraction(int(npu_scale), 1 << int(npu_shift)) == Fraction(
        int(multiplier), 1 << int(shift)
    )


CASES = [
    ("conv", "int8", "CONV2D"),
    ("conv_wide", "int8", "CONV2D"),
    ("depthwise", "int8", "DEPTHWISE_CONV2D"),
    ("conv", "int16", "CONV2D"),
    ("depthwise", "int16", "DEPTHWISE_CONV2D"),
]


@pytest.mark.parametrize(
    ("model", "quant", "tosa_op"), CASES, ids=[f"{m}-{q}" for m, q, _ in CASES]
)
def test_streams_decode_to_the_tosa_weights_bias_and_scaling(delegate, model, quant, tosa_op):
    d = delegate(model, quant)
    (conv,) = d.tosa.of(tosa_op)
    weights = d.tosa.const(conv.inputs[1]).astype(np.int16)
    bias = d.tosa.const(conv.inputs[2]).astype(np.int64)
    weight_zp = d.tosa.const(conv.inputs[4]).astype(np.int16)
    (rescale,) = [op for op in d.tosa.of("RESCALE") if op.inputs[0] == conv.outputs[0]]
    multipliers = np.broadcast_to(d.tosa.const(rescale.inputs[1]), bias.shape)
    shifts = np.broadcast_to(d.tosa.const(rescale.inputs[2]), bias.shape)
    if tosa_op == "DEPTHWISE_CONV2D":  # TOSA (KH, KW, C, M=1) -> the NPU's (C, KH, KW, 1)
        weights = weights.transpose(2, 0, 1, 3)
    ops = d.of("CONV", "DEPTHWISE")
    assert ops
    # each operation covers one brick of OFM channels (stripes over height repeat a brick)
    bricks: dict[bytes, tuple] = {}
    for op in ops:
        ifm_bits = 16 if (op.regs["IFM_PRECISION"] >> 2) & 3 == 1 else 8
        assert ifm_bits == (16 if quant == "int16" else 8)
        w_stream, s_stream = d.stream(op, "WEIGHT"), d.stream(op, "SCALE")
        bricks.setdefault(w_stream + s_stream, (op, ifm_bits, w_stream, s_stream))
    first = 0
    for op, ifm_bits, w_stream, s_stream in bricks.values():
        depth = op.regs["OFM_DEPTH_M1"] + 1
        chans = slice(first, first + depth)
        got = decode_weights(w_stream, (depth, *weights.shape[1:]), _order(op, ifm_bits))
        np.testing.assert_array_equal(got, weights[chans] - weight_zp)
        scales = decode_scales(s_stream, depth)
        np.testing.assert_array_equal(scales.bias, bias[chans])
        for c in range(depth):
            assert _same_scaling(
                scales.scale[c], scales.shift[c], multipliers[first + c], shifts[first + c]
            ), c
        assert not any(s_stream[10 * depth :])  # the rest is alignment padding
        first += depth
    assert first == weights.shape[0], "the bricks cover every OFM channel once"


@pytest.mark.parametrize(
    ("shape", "block", "bits", "part_kernel", "depthwise", "dilation"),
    [
        ((24, 3, 3, 16), 16, 8, False, False, (1, 1)),
        ((20, 5, 5, 40), 16, 8, False, False, (1, 1)),
        ((20, 5, 5, 40), 24, 8, True, False, (1, 1)),
        ((9, 10, 3, 20), 8, 16, True, False, (1, 1)),
        ((9, 10, 3, 20), 8, 16, False, False, (2, 1)),
        ((33, 9, 9, 3), 16, 8, True, False, (2, 2)),
        ((24, 3, 3, 1), 16, 8, False, True, (1, 1)),
        ((7, 9, 9, 1), 8, 8, False, True, (2, 2)),
    ],
)
def test_order_agrees_with_the_codecs_reorder_encode(
    shape, block, bits, part_kernel, depthwise, dilation
):
    from ethosu import mlw_codec

    rng = np.random.default_rng(sum(shape))
    w = rng.integers(-255, 256, size=shape).astype(np.int16)
    encoded, _ = mlw_codec.reorder_encode(
        8, 8, w, block, int(depthwise), int(part_kernel), bits, 8 // dilation[0], 8 // dilation[1]
    )
    order = WeightOrder(block, bits, part_kernel, depthwise, dilation)
    np.testing.assert_array_equal(decode_weights(bytes(encoded), shape, order), w)


def test_a_vectorised_order_takes_little_time():
    import time

    start = time.perf_counter()
    index = stream_order((256, 3, 3, 256), WeightOrder(32, 8, False, False, (1, 1)))
    assert time.perf_counter() - start < 1.0
    valid = index[index >= 0]
    assert len(valid) == 256 * 9 * 256 and len(np.unique(valid)) == len(valid)


def test_scale_stream_round_trip_and_sign_of_40_bit_bias():
    bias = np.array([-(1 << 39), (1 << 39) - 1, -1, 0, 12345])
    scale = np.array([0, 0xFFFFFFFF, 1, 0x80000001, 7], dtype=np.uint64)
    shift = np.array([0, 63, 1, 33, 40])
    s = decode_scales(encode_scales(bias, scale, shift))
    np.testing.assert_array_equal(s.bias, bias)
    np.testing.assert_array_equal(s.scale.astype(np.uint64), scale)
    np.testing.assert_array_equal(s.shift, shift)


def test_malformed_streams_are_refused_with_the_reason():
    from ethosu import mlw_codec

    with pytest.raises(ProgramError, match="fewer than 3 entries"):
        decode_scales(bytes(25), 3)
    with pytest.raises(ProgramError, match="reserved top bits"):
        decode_scales(bytes(9) + b"\xc0")
    with pytest.raises(ProgramError, match="empty"):
        decode_weights(b"", (8, 1, 1, 8), WeightOrder(8))
    # the wheel's decoder exit()s on a corrupt stream: here that is an error, not the end
    with pytest.raises(ProgramError, match=r"mlw decoder refuses it .*underrun"):
        decode_weights(bytes(range(64)), (8, 1, 1, 8), WeightOrder(8))
    short, _ = mlw_codec.reorder_encode(8, 8, np.ones((8, 1, 1, 8), np.int16), 8, 0, 0, 8, 8, 8)
    with pytest.raises(ProgramError, match="needs"):
        decode_weights(bytes(short), (16, 1, 1, 8), WeightOrder(8))
    assert decode_streams([bytes(short)] * 2)[1].size >= 64
    with pytest.raises(ProgramError, match="exclude each other"):
        WeightOrder(8, part_kernel=True, depthwise=True)
    assert signed16(0xFFFF) == -1


def test_beside_grpc_the_decoder_forks_from_a_clean_worker():
    """labgrid's client (and its pytest plugin) bring gRPC, whose fork handlers can crash a
    child forked beside its threads: there the children come from a forkserver's worker,
    with the same values and the same refusals as a child forked here."""
    import sys

    import grpc  # noqa: F401  (as labgrid imports it)

    from sdk.ethosu.functional import weights

    assert "grpc" in sys.modules
    stream, _ = weights_stream()
    assert np.array_equal(decode_streams([stream])[0], weights._decode_forked([stream])[0])
    assert weights._CLEAN_WORKER is not None  # the worker did it
    with pytest.raises(ProgramError, match=r"mlw decoder refuses it .*underrun"):
        decode_streams([bytes(range(64))])


def weights_stream() -> tuple[bytes, np.ndarray]:
    from ethosu import mlw_codec

    values = np.arange(-32, 32, dtype=np.int16).reshape(8, 1, 1, 8)
    encoded, _ = mlw_codec.reorder_encode(8, 8, values, 8, 0, 0, 8, 8, 8)
    return bytes(encoded), values
