"""ExecuTorch's `executorch.exir` packages, each `__init__` run only when one of its names is used.

Those `__init__`s only re-export names from their submodules, but importing them pulls in the
whole export stack: `exir`'s brings torch._dynamo, inductor passes and the edge dialect (about
9 s here, on every `sdk` command), `exir._serialize`'s brings torch and sympy (3 s) through its
serializer. Reading a `.pte` (`exir.schema`, `exir._serialize._flatbuffer_program`) needs none
of it. So each package is registered with its `__path__` (submodules import as usual) and its
`__init__` runs into the same module object the first time a name it defines is asked for
(`from executorch.exir import to_edge_transform_and_lower`). Nothing else changes: every
submodule is the real one.
"""

from __future__ import annotations

import importlib.util
import sys

PACKAGES = ("executorch.exir", "executorch.exir._serialize")  # parents first


def install() -> None:
    """Register each lazy package, unless it is already imported (or not installed)."""
    for package in PACKAGES:
        _install(package)


def _install(package: str) -> None:
    if package in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(package)
    except ImportError:
        return
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    module = importlib.util.module_from_spec(spec)
    state = {"ran": False}

    def __getattr__(name: str):
        if name.startswith("__") or state["ran"]:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        state["ran"] = True
        del module.__dict__["__getattr__"]
        spec.loader.exec_module(module)
        return getattr(module, name)

    module.__getattr__ = __getattr__
    sys.modules[package] = module
    parent, _, child = package.rpartition(".")
    if parent in sys.modules:  # as the import system does: the parent names its submodule
        setattr(sys.modules[parent], child, module)
