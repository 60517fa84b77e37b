"""Small file helpers: written only when changed, written whole or not at all, YAML read fast."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_if_changed(path: Path, text: str) -> bool:
    """Write only when the content differs, so an unchanged build stays up to date."""
    if path.is_file() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def read_yaml(text: str):
    """YAML with libyaml's parser when present (10x faster than the pure-Python one: board
    files and kernels.yaml are read on every command), the safe loader either way."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def write_atomically(path: Path, text: str) -> None:
    """A file is never left half-written (temporary file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
