"""Small file helpers shared by the generators."""

from __future__ import annotations

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
