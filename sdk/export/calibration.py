"""Calibration: the samples PT2E observes before it converts, and what they made of the model.

`--calibration` is read by `--dataset`'s reader (sdk.evaluation.dataset.read_dataset: a .npz
with arr_i, or a folder of PNG images). The report's `quantization.calibration` says where the
samples came from, how many there were, and each activation observer's range (the quantized
layer's min/max as calibrated), so two calibrations can be compared without the graphs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sdk.evaluation.dataset import read_dataset

if TYPE_CHECKING:  # torch is imported where used: a cached deploy's key needs only FLAG
    import torch

FLAG = "--calibration"
# What a report says the samples came from when no --calibration was given.
FROM_MODEL, FROM_EXAMPLE = "calibration_inputs()", "example inputs"

Progress = Callable[[str], None]  # what a long step is at: StepHandle.progress


def read_calibration(
    path: Path, example: tuple[torch.Tensor, ...]
) -> list[tuple[torch.Tensor, ...]]:
    """The samples of a --calibration .npz or image folder, as the model's input tuples."""
    import torch

    from sdk.export.model_loader import standard_layout

    data = read_dataset(Path(path), [t.numpy() for t in example], FLAG)
    return [
        tuple(standard_layout(torch.from_numpy(a)) for a in data.sample(i))
        for i in range(data.size)
    ]


def progress_text(done: int, total: int) -> str:
    """A step's progress after `done` samples (the last one stays up while the export goes on)."""
    if done == total:
        return f"calibrated on {total} sample(s)"
    return f"calibration {done}/{total} samples"


def _end(value: torch.Tensor, largest: bool) -> float | None:
    """One end of an observed range (of all channels), to 6 digits; None: nothing observed."""
    values = value.detach().float()
    number = float(values.max() if largest else values.min())
    return float(f"{number:.6g}") if math.isfinite(number) else None


def _module_of(node: torch.fx.Node) -> str | None:
    """The model's submodule whose forward made `node` (`blocks.0.fc`), from torch.export."""
    stack = node.meta.get("nn_module_stack") or {}
    paths = [path for path, _ in stack.values() if path]
    return paths[-1] if paths else None


def observed_ranges(prepared: torch.fx.GraphModule) -> list[dict]:
    """Each activation observer of a calibrated PT2E model (before convert), in graph order:
    the node it observes, that node's module, and the min/max it saw. Weights (get_attr
    inputs) are left out: their range is the weights', not the calibration's."""
    import torch

    ranges = []
    for node in prepared.graph.nodes:
        if node.op != "call_module" or not node.args:
            continue
        observer = prepared.get_submodule(str(node.target))
        observer = getattr(observer, "activation_post_process", observer)  # a fake-quantize's
        low, high = getattr(observer, "min_val", None), getattr(observer, "max_val", None)
        observed = node.args[0]
        if low is None or high is None or not isinstance(observed, torch.fx.Node):
            continue
        if observed.op == "get_attr":
            continue
        ranges.append(
            {
                "node": observed.name,
                "module": _module_of(observed),
                "min": _end(low, largest=False),
                "max": _end(high, largest=True),
            }
        )
    return ranges
