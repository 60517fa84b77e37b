"""Fixtures for the firmware tests: small ExecuTorch programs, the oracle (the host build is
in tests/conftest.py, shared with the kernel tests).

The programs are exported with ExecuTorch here (CPU-only ones without a partitioner, one fully
delegated to the Ethos-U), once per session. ExecuTorch's Python runtime is the oracle.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fwprograms import export_cpu, export_ethos_u, make_modules


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
def corstone320_firmware(programs, tmp_path_factory) -> Path:
    """The Corstone-320 (Cortex-M85 + Ethos-U85) firmware for the `add` program, built once
    per session (build/corstone320)."""
    from sdk.firmware.build import build_firmware

    out = tmp_path_factory.mktemp("fw320") / "executor_runner.elf"
    return build_firmware("corstone320", programs["add"], out)
