"""The host link's byte level: the port (any pyserial URL), the log of everything sent and
received, and frames read out of the console's bytes (console text, fault lines and corrupt
frames told apart). LinkSession builds its requests on it (docs/link.md "Framing")."""

from __future__ import annotations

import contextlib
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from sdk.errors import FrameError, TargetError
from sdk.link import protocol as p
from sdk.link.record import describe_fault, find_fault

DEFAULT_BAUD = 115200
CONSOLE_TAIL = 600  # characters of console text quoted in an error


class Port(Protocol):
    """What the session needs of a port: pyserial's Serial (any URL) has it."""

    timeout: float | None

    def write(self, data: bytes) -> int | None: ...

    def read(self, size: int = 1) -> bytes: ...

    def close(self) -> None: ...


@dataclass
class LinkLog:
    """Everything sent and received, in a log file and (the tail) in memory for errors."""

    path: Path | None
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=8))
    console: str = ""
    start: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self._file = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "w")  # noqa: SIM115 - closed by close()

    def event(self, text: str) -> None:
        self.recent.append(text)
        if self._file is not None:
            self._file.write(f"{time.monotonic() - self.start:9.3f} {text}\n")
            self._file.flush()

    def console_text(self, text: str) -> None:
        self.console += text
        self.event(f"console: {text!r}")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def open_port(url: str, baud: int = DEFAULT_BAUD, emulator: bool = False) -> Port:
    """A pyserial port for `url` (/dev/ttyACM0, socket://, rfc2217://, hwgrep://...).
    `emulator`: a socket:// an emulator (or the host build's host_link) serves this host
    alone, closed without the 0.3 s pyserial's socket waits for a server to take a reconnect
    (an emulator stops instead)."""
    import serial

    if url.startswith("rfc2217://") and "ign_set_control" not in url:
        # ser2net (a lab's exporter) never confirms SET_CONTROL; labgrid's driver says the same
        url += ("&" if "?" in url else "?") + "ign_set_control"
    # pyserial's rfc2217:// has no write timeout (NotImplementedError)
    writes = {} if url.startswith("rfc2217://") else {"write_timeout": 10}
    try:
        if emulator and url.startswith("socket://"):
            return _emulator_port_class()(url, baudrate=baud, timeout=0.05, **writes)
        return serial.serial_for_url(url, baudrate=baud, timeout=0.05, **writes)
    except (serial.SerialException, ValueError, OSError) as exc:
        raise TargetError(f"cannot open serial port {url}: {exc}") from None


def _emulator_port_class() -> type:
    """pyserial's socket:// port, closed at once (made on first use: pyserial loads late)."""
    import socket

    from serial.urlhandler.protocol_socket import Serial as SocketPort

    class EmulatorPort(SocketPort):
        def close(self) -> None:
            if self._socket is not None:
                with contextlib.suppress(OSError):
                    self._socket.shutdown(socket.SHUT_RDWR)
                self._socket.close()
                self._socket = None
            self.is_open = False

    return EmulatorPort


class Transport:
    """Frames in and out of a port, with the log and the console's text (a LinkSession base:
    its requests go through `_send` and `_frames`; `fail` words every link error)."""

    port: Port
    port_name: str
    log: LinkLog
    console_log: Path | None  # the emulator's copy of the UART's output, if any
    phase: str
    _pending: bytearray  # bytes after the last delimiter

    def fail(self, message: str) -> TargetError:
        """The error for `message`, with what was seen last (bytes not yet a frame: console)."""
        if self._pending and p.DELIMITER[0] not in self._pending:
            self._flush_pending_as_console()
        seen = "; ".join(self.log.recent) or "nothing"
        console = self.log.console.strip()
        tail = f"; console: {console[-CONSOLE_TAIL:]!r}" if console else ""
        return TargetError(
            f"host link, phase {self.phase}: {message} (last seen: {seen}{tail})",
            log_path=self.log.path,
        )

    def _check_console_for_fault(self, partial: bool = False) -> None:
        """A CPU fault prints its line between frames: that is the news (read from the
        emulator's copy of the UART's output too, when there is one). `partial`: a line cut
        short counts (find_fault), when nothing more will come."""
        text = self.log.console
        if self.console_log is not None and self.console_log.is_file():
            text += "\n" + self.console_log.read_bytes().decode("latin-1")
        fault = find_fault(text, partial)
        if fault is not None:
            self.log.event(
                "fault line: @sdk fault " + " ".join(f"{k}={v}" for k, v in fault.items())
            )
            raise self.fail(describe_fault(fault))

    def _send(self, frame: bytes, what: str) -> None:
        self.log.event(f"> {what}")
        try:
            self.port.write(frame)
        except Exception as exc:  # pyserial raises SerialException, sockets OSError
            # A board that faulted and stopped (an emulator exiting) can fail a write, a
            # retransmission, before its fault record was read: the record is the news.
            self._flush_pending_as_console()
            self._check_console_for_fault(partial=True)
            raise self.fail(f"cannot write to {self.port_name}: {exc}") from None

    def _segment(self, deadline: float) -> bytes | None:
        """The bytes up to the next delimiter (never empty); None when the deadline passed.
        Bytes after it stay for the next call, whoever makes it."""
        while True:
            if p.DELIMITER[0] in self._pending:
                segment, _, rest = bytes(self._pending).partition(p.DELIMITER)
                self._pending = bytearray(rest)
                if segment:
                    return segment
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if find_fault(bytes(self._pending).decode("latin-1"), partial=True) is not None:
                    self._flush_pending_as_console()  # a fault line its board cut short
                    self._check_console_for_fault(partial=True)
                return None
            try:
                # One byte with a timeout, then whatever else is there without waiting: a
                # read of N bytes would wait for all N (or the timeout) on pyserial ports.
                self.port.timeout = min(remaining, 0.1)
                data = self.port.read(1)
                if data:
                    self.port.timeout = 0
                    data += self.port.read(65536)
            except Exception as exc:
                self._flush_pending_as_console()
                self._check_console_for_fault(partial=True)
                raise self.fail(f"{self.port_name} closed or failed ({exc})") from None
            self._pending += data
            if p.DELIMITER[0] not in data and len(self._pending) > p.MAX_ENCODED * 2:
                # No delimiter for longer than any frame: console text (or noise).
                self._flush_pending_as_console()

    def _flush_pending_as_console(self) -> None:
        if self._pending:
            self.log.console_text(bytes(self._pending).decode("latin-1"))
            self._pending.clear()

    def _frames(self, deadline: float):
        """Decoded frames until the deadline: yields Frame, or None for a corrupt one."""
        while True:
            segment = self._segment(deadline)
            if segment is None:
                return
            try:
                frame = p.decode_frame(segment)
            except FrameError as exc:
                if _looks_like_text(segment):
                    self.log.console_text(segment.decode("latin-1"))
                    self._check_console_for_fault()
                    continue
                self.log.event(f"< corrupt frame ({exc}, {len(segment)} B)")
                yield None
                continue
            self.log.event(f"< {frame.describe()}")
            yield frame


def _looks_like_text(segment: bytes) -> bool:
    """Console text (a fault record, or log lines such as the boot banner the firmware prints
    before its HELLO) rather than a damaged frame: taken for one, the banner would make the
    host retransmit CONNECT, and the firmware send its INFO twice."""
    printable = sum(32 <= b < 127 or b in (9, 10, 13) for b in segment)
    return (
        len(segment) > 0
        and printable / len(segment) > 0.95
        and (b"@sdk" in segment or segment.endswith(b"\n"))
    )
