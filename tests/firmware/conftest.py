"""Fixtures for the firmware tests: small ExecuTorch programs, the host build, the oracle.

The programs are exported with ExecuTorch here (CPU-only ones without a partitioner, one fully
delegated to the Ethos-U), once per session. ExecuTorch's Python runtime is the oracle.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fwprograms import export_cpu, export_ethos_u, make_modules

from sdk.firmware.build import scons_command
from sdk.paths import REPO_ROOT

HOST_BUILD_DIR = REPO_ROOT / "build" / "host"


@pytest.fixture(scope="session")
def programs(tmp_path_factory) -> dict[str, Path]:
    """{name: .pte path}: id, add, quant_mix, bmm, cumsum (no kernel), delegate (Ethos-U)."""
    folder = tmp_path_factory.mktemp("programs")
    made = {}
    for name, (module, example) in make_modules().items():
        export = export_ethos_u if name == "delegate" else export_cpu
        made[name] = export(module.eval(), example, folder / f"{name}.pte")
    return made


@pytest.fixture(scope="session")
def host_build() -> Path:
    """`scons host=1`: unit tests, host runner, fuzz target (ASan + UBSan)."""
    result = subprocess.run(
        [*scons_command(), "-C", str(REPO_ROOT), "-j2", "host=1"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return HOST_BUILD_DIR
