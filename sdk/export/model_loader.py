"""Load a model and its example inputs from a Python file, by convention.

MODEL is `path/to/file.py` or `path/to/file.py:Name`.

- `file.py` must define `model()` returning the `torch.nn.Module` and `example_inputs()`
  returning the tuple of example input tensors.
- `file.py:Name`: `Name` is an `nn.Module` subclass (constructed with no arguments) or a
  function returning the module. Example inputs come from `Name.example_inputs()` when the
  class has it, else from the file's `example_inputs()`; calibration inputs likewise.
- Optional: `calibration_inputs()` returning an iterable of input tuples for quantization
  calibration (default: the example inputs alone).
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from sdk.errors import ModelLoadError

if TYPE_CHECKING:  # torch is imported when a model is loaded, not to name one (cache keys)
    import torch

CONVENTION = (
    "define model() returning the nn.Module and example_inputs() returning a tuple of tensors, "
    "or name one with FILE.py:Name"
)


@dataclass
class LoadedModel:
    module: torch.nn.Module
    example_inputs: tuple[torch.Tensor, ...]
    calibration: list[tuple[torch.Tensor, ...]] | None
    name: str
    path: Path


def _import_file(path: Path) -> ModuleType:
    module_name = f"sdk_user_model_{abs(hash(path.resolve()))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"{path}: cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ModelLoadError(f"{path}: raised {_where(exc, path)}") from exc
    return module


def _where(exc: BaseException, path: Path) -> str:
    """`ValueError: message (line N)` for the innermost frame in the user's file."""
    line = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == path.resolve():
            line = f" (line {frame.lineno})"
    return f"{type(exc).__name__}: {exc}{line}"


def _call(fn: Callable, what: str, path: Path):
    try:
        return fn()
    except Exception as exc:
        raise ModelLoadError(f"{path}: {what} raised {_where(exc, path)}") from exc


def _as_inputs(value, what: str, path: Path) -> tuple[torch.Tensor, ...]:
    import torch

    if isinstance(value, torch.Tensor):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not value:
        raise ModelLoadError(f"{path}: {what} must return a non-empty tuple of tensors")
    if not all(isinstance(v, torch.Tensor) for v in value):
        kinds = ", ".join(type(v).__name__ for v in value)
        raise ModelLoadError(f"{path}: {what} must return tensors, got ({kinds})")
    return tuple(value)


def standard_layout(t: torch.Tensor) -> torch.Tensor:
    """A copy with row-major strides: numpy's `img[None, None]` gives size-1 dims stride 0,
    which torch calls contiguous but ExecuTorch refuses deep in lowering."""
    import torch

    out = torch.empty(t.shape, dtype=t.dtype)
    with torch.no_grad():
        out.copy_(t.detach())
    return out


def non_finite(t: torch.Tensor) -> str | None:
    """'NaN' or 'Inf' when a float tensor holds one (calibration ranges would be meaningless)."""
    import torch

    if not t.is_floating_point():
        return None
    if torch.isnan(t).any():
        return "NaN"
    if torch.isinf(t).any():
        return "Inf"
    return None


def output_tensors(value) -> list[torch.Tensor]:
    """A model's outputs as the program holds them: the tensors of its (possibly nested)
    return value, in torch.export's flattening order (an LSTM's `out, (h, c)` is three)."""
    import torch
    from torch.utils._pytree import tree_leaves

    return [leaf for leaf in tree_leaves(value) if isinstance(leaf, torch.Tensor)]


@dataclass(frozen=True)
class ModelSpec:
    """MODEL as given, `file.py[:Name]`, parsed once: the file and the optional name."""

    path: Path
    name: str | None = None

    @classmethod
    def parse(cls, spec: str | ModelSpec) -> ModelSpec:
        if isinstance(spec, ModelSpec):
            return spec
        path_part, sep, name = spec.rpartition(":")
        if sep and path_part.endswith(".py") and name.isidentifier():
            return cls(Path(path_part), name)
        return cls(Path(spec))

    @property
    def stem(self) -> str:
        """The model's short name: the class or function named, else the file's stem."""
        return self.name or self.path.stem

    def __str__(self) -> str:
        return f"{self.path}:{self.name}" if self.name else str(self.path)


def load_model(spec: str | ModelSpec) -> LoadedModel:
    """Import MODEL and return the module (in eval mode), its example inputs and calibration."""
    import torch

    path, name = (parsed := ModelSpec.parse(spec)).path, parsed.name
    if not path.is_file():
        raise ModelLoadError(f"{path}: model file not found")
    if path.suffix != ".py":
        raise ModelLoadError(f"{path}: a model is a Python file (.py); {CONVENTION}")
    user = _import_file(path)

    example_fn = getattr(user, "example_inputs", None)
    if name is None:
        factory = getattr(user, "model", None)
        if not callable(factory):
            raise ModelLoadError(f"{path}: no model() found; {CONVENTION}")
        label = path.stem
    else:
        factory = getattr(user, name, None)
        if factory is None:
            raise ModelLoadError(f"{path}: defines no {name!r}; {CONVENTION}")
        if inspect.isclass(factory) and callable(getattr(factory, "example_inputs", None)):
            example_fn = factory.example_inputs
        label = name

    module = _call(factory, f"{getattr(factory, '__name__', name)}()", path)
    if not isinstance(module, torch.nn.Module):
        raise ModelLoadError(
            f"{path}: {label} gave a {type(module).__name__}, not a torch.nn.Module"
        )
    if not callable(example_fn):
        raise ModelLoadError(f"{path}: no example_inputs() found; {CONVENTION}")
    example = _as_inputs(_call(example_fn, "example_inputs()", path), "example_inputs()", path)
    example = tuple(standard_layout(t) for t in example)

    calibration = None
    calibration_fn = getattr(user, "calibration_inputs", None)
    if name is not None and inspect.isclass(factory):  # the class's own, as example_inputs
        calibration_fn = getattr(factory, "calibration_inputs", calibration_fn)
    if callable(calibration_fn):
        samples = _call(calibration_fn, "calibration_inputs()", path)
        calibration = []
        for s, sample in enumerate(samples):
            tensors = _as_inputs(sample, "calibration_inputs()", path)
            for i, t in enumerate(tensors):
                bad = non_finite(t)
                if bad:
                    raise ModelLoadError(
                        f"{path}: calibration_inputs() sample {s}, input {i} holds {bad} "
                        "(quantization ranges need finite values)"
                    )
            calibration.append(tuple(standard_layout(t) for t in tensors))
    return LoadedModel(module.eval(), example, calibration, label, path)
