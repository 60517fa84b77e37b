"""THE dtype table: every tensor element type the firmware knows, keyed by ExecuTorch's
ScalarType (the installed executorch wheel's schema, so the codes are ExecuTorch's).

The firmware's rt::ScalarType, its names and element sizes are generated from it
(sdk.link.contract.render_header -> contract.h); the program reader, the firmware's records and the
kernel registrations read it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from executorch.exir.schema import ScalarType


@dataclass(frozen=True)
class Dtype:
    """A tensor element type the firmware knows: ExecuTorch's name for it ("Float"), its size,
    and its numpy dtype (`storage_only`: quantized types, which arrive as their integer
    storage; None: no numpy type, e.g. BFloat16)."""

    name: str
    itemsize: int
    numpy: np.dtype | None
    storage_only: bool = False


def _dtype(name: str, numpy, storage_only: bool = False) -> Dtype:
    return Dtype(name, np.dtype(numpy).itemsize, np.dtype(numpy), storage_only)


DTYPES: dict[ScalarType, Dtype] = {
    ScalarType.BYTE: _dtype("Byte", np.uint8),
    ScalarType.CHAR: _dtype("Char", np.int8),
    ScalarType.SHORT: _dtype("Short", "<i2"),
    ScalarType.INT: _dtype("Int", "<i4"),
    ScalarType.LONG: _dtype("Long", "<i8"),
    ScalarType.HALF: _dtype("Half", "<f2"),
    ScalarType.FLOAT: _dtype("Float", "<f4"),
    ScalarType.DOUBLE: _dtype("Double", "<f8"),
    ScalarType.BOOL: _dtype("Bool", np.bool_),
    ScalarType.QINT8: _dtype("QInt8", np.int8, storage_only=True),
    ScalarType.QUINT8: _dtype("QUInt8", np.uint8, storage_only=True),
    ScalarType.QINT32: _dtype("QInt32", "<i4", storage_only=True),
    ScalarType.BFLOAT16: Dtype("BFloat16", 2, None),
    ScalarType.UINT16: _dtype("UInt16", "<u2"),
    ScalarType.UINT32: _dtype("UInt32", "<u4"),
    ScalarType.UINT64: _dtype("UInt64", "<u8"),
}
