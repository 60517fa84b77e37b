"""`sdk doctor` as Python: is this machine ready to build and run the default deploy?

    diagnosis = diagnose()          # the default board
    diagnosis.ok, diagnosis.to_json()

One `Check` per thing looked at: the pinned Python packages (read from the installed
distribution, never restated), the cross toolchain with newlib and libstdc++, SCons and
flatc, each run target, the serial ports, the cache. A check is `needed` when the default
target (`auto`: the FVP when available, else QEMU with the virtual NPU; on a board no QEMU
emulates, the FVP) cannot run without it; the rest (the FVP, a board, pyOCD) is optional and
never fails the diagnosis. A target the board cannot have says why (board.yaml no_targets).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from sdk.cache import CACHE_ENV, Cache, CacheInfo
from sdk.environment.paths import REPO_ROOT
from sdk.environment.tools import tool_output, version_line
from sdk.errors import BuildError
from sdk.firmware.boards import DEFAULT_BOARD, Board, load_board
from sdk.targets.base import RunOptions
from sdk.targets.serial import SeenPort, seen_ports
from sdk.utils.units import human_bytes

SCHEMA = "sdk.environment.doctor/1"
OK, MISSING, WRONG = "ok", "MISSING", "WRONG"
# The Debian packages the SDK uses (bootstrap.sh installs them); doctor reports their versions.
APT_PACKAGES_FILE = REPO_ROOT / "scripts" / "apt-packages.txt"
# Those a failed check's fix installs.
APT_GCC = "gcc-arm-none-eabi"
APT_NEWLIB = "libnewlib-arm-none-eabi"
APT_LIBSTDCXX = "libstdc++-arm-none-eabi-newlib"
APT_FLATBUFFERS = "flatbuffers-compiler libflatbuffers-dev"


@dataclass(frozen=True)
class Check:
    status: str  # OK, MISSING or WRONG
    what: str
    found: str
    fix: str = ""  # the command (or step) that repairs it
    needed: bool = True  # by the default target; False: optional, reported only

    @property
    def fails(self) -> bool:
        return self.needed and self.status != OK


@dataclass(frozen=True)
class Diagnosis:
    board: str
    default_target: str  # what `auto` picks here
    checks: list[Check]
    cache: CacheInfo
    ports: list[SeenPort]
    debian_packages: dict[str, str | None]  # installed version; None: not installed

    @property
    def ok(self) -> bool:
        return not any(check.fails for check in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "ok": self.ok,
            "board": self.board,
            "default_target": self.default_target,
            "checks": [asdict(check) for check in self.checks],
            "serial_ports": [asdict(port) for port in self.ports],
            "debian_packages": self.debian_packages,
            "cache": {
                "root": str(self.cache.root),
                "bytes": self.cache.bytes,
                "kinds": [asdict(kind) for kind in self.cache.kinds],
            },
        }


def package_check(requirement: str, installed: str | None, extra: str | None = None) -> Check:
    """One pin ("torch==2.13.0") against the installed version (None: not installed); `extra`
    names the optional extra the pin belongs to (then it is not needed)."""
    from packaging.requirements import Requirement
    from packaging.version import InvalidVersion

    from sdk.environment.pins import DISTRIBUTION, Pin, pip_install

    pin = Pin(Requirement(requirement), extra)
    what = pin.text + (f" (optional: {DISTRIBUTION}[{extra}])" if extra else "")
    fix = pip_install([pin])
    if installed is None:
        return Check(MISSING, what, "not installed", fix, needed=extra is None)
    try:
        good = pin.requirement.specifier.contains(installed, prereleases=True)
    except InvalidVersion:
        good = False
    status = OK if good else WRONG
    return Check(status, what, installed, "" if good else fix, needed=extra is None)


def installed_version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def package_checks() -> list[Check]:
    """Every pin of the installed SDK against what is installed."""
    try:
        from sdk.environment.pins import DISTRIBUTION, pins
    except ImportError as exc:  # packaging itself is missing: nothing can be compared
        return [Check(MISSING, "packaging", str(exc), pip_fix("packaging"))]
    try:
        found = pins()
    except metadata.PackageNotFoundError:
        fix = f"{shlex.quote(sys.executable)} -m pip install -e {shlex.quote(str(REPO_ROOT))}"
        return [Check(MISSING, f"the {DISTRIBUTION} distribution", "not installed", fix)]
    return [
        package_check(pin.text, installed_version(pin.requirement.name), pin.extra) for pin in found
    ]


def pip_fix(name: str) -> str:
    """pip install of the SDK's pin for distribution `name` (bare when pins cannot be read)."""
    try:
        from sdk.environment.pins import pins, pip_install

        found = [pin for pin in pins() if pin.name == name]
    except (ImportError, metadata.PackageNotFoundError):
        found = []
    return pip_install(found) if found else f"{shlex.quote(sys.executable)} -m pip install {name}"


def library_check(gcc: str, board: Board, what: str, files: list[str], apt: str) -> Check:
    """Files the link needs, looked up as gcc does for the board's multilib (its CPU flags)."""
    flags = " ".join(board.cpu_flags)
    missing = []
    for name in files:
        try:
            found = tool_output([gcc, *board.cpu_flags, f"-print-file-name={name}"]).strip()
        except OSError:
            found = name
        if not (Path(found).is_absolute() and Path(found).is_file()):
            missing.append(name)
    if missing:
        found = f"no {', '.join(missing)} for {flags}"
        return Check(MISSING, what, found, f"apt-get install {apt}")
    return Check(OK, what, f"found for {flags}")


def toolchain_checks(board: Board) -> list[Check]:
    """The board's cross gcc (board.yaml `toolchain.prefix`), newlib (with the board's specs)
    and libstdc++."""
    gcc = f"{board.toolchain_prefix}gcc"
    newlib = ["libc.a", *([board.specs] if board.specs else [])]
    libraries = [
        (f"newlib ({', '.join(newlib)})", newlib, APT_NEWLIB),
        ("libstdc++ (libstdc++.a)", ["libstdc++.a"], APT_LIBSTDCXX),
    ]
    path = shutil.which(gcc)
    if path is None:
        checks = [Check(MISSING, gcc, "not found on PATH", f"apt-get install {APT_GCC}")]
        for what, _, apt in libraries:
            checks.append(Check(MISSING, what, f"not checked: no {gcc}", f"apt-get install {apt}"))
        return checks
    try:
        checks = [Check(OK, gcc, f"{path} ({version_line([path, '--version'])})")]
    except OSError as exc:
        return [Check(WRONG, gcc, f"{path} does not run: {exc}", f"apt-get install {APT_GCC}")]
    return checks + [library_check(path, board, *library) for library in libraries]


def apt_packages(listing: Path = APT_PACKAGES_FILE) -> list[str]:
    """The names in scripts/apt-packages.txt (whitespace-separated, `#` comments)."""
    lines = listing.read_text().splitlines()
    return [name for line in lines for name in line.split("#")[0].split()]


def debian_versions(packages: list[str]) -> dict[str, str | None]:
    """Each package's installed version, as dpkg has it (None: not installed, or no dpkg):
    what was built with is part of a bug report."""
    versions: dict[str, str | None] = {}
    for name in packages:
        try:
            versions[name] = tool_output(["dpkg-query", "-W", "-f", "${Version}", name]).strip()
        except OSError:
            versions[name] = None
        versions[name] = versions[name] or None  # known to dpkg, but removed: no version
    return versions


def scons_check() -> Check:
    """The SCons the firmware build runs (sdk.firmware.build.scons_command)."""
    from sdk.firmware.build import scons_command

    command = scons_command()
    try:
        text = tool_output([*command, "--version"])
    except OSError as exc:
        return Check(MISSING, "scons", str(exc), pip_fix("scons"))
    match = re.search(r"SCons: v(\d+(?:\.\d+)*)", text)
    version = f"SCons {match.group(1)}" if match else "version not reported"
    return Check(OK, "scons", f"{' '.join(command)} ({version})")


def flatc_check() -> Check:
    """The flatc SConstruct uses by default, and that it matches the flatbuffers headers."""
    from sdk.firmware.buildgen import FLATBUFFERS_ROOT, FLATC, check_flatc

    fix = f"apt-get install {APT_FLATBUFFERS}"
    if shutil.which(FLATC) is None:
        return Check(MISSING, "flatc", f"{FLATC} not found", fix)
    try:
        version = check_flatc(FLATC, Path(FLATBUFFERS_ROOT))
    except (BuildError, OSError) as exc:
        return Check(WRONG, "flatc", str(exc), fix)
    return Check(OK, "flatc", f"{FLATC} {version}, matching the headers in {FLATBUFFERS_ROOT}")


def target_checks(board: Board, options: RunOptions | None) -> tuple[list[Check], str]:
    """Each target's availability, and what `auto` picks here. Needed: the host reference
    (export, the virtual NPU) and the target `auto` picks (its fallback when none is there)
    when the set-up installs it (QEMU; an FVP is the user's)."""
    from sdk.targets.run import REFERENCE_TARGET, SETUP_TARGETS, auto_target, available_targets

    found = available_targets(board, options)
    default = auto_target(found, board)
    checks = []
    for name, availability in found.items():
        used = name in (default, REFERENCE_TARGET)
        needed = name == REFERENCE_TARGET or (name == default and name in SETUP_TARGETS)
        checks.append(
            Check(
                OK if availability.available else MISSING,
                f"target {name}" + ("" if used else " (optional)"),
                availability.detail,
                "" if availability.available else availability.install,
                needed=needed,
            )
        )
    return checks, default


def ports_check(ports: list[SeenPort]) -> Check:
    if not ports:
        fix = "connect the board over USB (for --target serial)"
        return Check(MISSING, "serial ports (optional)", "none seen", fix, needed=False)
    seen = "; ".join(f"{p.device} ({describe_port(p)})" for p in ports)
    return Check(OK, "serial ports (optional)", seen, needed=False)


def describe_port(port: SeenPort) -> str:
    serial = f", serial {port.serial_number}" if port.serial_number else ""
    return f"{port.description}{serial}"


def writable(folder: Path) -> bool:
    """`folder` can be written, or created under its nearest existing parent."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK)
    return False


def cache_check(info: CacheInfo) -> Check:
    kinds = ", ".join(f"{k.entries} {k.kind}" for k in info.kinds) or "empty"
    partial = sum(k.partial for k in info.kinds)
    found = f"{info.root}: {kinds}, {human_bytes(info.bytes)}"
    if partial:
        found += f", {partial} interrupted write(s)"
    what = "cache (optional)"
    if not writable(info.root):
        fix = f"set ${CACHE_ENV} to a writable folder (or deploy with --no-cache)"
        return Check(WRONG, what, f"{found}; not writable", fix, needed=False)
    return Check(OK, what, found, "sdk cache clean" if partial else "", needed=False)


def diagnose(board_name: str = DEFAULT_BOARD, options: RunOptions | None = None) -> Diagnosis:
    """Every check, for `board_name` (its toolchain, its targets)."""
    board = load_board(board_name)
    targets, default = target_checks(board, options)
    ports = seen_ports()
    info = Cache().info()
    checks = [
        *package_checks(),
        *toolchain_checks(board),
        scons_check(),
        flatc_check(),
        *targets,
        ports_check(ports),
        cache_check(info),
    ]
    return Diagnosis(board.name, default, checks, info, ports, debian_versions(apt_packages()))
