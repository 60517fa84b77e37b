"""A program with integer I/O (`--io int`): the scale and zero-point of each quantized input
and output, and the host-side quantize/dequantize that stand in for the operators the
export took out of the program.

report.json's `io` section is the one record of these figures (`IoSection.to_json`); the
deploy, `sdk run` users and firmware users read them from there. numpy only: the deploy
reads them without importing torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from sdk.errors import UsageError, check_choice
from sdk.program.layout import AS_MODEL
from sdk.program.pte import LoadedProgram, output_quant_scales

IO_MODES = ("float", "int")


def check_io(io: str) -> str:
    """`io` if it is one of IO_MODES, else a one-line UsageError."""
    return check_choice("--io", io, IO_MODES, quoted=False)


@dataclass(frozen=True)
class IoQuant:
    """One program input or output that carries integers: real = (q - zero_point) * scale."""

    dtype: str  # numpy's name: "int8", "int16"
    scale: float
    zero_point: int
    qmin: int
    qmax: int

    def quantize(self, values: np.ndarray) -> np.ndarray:
        """Float values to the integers the program takes, as the edge quantize computed them
        (float32 x (1/scale), rounded half to even, + zero-point, clamped)."""
        inverse = np.float32(1.0 / self.scale)
        scaled = np.rint(np.asarray(values, dtype=np.float32) * inverse)
        return np.clip(scaled + self.zero_point, self.qmin, self.qmax).astype(self.dtype)

    def dequantize(self, values: np.ndarray) -> np.ndarray:
        """The program's integers as the float values the removed dequantize would have
        given (float32)."""
        q = np.asarray(values)
        if q.dtype != np.dtype(self.dtype):
            raise UsageError(f"a {self.dtype} value was expected, got {q.dtype}")
        shifted = q.astype(np.int32) - np.int32(self.zero_point)
        return (shifted.astype(np.float32) * np.float32(self.scale)).astype(np.float32)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> IoQuant:
        return cls(
            str(data["dtype"]),
            float(data["scale"]),
            int(data["zero_point"]),
            int(data["qmin"]),
            int(data["qmax"]),
        )


@dataclass(frozen=True)
class IoSection:
    """The program's I/O mode and, per input and output in program order, its quantization
    (None: the value is passed as it is: a float with --io float, an index tensor)."""

    mode: str
    inputs: tuple[IoQuant | None, ...] = ()
    outputs: tuple[IoQuant | None, ...] = ()
    input_layout: str = AS_MODEL  # --input-layout (sdk.program.layout)

    def quantize_inputs(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The user's (float) inputs as the program takes them."""
        if self.mode == "float":
            return list(arrays)
        if len(arrays) != len(self.inputs):
            raise UsageError(f"{len(arrays)} inputs given, the program takes {len(self.inputs)}")
        return [a if q is None else q.quantize(a) for a, q in zip(arrays, self.inputs)]

    def dequantize_outputs(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The program's outputs as float values (outputs with no quantization as they are)."""
        if self.mode == "float":
            return list(arrays)
        quants = list(self.outputs) + [None] * (len(arrays) - len(self.outputs))
        return [a if q is None else q.dequantize(a) for a, q in zip(arrays, quants)]

    def output_scales(self, program: LoadedProgram) -> list[float | None]:
        """Each program output's quantization step: its own with integer I/O, else the scale of
        the dequantize that makes it in the program (None: neither)."""
        own = output_quant_scales(program)
        quants = list(self.outputs) + [None] * (len(own) - len(self.outputs))
        return [s if q is None else q.scale for s, q in zip(own, quants)]

    def to_json(self) -> dict:
        def entries(quants: tuple[IoQuant | None, ...]) -> list[dict | None]:
            return [
                None if q is None else {"index": i, **q.to_json()} for i, q in enumerate(quants)
            ]

        return {
            "mode": self.mode,
            "input_layout": self.input_layout,
            "inputs": entries(self.inputs),
            "outputs": entries(self.outputs),
        }

    @classmethod
    def from_json(cls, data: dict | None) -> IoSection:
        """A report's `io` section; a report from before --io (none) is float I/O."""
        if not data:
            return cls("float")

        def quants(entries: list) -> tuple[IoQuant | None, ...]:
            return tuple(None if e is None else IoQuant.from_json(e) for e in entries)

        return cls(
            data["mode"],
            quants(data.get("inputs", [])),
            quants(data.get("outputs", [])),
            data.get("input_layout", AS_MODEL),
        )
