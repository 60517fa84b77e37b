"""ExecuTorch's `executorch.exir` package, its `__init__` run only when one of its names is used.

That `__init__` only re-exports names from exir's submodules, but importing them pulls in the
whole export stack (torch._dynamo, inductor passes, the edge dialect): about 9 s here, on every
`sdk` command, though reading a `.pte` (`exir.schema`, `exir._serialize`) and ExecuTorch's
runtime need none of it. So the package is registered with its `__path__` (submodules import
as usual) and its `__init__` runs into the same module object the first time a name it
defines is asked for (`from executorch.exir import to_edge_transform_and_lower`). Nothing
else changes: every submodule is the real one.
"""

from __future__ import annotations

import importlib.util
import sys

PACKAGE = "executorch.exir"


def install() -> None:
    """Register the lazy package, unless exir is already imported (or not installed)."""
    if PACKAGE in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except ImportError:
        return
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    module = importlib.util.module_from_spec(spec)
    state = {"ran": False}

    def __getattr__(name: str):
        if name.startswith("__") or state["ran"]:
            raise AttributeError(f"module {PACKAGE!r} has no attribute {name!r}")
        state["ran"] = True
        del module.__dict__["__getattr__"]
        spec.loader.exec_module(module)
        return getattr(module, name)

    module.__getattr__ = __getattr__
    sys.modules[PACKAGE] = module
