"""The SDK's pinned Python dependencies, as the installed distribution declares them.

pyproject.toml is the one place the pins are written; what pip installed from it is in the
distribution's metadata (`importlib.metadata.requires`), so checks and install hints read
that instead of restating versions.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

DISTRIBUTION = __name__.split(".")[0]


@dataclass(frozen=True)
class Pin:
    """One requirement of the SDK; `extra` names the optional extra it belongs to."""

    requirement: Requirement
    extra: str | None = None

    @property
    def name(self) -> str:
        return canonicalize_name(self.requirement.name)

    @property
    def text(self) -> str:
        """The requirement as pip takes it, without its marker: "executorch[ethos-u]==1.5.1"."""
        r = self.requirement
        extras = f"[{','.join(sorted(r.extras))}]" if r.extras else ""
        return f"{r.name}{extras}{r.specifier}"


def parse_pin(line: str, extras: Sequence[str] = ()) -> Pin | None:
    """A metadata requirement line as a Pin; None when its marker excludes this machine."""
    requirement = Requirement(line)
    marker = requirement.marker
    if marker is None or marker.evaluate({"extra": ""}):
        return Pin(requirement)
    for extra in extras:
        if marker.evaluate({"extra": extra}):
            return Pin(requirement, extra)
    return None


def pins() -> list[Pin]:
    """Every requirement of the installed SDK (PackageNotFoundError when it is not installed)."""
    extras = metadata.metadata(DISTRIBUTION).get_all("Provides-Extra") or []
    parsed = (parse_pin(line, extras) for line in metadata.requires(DISTRIBUTION) or [])
    return [pin for pin in parsed if pin is not None]


def pins_for_modules(modules: list[str]) -> list[Pin]:
    """The base pins that provide these importable modules (by the installed distributions'
    top-level names, else the module's own name); every base pin if one cannot be told."""
    base = [pin for pin in pins() if pin.extra is None]
    providers = metadata.packages_distributions()
    wanted: list[Pin] = []
    for module in modules:
        top = module.split(".")[0]
        names = {canonicalize_name(d) for d in providers.get(top, [top])}
        found = [pin for pin in base if pin.name in names]
        if not found:
            return base
        wanted += [pin for pin in found if pin not in wanted]
    return wanted


def pip_install(items: list[Pin]) -> str:
    """The command that installs these pins into the Python running the SDK."""
    quoted = " ".join(shlex.quote(pin.text) for pin in items)
    return f"{shlex.quote(sys.executable)} -m pip install {quoted}"
