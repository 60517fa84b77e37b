"""How a LinkSession words a port that dies: with the firmware's fault record when the
emulator's copy of the UART (its chardev logfile) holds one, though the socket was reset
before those bytes were read; else the port's own error. No emulator: a port that fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdk.errors import TargetError
from sdk.link.session import LinkSession

FAULT = b"@sdk fault cfsr=0x00010000 hfsr=0x00000000 pc=0x10000100\n"


class ResetPort:
    """A port whose peer reset the connection (QEMU exiting with unread input)."""

    timeout: float | None = None

    def write(self, data: bytes) -> int:
        return len(data)

    def read(self, size: int = 1) -> bytes:
        raise ConnectionResetError(104, "Connection reset by peer")

    def close(self) -> None:
        pass


def connect(tmp_path: Path, console_log: Path | None) -> TargetError:
    session = LinkSession(ResetPort(), log_path=tmp_path / "link.log", console_log=console_log)
    with pytest.raises(TargetError) as caught:
        session.connect()
    session.close()
    return caught.value


def test_a_fault_in_the_emulators_uart_copy_is_the_news(tmp_path):
    log = tmp_path / "uart.log"
    log.write_bytes(b"executor_runner: link mode\n\x00\x05\x01frame\x00" + FAULT)
    error = connect(tmp_path, log)
    assert "the firmware faulted: cfsr=0x00010000" in error.message


@pytest.mark.parametrize("content", [None, b"executor_runner: link mode\n"])
def test_without_a_fault_record_the_port_error_is_said(tmp_path, content):
    log = tmp_path / "uart.log"
    if content is not None:
        log.write_bytes(content)
    error = connect(tmp_path, log if content is not None else None)
    assert "closed or failed" in error.message and "faulted" not in error.message
