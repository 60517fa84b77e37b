"""Input layout: a program may take a 4-D input channels-last (NHWC, as a camera hands an image
to firmware) instead of the model's NCHW, so the NPU delegate needs no input transpose.

ExecuTorch says how a tensor lies in memory by its dim order: (0, 2, 3, 1) for channels-last,
with the sizes still the logical NCHW ones. The SDK's arrays always have the logical shape and
order (the user's inputs, the references, the verdict); only the bytes a program reads and
writes follow its dim order. `to_memory_order` and `from_memory_order` convert at that border:
the firmware link and the host reference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sdk.errors import check_choice

if TYPE_CHECKING:
    import torch

    from sdk.program.pte import LoadedProgram

AS_MODEL = "as-model"
CHANNELS_LAST = "channels-last"
INPUT_LAYOUTS = (AS_MODEL, CHANNELS_LAST)
CHANNELS_LAST_ORDER = (0, 2, 3, 1)


def check_input_layout(layout: str) -> str:
    return check_choice("--input-layout", layout, INPUT_LAYOUTS)


def reorderable(shape: tuple[int, ...] | list[int]) -> bool:
    """Only a 4-D input has a channels-last form."""
    return len(shape) == 4


def laid_out(t: torch.Tensor, layout: str) -> torch.Tensor:
    """The example tensor in the layout the program is to take (torch.export reads a tensor's
    memory format as the program input's dim order)."""
    import torch

    if check_input_layout(layout) == CHANNELS_LAST and reorderable(tuple(t.shape)):
        return t.to(memory_format=torch.channels_last)
    return t


def _identity(order: tuple[int, ...]) -> bool:
    return order == tuple(range(len(order)))


def to_memory_order(array: np.ndarray, order: tuple[int, ...]) -> np.ndarray:
    """The array's elements in the order `order` lays them in memory, under the array's own
    shape: what the program's bytes hold (row-major `order`: the array itself)."""
    if _identity(order):
        return array
    return np.ascontiguousarray(np.transpose(array, order)).reshape(array.shape)


def from_memory_order(array: np.ndarray, order: tuple[int, ...]) -> np.ndarray:
    """The inverse of `to_memory_order`: a program's bytes, shaped by its sizes, as the array."""
    if _identity(order):
        return array
    stored = array.reshape([array.shape[d] for d in order])
    return np.ascontiguousarray(np.transpose(stored, np.argsort(order)))


def program_inputs(program: LoadedProgram, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """The inputs' arrays as the program's memory holds them."""
    return [to_memory_order(a, t.dim_order) for a, t in zip(arrays, program.inputs())]


def program_outputs(program: LoadedProgram, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """The outputs the program's memory holds, as arrays."""
    return [from_memory_order(a, t.dim_order) for a, t in zip(arrays, program.outputs())]
