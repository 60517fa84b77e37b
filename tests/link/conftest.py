"""Fixtures for the host-link tests: small CPU programs of many dtypes (exported once), the
firmware with every kernel (built once, tests/conftest.py), QEMU serving the link."""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path

import pytest

from sdk.firmware.boards import load_board
from sdk.link.session import LinkSession, Timeouts
from sdk.link.transport import open_port
from sdk.targets.emulator import LinkProcess
from sdk.targets.qemu import QemuDriver
from sdk.targets.run import make_target
from tests.support.linkprograms import BOARD, export_cpu, link_modules


@pytest.fixture(scope="session")
def link_programs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("link_programs")
    return {
        name: export_cpu(module.eval(), example, folder / f"{name}.pte")
        for name, (module, example) in link_modules().items()
    }


@pytest.fixture(scope="session")
def qemu_target() -> QemuDriver:
    """QEMU as the board's power driver: its command lines."""
    return make_target("qemu", load_board(BOARD)).strategy.power


@pytest.fixture
def qemu_link(qemu_target, every_kernel_elf, tmp_path):
    """qemu_link(elf=every kernel, via=None) -> a LinkSession on a fresh QEMU (stopped at the
    end of the test); `via(url) -> url` puts something (a fault proxy) between."""
    stack = contextlib.ExitStack()
    counter = itertools.count()

    def start(elf: Path | None = None, via=None, timeouts: Timeouts | None = None) -> LinkSession:
        workdir = tmp_path / f"qemu{next(counter)}"
        command = qemu_target.link_command(Path(elf or every_kernel_elf).resolve(), [])
        qemu = stack.enter_context(LinkProcess(command, workdir, "qemu-system-arm"))
        url = via(qemu.url) if via else qemu.url
        session = LinkSession(
            open_port(url, emulator=True),  # QEMU, or a fault proxy in front of it
            board=BOARD,
            log_path=workdir / "link.log",
            timeouts=timeouts or Timeouts(),
            port_name=url,
            console_log=qemu.console_log,
        )
        stack.callback(session.close)
        return session

    with stack:
        yield start
