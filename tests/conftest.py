"""Shared fixtures: real exports of the regression models, made once per session; the host
build of the firmware (`scons host=1`) and a way to run programs through its host runner."""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
HOST_BUILD_DIR = REPO / "build" / "host"

for _name in ("torchao", "torch.utils._pytree"):
    logging.getLogger(_name).setLevel(logging.ERROR)


@dataclass
class ExportCase:
    model: str
    quant: str
    fixed: bool
    quantized: object  # sdk.export.pipeline.QuantizedModel
    result: object  # sdk.export.pipeline.ExportResult


def scope_of(nodeid: str) -> str:
    """The xdist scope of a test: its xdist_group (`@group` suffix, --dist loadgroup: the files
    marked tests.support.markers.SHARED_EXPORTS share one), else its file."""
    if nodeid.rfind("@") > nodeid.rfind("]"):
        return nodeid.rsplit("@", 1)[1]
    return nodeid.split("::", 1)[0]


SWEEP_FRACTION = 0.1  # of a sweep's cases past its first, per CI run


def pytest_addoption(parser) -> None:
    group = parser.getgroup("sweeps", "sampled parameter sweeps (tests marked `sweep`)")
    group.addoption(
        "--sweep-fraction", type=float, default=SWEEP_FRACTION,
        help=f"share of each sweep's cases past its first to run (default {SWEEP_FRACTION}; "
        "1 runs every case)",
    )  # fmt: skip
    group.addoption(
        "--sweep-seed", type=int, default=None,
        help="which cases (default: today's UTC date as YYYYMMDD, so each day runs others)",
    )  # fmt: skip


def pytest_configure(config) -> None:
    """The session's own SDK cache (SDK_CACHE_DIR; the xdist workers and the CLI subprocesses
    inherit it): every run starts cold, as on CI, never from the programs, references and
    firmware earlier runs left in ~/.cache/sdk, and leaves nothing there."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        path = tempfile.mkdtemp(prefix="sdk-test-cache-")
        os.environ["SDK_CACHE_DIR"] = path
        config.add_cleanup(lambda: shutil.rmtree(path, ignore_errors=True))


def sweep_seed(config) -> int:
    seed = config.getoption("--sweep-seed")
    return int(time.strftime("%Y%m%d", time.gmtime())) if seed is None else seed


def pytest_report_header(config) -> str:
    fraction, seed = config.getoption("--sweep-fraction"), sweep_seed(config)
    return (
        f"sweeps: each one's first case and {fraction:.0%} of the rest, seed {seed} "
        f"(--sweep-seed {seed} repeats this run; --sweep-fraction 1 runs every case)"
    )


def sampled(seed: int, nodeid: str, fraction: float) -> bool:
    """Whether a sweep case runs: a hash of the seed and the test's id (the same on every
    xdist worker and in any collection order), under `fraction`."""
    digest = hashlib.sha256(f"{seed}:{nodeid}".encode()).digest()
    return int.from_bytes(digest[:4], "little") < fraction * 2**32


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Sweeps (the `sweep` marker: many cases of one test function, such as the kernels'
    dtype x shape grids) run their first case and a seeded sample of the rest: a different
    sample each day, every case reachable with --sweep-fraction 1 or its seed."""
    if config.getoption("loadgroup", False):
        for item in items:
            _suffix_xdist_group(item)
    fraction, seed = config.getoption("--sweep-fraction"), sweep_seed(config)
    if fraction >= 1:
        return
    seen: set[tuple] = set()
    kept, dropped = [], []
    for item in items:
        if item.get_closest_marker("sweep") is None:
            kept.append(item)
            continue
        function = (item.path, getattr(item, "originalname", item.name))
        first = function not in seen
        seen.add(function)
        (kept if first or sampled(seed, item.nodeid, fraction) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _suffix_xdist_group(item) -> None:
    """`@group` after a grouped test's nodeid, as pytest-xdist's loadgroup writes it on the
    worker for the scheduler (scope_of). xdist writes it into `item._nodeid`, which pytest 9.2's
    structured node IDs no longer read (pytest-dev/pytest-xdist#1386): nothing was grouped, and
    the example exports were made once per worker. Written here when xdist's did not take."""
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    if names and scope_of(item.nodeid) == item.nodeid.split("::", 1)[0]:
        from _pytest.nodeid import NodeId  # pytest 9.2's (older ones took xdist's suffix)

        item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(sorted(names))}")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """How `pytest -n 2 --dist loadgroup` (scripts/test.sh) shares the suite: by scope_of, so a
    file's module and session fixtures are made on one worker; a worker takes the next scope
    when it runs dry. The host and firmware builds are shared on disk (a lock, made once)."""
    from xdist.scheduler import LoadScopeScheduling

    class ScopeScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return ScopeScheduling(config, log)


@pytest.fixture(scope="session")
def quantized_model():
    """quantized_model(model, quant, options=None) -> sdk.export.pipeline.QuantizedModel, once
    per session.

    `model` names an example (examples/<model>.py) or is a model file's path (`file.py` or
    `file.py:Name`, as `sdk.export.model_loader` takes it); `options` a QuantOptions."""
    from sdk.ethosu.config import NpuConfig, QuantMode
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import quantize

    cache: dict[tuple[str, str, str], object] = {}

    def get(model: str, quant: str, options=None) -> object:
        key = (model, quant, repr(options and options.to_json()))
        if key not in cache:
            file = model.split(":")[0]
            spec = model if file.endswith(".py") else str(EXAMPLES / f"{model}.py")
            cache[key] = quantize(
                load_model(spec), NpuConfig.U55_128, QuantMode(quant), options=options
            )
        return cache[key]

    return get


@pytest.fixture(scope="session")
def export_case(quantized_model, tmp_path_factory):
    """export_case(model, quant, fixed, cpu_ops) -> ExportCase, each made once per session
    (`model` as quantized_model takes it)."""
    from sdk.export.pipeline import lower

    cache: dict[tuple, ExportCase] = {}

    def get(model: str, quant: str, fixed: bool, cpu_ops: list[str] | None) -> ExportCase:
        key = (model, quant, fixed, tuple(cpu_ops or ()))
        if key not in cache:
            quantized = quantized_model(model, quant)
            file, _, name = model.partition(":")
            stem = Path(file).stem + (f"_{name}" if name else "")
            outdir = tmp_path_factory.mktemp(f"{stem}_{quant}_{'fixed' if fixed else 'stock'}")
            result = lower(quantized, outdir, cpu_ops=cpu_ops, fix_boundaries=fixed)
            cache[key] = ExportCase(model, quant, fixed, quantized, result)
        return cache[key]

    return get


@pytest.fixture(scope="session")
def stock_program(quantized_model, tmp_path_factory):
    """stock_program(model, quant) -> (program.pte, QuantizedModel): the session's quantized model
    lowered by ExecuTorch's own EthosUPartitioner alone, no SDK code, as users run it. The .pte
    lies alone in its folder: no saved TOSA, no report."""
    from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
    from executorch.exir import to_edge_transform_and_lower

    from sdk.ethosu.config import NpuConfig

    cache: dict[tuple[str, str], tuple[Path, object]] = {}

    def get(model: str, quant: str) -> tuple[Path, object]:
        if (model, quant) not in cache:
            quantized = quantized_model(model, quant)
            partitioner = EthosUPartitioner(EthosUCompileSpec(NpuConfig.U55_128.value))
            edge = to_edge_transform_and_lower(quantized.exported, partitioner=[partitioner])
            program = tmp_path_factory.mktemp("stock") / "model.pte"
            program.write_bytes(edge.to_executorch().buffer)
            cache[(model, quant)] = program, quantized
        return cache[(model, quant)]

    return get


@pytest.fixture(scope="session")
def every_kernel_elf(tmp_path_factory) -> Path:
    """The corstone300 firmware with every kernel (all dtypes, Helium on), built once."""
    from sdk.firmware.build import build_firmware

    return build_firmware("corstone300", None, tmp_path_factory.mktemp("fw") / "every_kernel.elf")


@pytest.fixture(scope="session")
def host_build() -> Path:
    """`scons host=1`: unit tests, host runner, fuzz target (ASan + UBSan)."""
    import fcntl

    from sdk.firmware.build import scons_command

    HOST_BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with open(HOST_BUILD_DIR.parent / ".host-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one SCons at a time in build/ (pytest -n workers)
        result = subprocess.run(
            [*scons_command(), "-C", str(REPO), "-j2", "host=1"],
            capture_output=True,
            text=True,
            timeout=1800,
        )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return HOST_BUILD_DIR


@dataclass
class HostRun:
    """One run on build/host/host_link (the link server, ASan + UBSan) over a link session:
    what the firmware reported, and what its sanitizers said."""

    record: object  # sdk.link.record.FirmwareRecord
    stderr: str  # the sanitizers report here

    def outputs(self) -> list[np.ndarray]:
        """The outputs of a passed run; otherwise an AssertionError with the reason."""
        from sdk.errors import TargetError
        from sdk.link.record import check_record

        try:
            return check_record(self.record)
        except TargetError as exc:
            raise AssertionError(f"host link: {exc}\n{self.stderr[-3000:]}") from None

    def error(self) -> tuple[str, str]:
        """(name, reason) of a run the runtime refused."""
        result = self.record.result
        assert result is not None and not result.ok, result
        return result.name, result.reason


def planned_bytes(program: bytes) -> int | None:
    """The planned memory a .pte asks for (None for what is not a readable .pte)."""
    from sdk.errors import ProgramError
    from sdk.program.pte import load_program

    try:
        sizes = load_program(program).plan.non_const_buffer_sizes
    except ProgramError:
        return None
    return sum(-(-size // 16) * 16 for size in sizes[1:])


@pytest.fixture(scope="session")
def host_run(host_build: Path, tmp_path_factory):
    """host_run(program, inputs, *options) -> HostRun: `program` a .pte path or its bytes,
    `inputs` arrays (sent as they are: dtype and shape are the firmware's to check), `options`
    host_link's. One host_link process per run, driven over the link as a board is; after a
    refused run, what the outputs hold is read too (HostRun.record.outputs).

    The planned arena is exactly what a .pte plans (unless `options` say otherwise): ASan then
    sees its end, and a run takes a fifth of the time it takes with the default 64 MiB."""
    from sdk.link.session import Timeouts
    from sdk.program.pte import scalar_type_of
    from tests.support.hostlink import serving, session_on

    workdir = tmp_path_factory.mktemp("host_run")
    counter = itertools.count()

    def run(program: Path | bytes, inputs: list[np.ndarray], *options: str) -> HostRun:
        n = next(counter)
        data = program if isinstance(program, bytes) else Path(program).read_bytes()
        planned = None if "--planned-bytes" in options else planned_bytes(data)
        if planned is not None:
            options = ("--planned-bytes", str(max(planned, 16)), *options)
        with serving(host_build, *options) as (process, url):
            with session_on(url, workdir / f"link{n}.log", Timeouts(run=300.0)) as session:
                record = session.run_program(
                    data,
                    inputs,
                    [int(scalar_type_of(np.asarray(a).dtype)) for a in inputs],
                    outputs_after_failure=True,
                )
            process.wait(timeout=60)  # the peer closed: host_link ends
            assert process.stderr is not None
            return HostRun(record, process.stderr.read())

    return run


@pytest.fixture
def fvp_standin(tmp_path: Path, monkeypatch) -> Path:
    """$SDK_FVP pointing at the FVP stand-in (an executable named as the FVP)."""
    script = tmp_path / "bin" / "FVP_Corstone_SSE-300_Ethos-U55"
    script.parent.mkdir()
    standin = REPO / "tests" / "support" / "fvp_standin.py"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} {standin} "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("SDK_FVP", str(script))
    return script


@pytest.fixture
def fvp320_standin(tmp_path: Path, monkeypatch, host_build: Path) -> Path:
    """$SDK_FVP pointing at the stand-in for FVP_Corstone_SSE-320 (no QEMU runs its M85: the
    stand-in checks the ELF and serves the link from build/host/host_link)."""
    script = tmp_path / "bin" / "FVP_Corstone_SSE-320"
    script.parent.mkdir()
    standin = REPO / "tests" / "support" / "fvp_standin.py"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} {standin} --as corstone320 "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("SDK_FVP", str(script))
    return script
