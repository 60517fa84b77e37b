"""What determines a deploy's cached program and firmware: the inputs of each cache key.

A program is a function of the model's source, the inputs it is checked on, the export
configuration, the versions of the AOT stack and the SDK's own export code. A firmware is a
function of the board, the kernel set the program needs, the toolchain and the firmware's
sources. The host reference's outputs are a function of the program, the inputs and the
reference's code and packages. Anything left out of a key would serve a stale entry; so each
key is the whole list.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import json
from importlib import metadata
from pathlib import Path

from sdk import __version__
from sdk.cache import default_root, hash_files
from sdk.environment.paths import BOARDS_DIR, FIRMWARE_DIR, KERNELS_DIR, REPO_ROOT
from sdk.environment.tools import version_line
from sdk.errors import StorageError
from sdk.ethosu.memories import EXECUTORCH_DEFAULT, VelaMemory
from sdk.export.model_loader import ModelSpec
from sdk.firmware.boards import Board
from sdk.program.layout import AS_MODEL
from sdk.utils.files import write_atomically

# The kinds of cache entry a deploy writes (folders under the cache root).
PROGRAM_KIND, FIRMWARE_KIND, REFERENCE_KIND = "program", "firmware", "reference"
CACHE_KINDS = (PROGRAM_KIND, FIRMWARE_KIND, REFERENCE_KIND)

# The AOT stack whose versions change what an export writes.
EXPORT_PACKAGES = ("torch", "torchao", "executorch", "tosa-tools", "ethos-u-vela", "numpy")
SDK_PACKAGE_DIR = Path(__file__).resolve().parents[1]

# What fills each kind of entry (module:function). The SDK code an entry depends on is read off
# these, not listed: a module the writer comes to import joins its key by itself.
PROGRAM_WRITER = "sdk.deploy.references:export_into"
REFERENCE_WRITER = "sdk.deploy.references:reference_into"
FIRMWARE_WRITER = "sdk.deploy.pipeline:build_into"
SCONSTRUCT = REPO_ROOT / "SConstruct"  # the build script SCons runs imports the SDK too


def _module_file(module: str) -> Path | None:
    """The file of a module of the SDK package (a package's __init__.py); None for others."""
    package, _, rest = module.partition(".")
    if package != SDK_PACKAGE_DIR.name:
        return None
    base = SDK_PACKAGE_DIR.joinpath(*rest.split(".")) if rest else SDK_PACKAGE_DIR
    candidates = [base.with_suffix(".py")] if rest else []
    return next((p for p in [*candidates, base / "__init__.py"] if p.is_file()), None)


def _imported(node: ast.AST, module: str) -> set[str]:
    """The modules the import statements anywhere below `node` may load (`from m import n`:
    m, and m.n when n is a submodule), relative ones resolved against `module`."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Import):
            found.update(alias.name for alias in n.names)
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                package = module.rsplit(".", n.level)[0]
                base = f"{package}.{base}" if base else package
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in n.names)
    return found


def _bound_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    return []


def _function_imports(tree: ast.Module, function: str, module: str) -> set[str]:
    """The modules a module-level function loads: its own imports, and those binding the names
    it reads, followed through the module-level definitions it reads (not the whole module's)."""
    defs: dict[str, list[ast.stmt]] = {}
    for stmt in tree.body:
        for name in _bound_names(stmt):
            defs.setdefault(name, []).append(stmt)
    if function not in defs:
        raise LookupError(f"{module} defines no {function}")
    todo, seen, found = list(defs[function]), set(), set()
    while todo:
        stmt = todo.pop()
        if id(stmt) in seen:
            continue
        seen.add(id(stmt))
        found |= _imported(stmt, module)
        if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
            todo += [d for name in names for d in defs.get(name, [])]
    return found


@functools.cache
def _parsed(path: Path, stamp: tuple[int, int]) -> ast.Module:
    """A source file's tree, parsed once per process and version (`stamp`: mtime, size)."""
    return ast.parse(path.read_text())


def _tree(path: Path) -> ast.Module:
    status = path.stat()
    return _parsed(path, (status.st_mtime_ns, status.st_size))


# What each SDK source file imports, by the hash of its text: parsing every module on every
# deploy costs a quarter second, reading them a few milliseconds. Kept beside the cache.
IMPORTS_INDEX = "sdk-imports.json"


@functools.cache
def _imports_index() -> dict[str, list[str]]:
    try:
        data = json.loads((default_root() / IMPORTS_INDEX).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _module_imports(path: Path, name: str) -> list[str]:
    """The modules `path` (module `name`) may load, from the index when its text is there."""
    text = path.read_bytes()
    key = f"{name}:{hashlib.sha256(text).hexdigest()}"
    index = _imports_index()
    if key not in index:
        index[key] = sorted(_imported(ast.parse(text), name))
        with contextlib.suppress(OSError, StorageError):  # an index is a speed-up, never a need
            write_atomically(default_root() / IMPORTS_INDEX, json.dumps(index))
    return index[key]


def _module_closure(modules: set[str]) -> set[Path]:
    """The files of the SDK modules among `modules` and of everything they import (a function's
    imports too), with the packages each one's import runs."""
    files, todo = set(), list(modules)
    while todo:
        path = _module_file(name := todo.pop())
        if path is None or path in files:
            continue
        files.add(path)
        if "." in name:
            todo.append(name.rpartition(".")[0])
        todo += _module_imports(path, name)
    return files


def sdk_code_hash(*writers: str, scripts: tuple[Path, ...] = ()) -> str:
    """The SDK code behind an entry: the writers' modules (module:function) and every SDK module
    the writers and `scripts` import, followed statically to the end."""
    files = set()
    for writer in writers:
        module, _, function = writer.partition(":")
        path = _module_file(module)
        if path is None:
            raise LookupError(f"{module}: no such module in {SDK_PACKAGE_DIR}")
        files |= {path} | _module_closure(_function_imports(_tree(path), function, module))
    for script in scripts:
        files |= _module_closure(_imported(_tree(script), script.stem))
    return hash_files(files, SDK_PACKAGE_DIR)


def package_versions(names: tuple[str, ...] = EXPORT_PACKAGES) -> dict[str, str]:
    versions = {"sdk": __version__}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def model_source_hash(model: ModelSpec) -> str:
    """The model's folder: every file beside the model (weights it loads, data) and every
    Python file below it (what it can import). Code installed elsewhere is in `packages`
    only when it is one of EXPORT_PACKAGES: a model importing other installed code it changes
    needs --no-cache (README)."""
    path = model.path
    folder = path.resolve().parent
    files = [p for p in folder.iterdir() if p.is_file()]
    files += [p for p in folder.rglob("*.py") if "__pycache__" not in p.parts]
    return hash_files([*files, path.resolve()], folder)


def vela_key(memory: VelaMemory, args: list[str]) -> dict:
    """A program key's `vela`: the memory configuration's figures and the extra Vela flags."""
    return {**memory.key(), "args": list(args)}


def program_key_parts(
    model: ModelSpec,
    inputs_file: Path | None,
    npu: str,
    quant: str,
    cpu_ops: list[str],
    quantization: dict | None = None,
    io: str = "float",
    vela: dict | None = None,
    input_layout: str = AS_MODEL,
    calibration: Path | None = None,
) -> dict:
    """`quantization`: QuantOptions.to_json() (None: the defaults); `io`: --io; `vela`: the
    Vela configuration (VelaMemory.key() and the extra flags; None: ExecuTorch's default);
    `input_layout`: --input-layout; `calibration`: --calibration (its content: another set of
    samples quantizes the model anew)."""
    from sdk.evaluation.dataset import content_digest
    from sdk.export.calibration import FLAG
    from sdk.export.quant_options import QuantOptions

    return {
        "model": {"file": model.path.name, "name": model.name},
        "model_source": model_source_hash(model),
        "inputs": hashlib.sha256(inputs_file.read_bytes()).hexdigest()
        if inputs_file
        else "the model's example inputs",
        "npu": npu,
        "quant": quant,
        "io": io,
        "input_layout": input_layout,
        "vela": vela or vela_key(VelaMemory(EXECUTORCH_DEFAULT), []),
        "cpu_ops": sorted(cpu_ops),
        "quantization": quantization or QuantOptions().to_json(),
        "calibration": content_digest(calibration, FLAG) if calibration else "the model's own",
        "packages": package_versions(),
        "sdk_export_code": sdk_code_hash(PROGRAM_WRITER),
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
        "sdk_reference_code": sdk_code_hash(REFERENCE_WRITER),
    }


@functools.cache
def toolchain_version(prefix: str) -> str:
    """The cross compiler's own version line (its build matters, not only its name)."""
    try:
        return version_line([f"{prefix}gcc", "--version"])
    except OSError:
        return "absent"


def firmware_sources_hash(board: Board) -> str:
    """Every file the firmware build reads but the SDK's code: runtime, kernels, the board (its
    folder and the shared folders it names), the build script."""
    files = [
        *(p for p in FIRMWARE_DIR.rglob("*") if p.is_file()),
        *(p for p in KERNELS_DIR.rglob("*") if p.is_file()),
        *(p for folder in board.source_dirs for p in folder.rglob("*") if p.is_file()),
        BOARDS_DIR / "board.schema.yaml",
        SCONSTRUCT,
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
        "sdk_build_code": sdk_code_hash(FIRMWARE_WRITER, scripts=(SCONSTRUCT,)),
    }
