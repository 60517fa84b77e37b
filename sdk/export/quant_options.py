"""The quantizer settings beyond `--quant`: weight granularity, I/O quantization, per-module modes.

ExecuTorch's own Ethos-U tests ask its quantizer for per-tensor weights, for the model's inputs
and outputs quantized by the global config (`set_io`, their `symmetric_io_quantization`), and for
other settings per submodule (`set_module_name` / `set_module_type`). OPTIONS is the one table of
these settings: the CLI's flags (sdk.cli.quant_args), the API's checks, the export report and the
program cache key all read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sdk.errors import UsageError
from sdk.ethosu.config import QuantMode

if TYPE_CHECKING:  # torch is imported where a model is at hand: a cache key needs none of it
    import torch

NO_QUANT = "none"  # a module left in float: its operators fall to the CPU


@dataclass(frozen=True)
class Option:
    """One setting: its flag, its values (the first is the default) and what each value does."""

    name: str  # the QuantOptions field and the report's key
    flag: str
    values: tuple[str, ...]
    help: str
    repeatable: bool = False  # given once per module; values are each one's modes


WEIGHTS = Option(
    "weights",
    "--weights",
    ("per-channel", "per-tensor"),
    "weight scales: one per output channel (default, ExecuTorch's) or one per tensor",
)
IO = Option(
    "io",
    "--io-quant",
    ("auto", "symmetric"),
    "model inputs/outputs: auto (default: as the operators using them ask) or symmetric (the "
    "global config at the I/O, ExecuTorch's set_io / symmetric_io_quantization)",
)
MODULES = Option(
    "modules",
    "--quant-module",
    (*(m.value for m in QuantMode), NO_QUANT),
    "NAME_OR_TYPE=MODE: quantize a submodule (name, e.g. blocks.0.fc) or every submodule of a "
    f"type (e.g. torch.nn.Linear or Linear) as MODE; {NO_QUANT} leaves it in float (on the "
    "CPU); repeatable",
    repeatable=True,
)
OPTIONS = (WEIGHTS, IO, MODULES)


def _check(option: Option, value: str) -> str:
    if value not in option.values:
        raise UsageError(f"{option.flag} {value}: one of {', '.join(option.values)}")
    return value


def parse_module_setting(text: str) -> tuple[str, str]:
    """`NAME_OR_TYPE=MODE` (the CLI's spelling) -> (target, mode)."""
    target, sep, mode = text.rpartition("=")
    if not sep or not target.strip():
        modes = ", ".join(MODULES.values)
        raise UsageError(f"{MODULES.flag} {text}: give NAME_OR_TYPE=MODE, MODE one of {modes}")
    if mode.strip() not in MODULES.values:
        modes = ", ".join(MODULES.values)
        raise UsageError(f"{MODULES.flag} {text}: MODE one of {modes}")
    return target.strip(), mode.strip()


@dataclass(frozen=True)
class QuantOptions:
    """The settings of OPTIONS; `modules` maps a submodule name or type to its mode (in order:
    a later entry takes precedence where two match one operator, as in ExecuTorch)."""

    weights: str = WEIGHTS.values[0]
    io: str = IO.values[0]
    modules: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check(WEIGHTS, self.weights)
        _check(IO, self.io)
        for target, mode in self.modules.items():
            if not target:
                raise UsageError(f"{MODULES.flag}: an empty module name")
            _check(MODULES, mode)
        object.__setattr__(self, "modules", dict(self.modules))

    @classmethod
    def parse(
        cls, weights: str | None = None, io: str | None = None, modules: Iterable[str] = ()
    ) -> QuantOptions:
        """From the CLI's strings (None: the default; modules as NAME_OR_TYPE=MODE)."""
        settings: dict[str, str] = {}
        for text in modules:
            target, mode = parse_module_setting(text)
            if target in settings:
                raise UsageError(f"{MODULES.flag} {target}: given twice")
            settings[target] = mode
        return cls(weights or WEIGHTS.values[0], io or IO.values[0], settings)

    @property
    def per_channel(self) -> bool:
        return self.weights == WEIGHTS.values[0]

    def to_json(self) -> dict:
        """The settings as the report and the cache key hold them."""
        return {
            WEIGHTS.name: self.weights,
            IO.name: self.io,
            MODULES.name: [{"module": t, "quant": m} for t, m in self.modules.items()],
        }

    def config(self, mode: str):
        """ExecuTorch's QuantizationConfig for a mode (None for `none`: not quantized)."""
        return None if mode == NO_QUANT else QuantMode(mode).quantization_config(self.per_channel)

    def apply(self, quantizer, quant: QuantMode, model: torch.nn.Module) -> list[dict]:
        """Set the quantizer up; returns each module setting with what it matched in `model`
        (for the report). Later settings take precedence in ExecuTorch's composable quantizer,
        so the I/O setting goes before the module ones (a module's mode wins over it)."""
        config = self.config(quant.value)
        quantizer.set_global(config)
        if self.io == "symmetric":
            quantizer.set_io(config)
        matched = []
        for target, mode in self.modules.items():
            kind, found = resolve_module(model, target)
            if kind == "name":
                quantizer.set_module_name(found, self.config(mode))
                what = found
            else:
                quantizer.set_module_type(found, self.config(mode))
                what = f"{found.__module__}.{found.__qualname__}"
            matched.append({"module": target, "quant": mode, "matched": {kind: what}})
        return matched


def _type_spellings(cls: type) -> set[str]:
    import torch

    names = {cls.__name__, cls.__qualname__, f"{cls.__module__}.{cls.__qualname__}"}
    if getattr(torch.nn, cls.__name__, None) is cls:  # torch.nn.Linear, nn.Linear
        names |= {f"torch.nn.{cls.__name__}", f"nn.{cls.__name__}"}
    return names


def resolve_module(model: torch.nn.Module, target: str) -> tuple[str, object]:
    """('name', qualified name) for a submodule of `model`, else ('type', class) for the type of
    some submodule; a name nothing in the model has is a UsageError (it would match nothing)."""
    modules = dict(model.named_modules())
    if target in modules and target:
        return "name", target
    types = {type(m) for m in modules.values()}
    found = [t for t in types if target in _type_spellings(t)]
    if len(found) == 1:
        return "type", found[0]
    if len(found) > 1:
        names = ", ".join(sorted(f"{t.__module__}.{t.__qualname__}" for t in found))
        raise UsageError(f"{MODULES.flag} {target}: names several types ({names}); qualify it")
    names = ", ".join(n for n in modules if n) or "none"
    kinds = ", ".join(sorted({t.__name__ for t in types}))
    raise UsageError(
        f"{MODULES.flag} {target}: no such submodule or submodule type in the model "
        f"(submodules: {names}; types: {kinds})"
    )
