"""A small int8 TensorFlow Lite network built here, for tests that need a .tflite Vela compiles:
a chain of 3x3 CONV_2Ds (SAME padding, stride 1, fused ReLU), per-channel int8 weights and
int32 biases, seeded random weights. Written with the flatbuffers builder and Vela's generated
TFLite schema classes (`ethosu.vela.tflite`): schema version 3, file identifier "TFL3".
"""

from __future__ import annotations

import itertools
from pathlib import Path

import flatbuffers
import numpy as np
from ethosu.vela.tflite import (
    Buffer,
    Conv2DOptions,
    Model,
    Operator,
    OperatorCode,
    QuantizationParameters,
    SubGraph,
    Tensor,
)
from ethosu.vela.tflite.ActivationFunctionType import ActivationFunctionType
from ethosu.vela.tflite.BuiltinOperator import BuiltinOperator
from ethosu.vela.tflite.BuiltinOptions import BuiltinOptions
from ethosu.vela.tflite.Padding import Padding
from ethosu.vela.tflite.TensorType import TensorType

SCHEMA_VERSION = 3
IDENTIFIER = b"TFL3"


def _ints(builder: flatbuffers.Builder, start, values: list[int]) -> int:
    """A vector of int32 (tensor shapes, operator and subgraph tensor indices)."""
    start(builder, len(values))
    for value in reversed(values):
        builder.PrependInt32(value)
    return builder.EndVector()


def _offsets(builder: flatbuffers.Builder, start, offsets: list[int]) -> int:
    start(builder, len(offsets))
    for offset in reversed(offsets):
        builder.PrependUOffsetTRelative(offset)
    return builder.EndVector()


def _quantization(builder: flatbuffers.Builder, scales: np.ndarray, zero_point: int) -> int:
    """Scales (one per tensor, or one per output channel along dimension 0) and zero points."""
    builder.StartVector(4, len(scales), 4)
    for scale in reversed(scales):
        builder.PrependFloat32(float(scale))
    scale_vector = builder.EndVector()
    builder.StartVector(8, len(scales), 8)
    for _ in scales:
        builder.PrependInt64(zero_point)
    zero_vector = builder.EndVector()
    QuantizationParameters.QuantizationParametersStart(builder)
    QuantizationParameters.QuantizationParametersAddScale(builder, scale_vector)
    QuantizationParameters.QuantizationParametersAddZeroPoint(builder, zero_vector)
    QuantizationParameters.QuantizationParametersAddQuantizedDimension(builder, 0)
    return QuantizationParameters.QuantizationParametersEnd(builder)


class _Graph:
    """Tensors and buffers as they are added; written out by `finish`."""

    def __init__(self) -> None:
        self.builder = flatbuffers.Builder(4096)
        self.buffers: list[bytes] = [b""]  # buffer 0: the empty one every tensor without data uses
        self.tensors: list[int] = []

    def tensor(
        self, name: str, shape: list[int], kind: int, scales: np.ndarray, zero_point: int = 0,
        data: bytes | None = None,
    ) -> int:  # fmt: skip
        builder = self.builder
        buffer = 0
        if data is not None:
            self.buffers.append(data)
            buffer = len(self.buffers) - 1
        name_offset = builder.CreateString(name)
        shape_vector = _ints(builder, Tensor.TensorStartShapeVector, shape)
        quantization = _quantization(builder, scales, zero_point)
        Tensor.TensorStart(builder)
        Tensor.TensorAddShape(builder, shape_vector)
        Tensor.TensorAddType(builder, kind)
        Tensor.TensorAddBuffer(builder, buffer)
        Tensor.TensorAddName(builder, name_offset)
        Tensor.TensorAddQuantization(builder, quantization)
        self.tensors.append(Tensor.TensorEnd(builder))
        return len(self.tensors) - 1

    def conv(self, opcode: int, inputs: list[int], output: int) -> int:
        builder = self.builder
        Conv2DOptions.Conv2DOptionsStart(builder)
        Conv2DOptions.Conv2DOptionsAddPadding(builder, Padding.SAME)
        Conv2DOptions.Conv2DOptionsAddStrideW(builder, 1)
        Conv2DOptions.Conv2DOptionsAddStrideH(builder, 1)
        Conv2DOptions.Conv2DOptionsAddDilationWFactor(builder, 1)
        Conv2DOptions.Conv2DOptionsAddDilationHFactor(builder, 1)
        Conv2DOptions.Conv2DOptionsAddFusedActivationFunction(builder, ActivationFunctionType.RELU)
        options = Conv2DOptions.Conv2DOptionsEnd(builder)
        input_vector = _ints(builder, Operator.OperatorStartInputsVector, inputs)
        output_vector = _ints(builder, Operator.OperatorStartOutputsVector, [output])
        Operator.OperatorStart(builder)
        Operator.OperatorAddOpcodeIndex(builder, opcode)
        Operator.OperatorAddInputs(builder, input_vector)
        Operator.OperatorAddOutputs(builder, output_vector)
        Operator.OperatorAddBuiltinOptionsType(builder, BuiltinOptions.Conv2DOptions)
        Operator.OperatorAddBuiltinOptions(builder, options)
        return Operator.OperatorEnd(builder)

    def finish(self, operators: list[int], inputs: list[int], outputs: list[int]) -> bytes:
        builder = self.builder
        tensors = _offsets(builder, SubGraph.SubGraphStartTensorsVector, self.tensors)
        operator_vector = _offsets(builder, SubGraph.SubGraphStartOperatorsVector, operators)
        input_vector = _ints(builder, SubGraph.SubGraphStartInputsVector, inputs)
        output_vector = _ints(builder, SubGraph.SubGraphStartOutputsVector, outputs)
        name = builder.CreateString("main")
        SubGraph.SubGraphStart(builder)
        SubGraph.SubGraphAddTensors(builder, tensors)
        SubGraph.SubGraphAddInputs(builder, input_vector)
        SubGraph.SubGraphAddOutputs(builder, output_vector)
        SubGraph.SubGraphAddOperators(builder, operator_vector)
        SubGraph.SubGraphAddName(builder, name)
        subgraph = SubGraph.SubGraphEnd(builder)

        buffers = []
        for data in self.buffers:
            vector = None
            if data:
                builder.StartVector(1, len(data), 16)  # 16-byte aligned, as TFLite writes them
                for byte in reversed(data):
                    builder.PrependUint8(byte)
                vector = builder.EndVector()
            Buffer.BufferStart(builder)
            if vector is not None:
                Buffer.BufferAddData(builder, vector)
            buffers.append(Buffer.BufferEnd(builder))

        OperatorCode.OperatorCodeStart(builder)
        OperatorCode.OperatorCodeAddDeprecatedBuiltinCode(builder, BuiltinOperator.CONV_2D)
        OperatorCode.OperatorCodeAddBuiltinCode(builder, BuiltinOperator.CONV_2D)
        OperatorCode.OperatorCodeAddVersion(builder, 3)  # per-channel int8
        codes = [OperatorCode.OperatorCodeEnd(builder)]

        code_vector = _offsets(builder, Model.ModelStartOperatorCodesVector, codes)
        subgraph_vector = _offsets(builder, Model.ModelStartSubgraphsVector, [subgraph])
        buffer_vector = _offsets(builder, Model.ModelStartBuffersVector, buffers)
        description = builder.CreateString("tests/support/tflite_model.py")
        Model.ModelStart(builder)
        Model.ModelAddVersion(builder, SCHEMA_VERSION)
        Model.ModelAddOperatorCodes(builder, code_vector)
        Model.ModelAddSubgraphs(builder, subgraph_vector)
        Model.ModelAddDescription(builder, description)
        Model.ModelAddBuffers(builder, buffer_vector)
        builder.Finish(Model.ModelEnd(builder), file_identifier=IDENTIFIER)
        return bytes(builder.Output())


def conv_chain_int8(
    height: int = 16, width: int = 16, channels: tuple[int, ...] = (16, 32, 32), seed: int = 0
) -> bytes:
    """int8 input 1 x height x width x channels[0], then one 3x3 CONV_2D + ReLU per further
    entry of `channels`: the .tflite file's bytes (deterministic for a seed)."""
    rng = np.random.default_rng(seed)
    graph = _Graph()
    scale, zero_point = 0.05, -3  # the activations' quantization, the same for each
    first = graph.tensor("input", [1, height, width, channels[0]], TensorType.INT8,
                         np.array([scale]), zero_point)  # fmt: skip
    current, operators = first, []
    for k, (cin, cout) in enumerate(itertools.pairwise(channels)):
        weights = rng.integers(-127, 128, size=(cout, 3, 3, cin), dtype=np.int8)
        w_scales = rng.uniform(0.002, 0.01, size=cout).astype(np.float32)
        bias = rng.integers(-2000, 2000, size=cout, dtype=np.int32)
        b_scales = (w_scales * np.float32(scale)).astype(np.float32)
        w = graph.tensor(f"conv{k}/weights", [cout, 3, 3, cin], TensorType.INT8, w_scales,
                         data=weights.tobytes())  # fmt: skip
        b = graph.tensor(f"conv{k}/bias", [cout], TensorType.INT32, b_scales,
                         data=bias.astype("<i4").tobytes())  # fmt: skip
        out = graph.tensor(f"conv{k}/output", [1, height, width, cout], TensorType.INT8,
                           np.array([scale]), zero_point)  # fmt: skip
        operators.append(graph.conv(0, [current, w, b], out))
        current = out
    return graph.finish(operators, [first], [current])


def write_conv_chain(path: Path, **kwargs) -> Path:
    """`conv_chain_int8(**kwargs)` written to `path`."""
    path.write_bytes(conv_chain_int8(**kwargs))
    return path


if __name__ == "__main__":  # write one to look at: python -m tests.support.tflite_model OUT
    import sys

    print(write_conv_chain(Path(sys.argv[1] if len(sys.argv) > 1 else "conv_chain_int8.tflite")))
