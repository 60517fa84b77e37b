"""Inputs and outputs as `.npz` files, arrays in the program's order (`arr_0`, `arr_1`, ...)."""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from sdk.errors import UsageError


def read_arrays(path: Path) -> list[np.ndarray]:
    """arr_0..arr_{n-1} of an .npz (as `np.savez(path, *arrays)` writes them)."""
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as data:
            keys = set(data.files)
            arrays = [data[f"arr_{i}"] for i in range(len(keys)) if f"arr_{i}" in keys]
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise UsageError(f"{path}: not a readable .npz: {exc}") from exc
    if len(arrays) != len(keys):
        raise UsageError(
            f"{path}: arrays must be named arr_0..arr_{len(keys) - 1} (np.savez order), "
            f"found {sorted(keys)}"
        )
    return arrays


def write_arrays(path: Path, arrays: list[np.ndarray]) -> None:
    """Write atomically: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".npz", dir=path.parent)
    os.close(fd)
    try:
        np.savez(tmp, *arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
