"""The content-addressed cache: programs and firmware, kept between deploys.

An entry is a folder `<root>/<kind>/<key>`, where the key is a hash of everything that
determines the entry's content (`digest`). An entry is filled in a temporary folder beside it
and renamed into place only when complete, so a crash, a kill or Ctrl-C mid-write leaves no
half entry (at most a `.partial-*` folder, which lookups ignore and `clean` removes).

Root: `$SDK_CACHE_DIR`, else `$XDG_CACHE_HOME/sdk`, else `~/.cache/sdk`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdk.errors import InternalError, StorageError

CACHE_ENV = "SDK_CACHE_DIR"
PACKAGE = __name__.split(".")[0]
META_FILE = "entry.json"
PARTIAL_PREFIX = ".partial-"


def default_root() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / PACKAGE


def digest(parts: Mapping[str, Any]) -> str:
    """The key of an entry: a hash of its inputs (JSON-serialisable), order-independent."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def hash_files(paths: Iterable[Path], root: Path) -> str:
    """One hash over files' paths (relative to `root` when below it) and contents, sorted."""
    h = hashlib.sha256()
    for path in sorted(set(paths)):
        name = path.relative_to(root) if path.is_relative_to(root) else path
        h.update(name.as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


@dataclass(frozen=True)
class KindInfo:
    kind: str
    entries: int
    bytes: int
    partial: int  # interrupted writes left behind (removed by clean)


@dataclass(frozen=True)
class CacheInfo:
    root: Path
    kinds: list[KindInfo]

    @property
    def bytes(self) -> int:
        return sum(k.bytes for k in self.kinds)


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


class Cache:
    """`get` an entry or `put` one; `enabled=False` (`--no-cache`) reads and writes nothing."""

    def __init__(self, root: Path | None = None, enabled: bool = True) -> None:
        self.root = Path(root) if root is not None else default_root()
        self.enabled = enabled

    def path(self, kind: str, key: str) -> Path:
        return self.root / kind / key

    def get(self, kind: str, key: str) -> Path | None:
        """The entry, if it is whole: every file entry.json lists, with its size and hash (a
        damaged entry is a miss, replaced by the next put)."""
        if not self.enabled:
            return None
        entry = self.path(kind, key)
        try:
            listed = json.loads((entry / META_FILE).read_text())["files"]
            for name, (size, sha) in listed.items():
                path = entry / name
                if path.stat().st_size != size or _sha256(path) != sha:
                    return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return entry

    def put(
        self, kind: str, key: str, fill: Callable[[Path], None], about: Mapping[str, Any]
    ) -> Path:
        """Fill a new entry (`fill(folder)` writes its files) and move it into place whole.

        `about` (what the key was made of) goes into the entry's entry.json. Any failure or
        interruption inside `fill` removes the partial folder and re-raises."""
        if not self.enabled:
            raise InternalError("put into a disabled cache")
        folder = self.root / kind
        try:
            folder.mkdir(parents=True, exist_ok=True)
            partial = Path(tempfile.mkdtemp(prefix=f"{PARTIAL_PREFIX}{key}-", dir=folder))
        except OSError as exc:
            raise StorageError(f"cache {self.root}: cannot write there: {exc}") from exc
        try:
            fill(partial)
            files = {
                p.relative_to(partial).as_posix(): [p.stat().st_size, _sha256(p)]
                for p in sorted(partial.rglob("*"))
                if p.is_file()
            }
            meta = {"kind": kind, "key": key, "created": time.time(), "about": dict(about),
                    "files": files}  # fmt: skip
            (partial / META_FILE).write_text(json.dumps(meta, indent=2, default=str) + "\n")
            entry = self.path(kind, key)
            if entry.exists() and self.get(kind, key) is None:
                shutil.rmtree(entry)  # a damaged entry (e.g. an interrupted clean): replaced
            try:
                partial.rename(entry)
            except OSError as exc:
                if self.get(kind, key) is None:  # not a concurrent writer's whole entry
                    raise StorageError(f"cache {self.root}: cannot store {entry}: {exc}") from exc
            return entry
        finally:
            shutil.rmtree(partial, ignore_errors=True)

    def info(self) -> CacheInfo:
        kinds = []
        if self.root.is_dir():
            for folder in sorted(p for p in self.root.iterdir() if p.is_dir()):
                entries = [p for p in folder.iterdir() if p.is_dir()]
                whole = [p for p in entries if (p / META_FILE).is_file()]
                partial = [p for p in entries if p.name.startswith(PARTIAL_PREFIX)]
                kinds.append(
                    KindInfo(folder.name, len(whole), sum(map(_size, entries)), len(partial))
                )
        return CacheInfo(self.root, kinds)

    def clean(self, kind: str | None = None) -> int:
        """Remove every entry (of `kind`); returns the bytes freed."""
        target = self.root / kind if kind else self.root
        if not target.is_dir():
            return 0
        freed = _size(target)
        try:
            shutil.rmtree(target)
        except OSError as exc:
            raise StorageError(f"cache {self.root}: cannot remove {target}: {exc}") from exc
        return freed
