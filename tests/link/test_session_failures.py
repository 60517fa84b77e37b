"""How a LinkSession words a port that dies: with the firmware's fault record when the
emulator's copy of the UART (its chardev logfile) holds one, though the socket was reset
before those bytes were read (by a read or a write); else the port's own error. No emulator:
a port that fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdk.errors import TargetError
from sdk.link.session import LinkSession

FAULT = b"@sdk fault cfsr=0x00010000 hfsr=0x00000000 pc=0x10000100\n"


class ResetPort:
    """A port whose peer reset the connection (QEMU exiting with unread input): found by the
    next read, or (`on_write`) by the next write, a retransmission."""

    timeout: float | None = None

    def __init__(self, on_write: bool = False) -> None:
        self.on_write = on_write

    def write(self, data: bytes) -> int:
        if self.on_write:
            raise ConnectionResetError(104, "Connection reset by peer")
        return len(data)

    def read(self, size: int = 1) -> bytes:
        raise ConnectionResetError(104, "Connection reset by peer")

    def close(self) -> None:
        pass


def connect(tmp_path: Path, console_log: Path | None, on_write: bool = False) -> TargetError:
    port = ResetPort(on_write)
    session = LinkSession(port, log_path=tmp_path / "link.log", console_log=console_log)
    with pytest.raises(TargetError) as caught:
        session.connect()
    session.close()
    return caught.value


@pytest.mark.parametrize("on_write", [False, True], ids=["read", "write"])
def test_a_fault_in_the_emulators_uart_copy_is_the_news(tmp_path, on_write):
    log = tmp_path / "uart.log"
    log.write_bytes(b"executor_runner: link mode\n\x00\x05\x01frame\x00" + FAULT)
    error = connect(tmp_path, log, on_write)
    assert "the firmware faulted: cfsr=0x00010000" in error.message


@pytest.mark.parametrize("on_write", [False, True], ids=["read", "write"])
@pytest.mark.parametrize("content", [None, b"executor_runner: link mode\n"])
def test_without_a_fault_record_the_port_error_is_said(tmp_path, content, on_write):
    log = tmp_path / "uart.log"
    if content is not None:
        log.write_bytes(content)
    error = connect(tmp_path, log if content is not None else None, on_write)
    said = "cannot write to" if on_write else "closed or failed"
    assert said in error.message and "faulted" not in error.message


class PrintingPort:
    """A board printing its boot banner, then faulting: the emulator's UART copy (QEMU's
    chardev logfile) is written ahead of the bytes the socket has delivered so far."""

    timeout: float | None = None

    def __init__(self, console_log: Path) -> None:
        self.console_log = console_log
        banner = b"executor_runner: serving the host link on the console\n\x00"
        fault = b"\n" + FAULT + b"\x00"
        # (delivered by a read, the UART copy by then): the fault line is half logged after the
        # banner; a read finding nothing between the two
        partly = banner + fault[:17]
        self.steps = [(banner, partly), (b"", partly), (fault, banner + fault)]

    def write(self, data: bytes) -> int:
        return len(data)

    def read(self, size: int = 1) -> bytes:
        if not self.steps:
            return b""
        delivered, logged = self.steps.pop(0)
        self.console_log.write_bytes(logged)
        return delivered

    def close(self) -> None:
        pass


def test_a_fault_line_still_being_printed_is_read_whole(tmp_path):
    """The banner ends a line of console text (not a corrupt frame); the fault line half
    written to the UART copy at that moment is not taken until it ends."""
    log = tmp_path / "uart.log"
    session = LinkSession(PrintingPort(log), log_path=tmp_path / "link.log", console_log=log)
    with pytest.raises(TargetError) as caught:
        session.connect()
    session.close()
    assert "the firmware faulted: cfsr=0x00010000 hfsr=0x00000000 pc=0x10000100" in str(
        caught.value.message
    )
