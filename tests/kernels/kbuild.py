"""Building the kernels outside the firmware: the host harness (g++, sanitizers), the
bare-metal harness for QEMU's mps3-an547 (Cortex-M55), and running things on QEMU.

Registrations come from kernels/kernels.yaml through sdk.kernelgen, the same code the
firmware build uses, so a malformed kernels.yaml fails here too. Objects are cached under
build/kernel_tests/ by a hash of their inputs (sources, headers, flags).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sdk.kernelgen import (
    KernelSpec,
    SelectedKernel,
    load_kernel_specs,
    select_all_kernels,
    write_registrations,
)

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "kernels"
HARNESS = Path(__file__).resolve().parent / "harness"
TARGET = HARNESS / "target"
BUILD = REPO / "build" / "kernel_tests"
INCLUDES = [KERNELS / "include", REPO / "firmware" / "runtime" / "include"]

HOST_CXX = "g++"
HOST_FLAGS = [
    "-std=c++17", "-O1", "-g", "-Wall", "-Wextra", "-Werror",
    "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
]  # fmt: skip

ARM_CXX = "arm-none-eabi-g++"
M55_FLAGS = [
    "-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", "-O3", "-std=c++17",
    "-fno-exceptions", "-fno-rtti", "-fno-threadsafe-statics", "-ffunction-sections",
    "-fdata-sections", "-Wall", "-Wextra", "-Werror",
]  # fmt: skip

QEMU = "qemu-system-arm"


class BuildError(RuntimeError):
    """A compiler or linker failed; the message holds its command and output."""


def _headers() -> list[Path]:
    return sorted(p for d in [*INCLUDES, HARNESS] for p in d.rglob("*.h"))


def _digest(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()[:16]


def _run(cmd: Sequence[str | Path], timeout: float = 600) -> None:
    proc = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise BuildError(f"{' '.join(map(str, cmd))}\n{proc.stdout}{proc.stderr}")


def compile_objects(
    cxx: str, flags: Sequence[str], sources: Sequence[Path], outdir: Path,
    extra_includes: Sequence[Path] = (),
) -> list[Path]:  # fmt: skip
    """Compile each source (2 at a time); reuse an object whose inputs did not change."""
    outdir.mkdir(parents=True, exist_ok=True)
    includes = [f"-I{d}" for d in [*extra_includes, *INCLUDES, HARNESS]]
    headers = _headers() + sorted(p for d in extra_includes for p in Path(d).glob("*.h"))
    common = [h.read_bytes() for h in headers] + [" ".join([cxx, *flags, *includes]).encode()]

    def one(src: Path) -> Path:
        obj = outdir / f"{src.stem}-{_digest([*common, src.read_bytes()])}.o"
        if not obj.exists():
            tmp = obj.with_suffix(".tmp.o")
            _run([cxx, *flags, *includes, "-c", src, "-o", tmp])
            tmp.replace(obj)
        return obj

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(one, sources))


def registry(outdir: Path, selected: list[SelectedKernel] | None = None) -> list[Path]:
    """Generate kernel_registry.cpp (+ kernel_select.h when `selected` is given) into outdir;
    return the kernel sources to compile. Without `selected`: every kernel, no select header
    (all dtypes compiled, as on the host)."""
    specs = load_kernel_specs()
    kernels = selected if selected is not None else select_all_kernels(specs)
    sources = write_registrations(kernels, outdir)
    if selected is None:
        (outdir / "kernel_select.h").unlink(missing_ok=True)
    return sources


def kernel_specs() -> dict[str, KernelSpec]:
    return load_kernel_specs()


def build_host_harness(name: str = "host") -> Path:
    """The host harness with every kernel, all dtypes, under ASan + UBSan."""
    outdir = BUILD / name
    gen = outdir / "gen"
    sources = registry(gen)
    srcs = [*sources, gen / "kernel_registry.cpp", *sorted(HARNESS.glob("*.cpp"))]
    objs = compile_objects(HOST_CXX, HOST_FLAGS, srcs, outdir / "obj")
    exe = outdir / "kernel_harness"
    _run([HOST_CXX, *HOST_FLAGS, *objs, "-o", exe])
    return exe


def build_host_selective(selected: list[SelectedKernel], name: str) -> Path:
    """A host harness built like a firmware for one program: only `selected` kernels, each
    with only its selected dtypes (kernel_select.h in the include path)."""
    outdir = BUILD / name
    gen = outdir / "gen"
    shutil.rmtree(gen, ignore_errors=True)
    sources = registry(gen, selected)
    srcs = [*sources, gen / "kernel_registry.cpp", *sorted(HARNESS.glob("*.cpp"))]
    objs = compile_objects(HOST_CXX, HOST_FLAGS, srcs, outdir / "obj", extra_includes=[gen])
    exe = outdir / "kernel_harness"
    _run([HOST_CXX, *HOST_FLAGS, *objs, "-o", exe])
    return exe


def cross_compile(
    sources: Sequence[Path], name: str, extra_includes: Sequence[Path] = ()
) -> list[Path]:
    return compile_objects(ARM_CXX, M55_FLAGS, sources, BUILD / name, extra_includes)


def build_target(name: str, main_sources: Sequence[Path], flags: Sequence[str] = ()) -> Path:
    """A bare-metal ELF for mps3-an547: every kernel + the case runner + `main_sources`."""
    outdir = BUILD / name
    gen = outdir / "gen"
    sources = registry(gen)
    srcs = [
        *sources, gen / "kernel_registry.cpp", HARNESS / "case_runner.cpp",
        HARNESS / "rt_support.cpp", *main_sources,
    ]  # fmt: skip
    cflags = [*M55_FLAGS, *flags]
    objs = compile_objects(ARM_CXX, cflags, srcs, outdir / "obj", extra_includes=[TARGET])
    startup = compile_objects(ARM_CXX, cflags, [TARGET / "startup.cpp"], outdir / "obj")
    elf = outdir / f"{name}.elf"
    _run([
        ARM_CXX, *cflags, "-nostartfiles", "--specs=nano.specs", "--specs=nosys.specs",
        f"-T{TARGET / 'an547.ld'}", "-Wl,--gc-sections", f"-Wl,-Map={outdir / 'map.txt'}",
        *startup, *objs, "-lm", "-o", elf,
    ])  # fmt: skip
    return elf


def run_qemu(
    elf: Path, args: str, cwd: Path, timeout: float = 600, icount: bool = False
) -> subprocess.CompletedProcess[str]:
    """Boot `elf` on mps3-an547 with semihosting (files relative to `cwd`); `args` is the
    command line the firmware reads with SYS_GET_CMDLINE."""
    cmd = [
        QEMU, "-M", "mps3-an547", "-nographic", "-monitor", "none", "-serial", "stdio",
        "-semihosting-config", f"enable=on,target=native,arg={elf.name} {args}",
        "-kernel", str(elf),
    ]  # fmt: skip
    if icount:
        cmd[1:1] = ["-icount", "shift=0"]
    return subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
