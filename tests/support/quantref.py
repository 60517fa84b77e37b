"""The quantized PyTorch model as the reference of a program's outputs (shared by tests)."""

from __future__ import annotations

import numpy as np

# INT16 tolerance of these small regression programs, in units of each output's quantization
# step (its final dequantize scale): TOSA's integer rescales (conv, softmax tables) differ
# from PyTorch's float reference by 1-2 LSB per op, and a few ops compound that. INT8 was
# identical on every program measured. A deep network compounds more (the YOLO11-style zoo
# model: 31 LSB max at INT16): bench/zoo_numerics.py measures, tests/export/test_zoo.py holds
# each zoo model to its own figure.
INT16_MAX_LSB = 4
INT16_MEAN_LSB = 0.5


def assert_matches_quantized_model(case, outputs: list[np.ndarray]) -> None:
    """`outputs` (of an export case's program, on the example inputs) against the quantized
    PyTorch model: INT8 identical, INT16 within the documented LSB tolerance."""
    assert_program_matches(case.quantized, case.result.program_path, outputs)


def assert_program_matches(quantized, program_path, outputs: list[np.ndarray]) -> None:
    """`outputs` of the program at `program_path`, lowered from `quantized` (a QuantizedModel),
    on its example inputs, against the quantized PyTorch model, as above."""
    from sdk.program.pte import load_program, output_quant_scales

    expected = quantized.graph_module(*quantized.loaded.example_inputs)
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    scales = output_quant_scales(load_program(program_path))
    assert len(outputs) == len(expected)
    for out, ref, scale in zip(outputs, expected, scales):
        ref = ref.detach().numpy()
        assert out.shape == ref.shape and out.dtype == ref.dtype
        if quantized.quant.value == "int8":
            np.testing.assert_array_equal(out, ref)
        else:
            assert scale is not None
            lsb = np.abs(out.astype(np.float64) - ref) / scale
            assert lsb.max() <= INT16_MAX_LSB + 1e-6, f"max {lsb.max():.2f} LSB"
            assert lsb.mean() <= INT16_MEAN_LSB, f"mean {lsb.mean():.3f} LSB"
