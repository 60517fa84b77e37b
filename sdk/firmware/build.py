"""Building `executor_runner.elf` by calling SCons (the SConstruct at the repository root)."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from pathlib import Path

from sdk.environment.paths import BUILD_DIR, REPO_ROOT
from sdk.errors import BuildError, UsageError
from sdk.firmware.boards import check_exit_method, load_board
from sdk.firmware.buildgen import TEST_HOOKS

BUILD_TIMEOUT_S = 1800


def scons_command() -> list[str]:
    """SCons from the same environment as this Python (the venv's script, else the module)."""
    script = Path(sys.executable).parent / "scons"
    if script.is_file():
        return [str(script)]
    found = shutil.which("scons")
    return [found] if found else [sys.executable, "-m", "SCons"]


def build_command(
    board: str,
    pte: Path | None,
    out_elf: Path,
    embed: bool = False,
    *,
    npu: str | None = None,
    test_hook: str = "none",
    build_dir: Path | None = None,
    jobs: int = 2,
    kernel_mve: bool = True,
    exit: str | None = None,
    registrations: Path | None = None,
) -> list[str]:
    """The SCons command line that builds this firmware (add --question to test up-to-date)."""
    command = [
        *scons_command(),
        "-C",
        str(REPO_ROOT),
        f"-j{jobs}",
        f"board={board}",
        f"build_dir={Path(build_dir).resolve() if build_dir else BUILD_DIR / board}",
        f"out={Path(out_elf).resolve()}",
        f"embed={int(embed)}",
        f"test_hook={test_hook}",
        f"kernel_mve={int(kernel_mve)}",
    ]
    if pte is not None:
        command.append(f"pte={Path(pte).resolve()}")
    if registrations is not None:
        command.append(f"registrations={Path(registrations).resolve()}")
    if npu:
        command.append(f"npu={npu}")
    if exit:
        command.append(f"exit={exit}")
    return command


def build_firmware(
    board: str,
    pte: Path | None,
    out_elf: Path,
    embed: bool = False,
    *,
    npu: str | None = None,
    test_hook: str = "none",
    build_dir: Path | None = None,
    jobs: int = 2,
    kernel_mve: bool = True,
    exit: str | None = None,
    registrations: Path | None = None,
) -> Path:
    """Build the firmware for `pte` (every kernel when None) and copy the ELF to `out_elf`.

    `registrations`: the kernel registrations the caller already made for its program (a
    folder sdk.firmware.kernelgen.write_registrations filled), used as they are: SCons does not
    read the program again (sdk deploy selects the kernels once).

    `kernel_mve=False` compiles the kernels without Helium (their portable scalar path, in a
    variant folder of its own), to compare against. `exit` is how the firmware ends a run:
    "semihosting" (QEMU, the FVP) or "park" (a board without a debugger); None takes the
    board's `runtime.exit`.

    Builds are incremental and serialised per build folder (a lock file), so concurrent
    callers cannot corrupt each other's SCons database. The full log goes next to `out_elf`;
    a failure raises BuildError naming the first error and the log.
    """
    spec = load_board(board)  # an unknown board is a UsageError before SCons runs
    if test_hook not in TEST_HOOKS:
        raise UsageError(f"unknown test hook {test_hook!r}; choose one of {', '.join(TEST_HOOKS)}")
    if exit is not None:
        check_exit_method(exit)
    if pte is not None and not Path(pte).is_file():
        raise UsageError(f"{pte}: no such program file")
    out_elf = Path(out_elf).resolve()
    out_elf.parent.mkdir(parents=True, exist_ok=True)
    build_dir = Path(build_dir).resolve() if build_dir else BUILD_DIR / spec.name
    build_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_elf.with_name(out_elf.stem + ".build.log")
    command = build_command(
        spec.name,
        pte,
        out_elf,
        embed,
        npu=npu,
        test_hook=test_hook,
        build_dir=build_dir,
        jobs=jobs,
        kernel_mve=kernel_mve,
        exit=exit,
        registrations=registrations,
    )
    with open(build_dir / ".build.lock", "w") as lock, open(log_path, "w") as log:
        fcntl.flock(lock, fcntl.LOCK_EX)
        log.write(" ".join(command) + "\n")
        log.flush()
        try:
            result = subprocess.run(
                command, stdout=log, stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S
            )
        except subprocess.TimeoutExpired as exc:
            raise BuildError(
                f"firmware build for {spec.name} timed out after {BUILD_TIMEOUT_S} s",
                log_path=log_path,
            ) from exc
    if result.returncode != 0 or not out_elf.is_file():
        raise BuildError(
            f"firmware build for {spec.name} failed: {first_error(log_path)}", log_path=log_path
        )
    return out_elf


def first_error(log_path: Path) -> str:
    """The most telling line of a failed build log."""
    lines = log_path.read_text(errors="replace").splitlines()
    for marker in ("scons: *** error:", "error:", "scons: ***", "undefined reference"):
        for line in lines:
            if marker in line:
                return line.split("scons: *** ", 1)[-1].strip()
    return lines[-1].strip() if lines else "no output"
