"""What determines a deploy's cached program and firmware: the inputs of each cache key.

A program is a function of the model's source, the inputs it is checked on, the export
configuration, the versions of the AOT stack and the SDK's own export code. A firmware is a
function of the board, the kernel set the program needs, the toolchain and the firmware's
sources. Anything left out of a key would serve a stale entry; so each key is the whole list.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path

from sdk import __version__
from sdk.cache import hash_files
from sdk.export.model_loader import parse_model_spec
from sdk.firmware.boards import Board
from sdk.paths import BOARDS_DIR, FIRMWARE_DIR, KERNELS_DIR, REPO_ROOT
from sdk.tools import version_line

# The AOT stack whose versions change what an export writes.
EXPORT_PACKAGES = ("torch", "torchao", "executorch", "tosa-tools", "ethos-u-vela", "numpy")
SDK_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def package_versions(names: tuple[str, ...] = EXPORT_PACKAGES) -> dict[str, str]:
    versions = {"sdk": __version__}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def model_source_hash(model: str) -> str:
    """The model file and the Python files beside it (what it can import from its folder)."""
    path, _ = parse_model_spec(model)
    folder = path.resolve().parent
    return hash_files([*folder.glob("*.py"), path.resolve()], folder)


def program_key_parts(
    model: str,
    inputs_file: Path | None,
    npu: str,
    quant: str,
    cpu_ops: list[str],
    fix_boundaries: bool = True,
) -> dict:
    _, name = parse_model_spec(model)
    return {
        "model": {"file": parse_model_spec(model)[0].name, "name": name},
        "model_source": model_source_hash(model),
        "inputs": hashlib.sha256(inputs_file.read_bytes()).hexdigest()
        if inputs_file
        else "the model's example inputs",
        "npu": npu,
        "quant": quant,
        "cpu_ops": sorted(cpu_ops),
        "fix_boundaries": fix_boundaries,
        "packages": package_versions(),
        "sdk_export_code": hash_files(
            [p for d in ("export", "program") for p in (SDK_PACKAGE_DIR / d).glob("*.py")],
            SDK_PACKAGE_DIR,
        ),
    }


@functools.cache
def toolchain_version(prefix: str) -> str:
    """The cross compiler's own version line (its build matters, not only its name)."""
    try:
        return version_line([f"{prefix}gcc", "--version"])
    except OSError:
        return "absent"


def firmware_sources_hash(board: Board) -> str:
    """Every file the firmware build reads: runtime, kernels, the board, the build scripts."""
    files = [
        *(p for p in FIRMWARE_DIR.rglob("*") if p.is_file()),
        *(p for p in KERNELS_DIR.rglob("*") if p.is_file()),
        *(p for p in board.directory.rglob("*") if p.is_file()),
        BOARDS_DIR / "board.schema.yaml",
        REPO_ROOT / "SConstruct",
        *(SDK_PACKAGE_DIR / "firmware").glob("*.py"),
        SDK_PACKAGE_DIR / "kernelgen.py",
    ]
    return hash_files([p for p in files if "__pycache__" not in p.parts], REPO_ROOT)


def firmware_key_parts(board: Board, kernel_manifest: str, exit_method: str | None) -> dict:
    return {
        "board": board.name,
        "kernels": kernel_manifest,
        "toolchain": toolchain_version(board.toolchain_prefix),
        "sources": firmware_sources_hash(board),
        "exit": exit_method or board.exit_method,
    }
