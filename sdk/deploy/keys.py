"""What determines a deploy's cached program and firmware: the inputs of each cache key.

A program is a function of the model's source, the inputs it is checked on, the export
configuration, the versions of the AOT stack and the SDK's own export code. A firmware is a
function of the board, the kernel set the program needs, the toolchain and the firmware's
sources. The host reference's outputs are a function of the program, the inputs and the
reference's code and packages. Anything left out of a key would serve a stale entry; so each
key is the whole list.
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

# The kinds of cache entry a deploy writes (folders under the cache root).
PROGRAM_KIND, FIRMWARE_KIND, REFERENCE_KIND = "program", "firmware", "reference"
CACHE_KINDS = (PROGRAM_KIND, FIRMWARE_KIND, REFERENCE_KIND)

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
    """The model's folder: every file beside the model (weights it loads, data) and every
    Python file below it (what it can import). Code installed elsewhere is in `packages`
    only when it is one of EXPORT_PACKAGES: a model importing other installed code it changes
    needs --no-cache (README)."""
    path, _ = parse_model_spec(model)
    folder = path.resolve().parent
    files = [p for p in folder.iterdir() if p.is_file()]
    files += [p for p in folder.rglob("*.py") if "__pycache__" not in p.parts]
    return hash_files([*files, path.resolve()], folder)


def program_key_parts(
    model: str,
    inputs_file: Path | None,
    npu: str,
    quant: str,
    cpu_ops: list[str],
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
        "packages": package_versions(),
        # What writes an entry: the export, the program reader and the command-stream checks
        # the export makes (sdk/npu), and the deploy's own fill.
        "sdk_export_code": hash_files(
            [
                *(
                    p
                    for d in ("export", "program", "npu")
                    for p in (SDK_PACKAGE_DIR / d).glob("*.py")
                ),
                SDK_PACKAGE_DIR / "deploy" / "pipeline.py",
                SDK_PACKAGE_DIR / "npz.py",
            ],
            SDK_PACKAGE_DIR,
        ),
    }


# What the host reference's outputs depend on besides the program and the inputs.
REFERENCE_PACKAGES = ("executorch", "tosa-tools", "torch", "numpy")


def reference_key_parts(export_dir: Path, inputs_file: Path) -> dict:
    """The host reference's outputs: the program and its saved TOSA (the bytes it runs), the
    inputs, the packages that execute them, and the SDK code that drives them."""
    return {
        "export": hash_files(
            [export_dir / "model.pte", *sorted((export_dir / "tosa").glob("*.tosa"))], export_dir
        ),
        "inputs": hashlib.sha256(inputs_file.read_bytes()).hexdigest(),
        "packages": package_versions(REFERENCE_PACKAGES),
        "sdk_reference_code": hash_files(
            [
                *(SDK_PACKAGE_DIR / "program").glob("*.py"),
                *(SDK_PACKAGE_DIR / "vnpu").glob("*.py"),
                SDK_PACKAGE_DIR / "targets" / "host.py",
                SDK_PACKAGE_DIR / "npz.py",
            ],
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


@functools.cache
def build_tools() -> dict[str, str]:
    """The firmware's program reader is generated by flatc from ExecuTorch's schema, and SCons
    drives the build: their versions are part of what a firmware is."""
    from sdk.firmware.buildgen import FLATC

    found = package_versions(("executorch", "scons"))
    try:
        found["flatc"] = version_line([FLATC, "--version"])
    except OSError:
        found["flatc"] = "absent"
    return found


def firmware_key_parts(board: Board, kernel_manifest: str, npu: str) -> dict:
    return {
        "board": board.name,
        "npu": npu,
        "kernels": kernel_manifest,
        "toolchain": toolchain_version(board.toolchain_prefix),
        "tools": build_tools(),
        "sources": firmware_sources_hash(board),
    }
