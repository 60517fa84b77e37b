"""A labgrid farm on this machine's loopback, for the tests and the farm bench: labgrid's own
coordinator and exporter (from PyPI, run as their commands), and boards that are QEMU an547s.

FakeMps3Board stands in for an MPS3 on a lab bench, hardware absent here, and models what the
SDK relies on from one (notes: corstone300-and-qemu.md; sdk.targets.flash):
- its console UART is a TCP port that stays put across power cycles (as ser2net keeps a USB
  serial port's port while the board is off): a listening socket this process holds and hands
  to each QEMU it starts; or (`uart="pty"`) a serial device, a pty pair standing in for the
  board's USB serial port, which the exporter serves through ser2net (RFC 2217) as a lab's
  exporter serves a USBSerialPort: a relay copies bytes between the pty and the running QEMU,
  as the board's USB-UART bridge does;
- its power switch speaks labgrid's `simplerest` model (GET .../power/1, .../power/0; GET
  .../power answers 1 or 0);
- its configuration drive is a folder: at power-on the board boots the image its
  MB/HBI0309C/AN547/images.txt names (what `sdk flash`'s mps3-usb method writes), as the
  MPS3's MCC does.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import tty
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from sdk.firmware.boards import load_board
from sdk.targets.qemu import QemuDriver
from sdk.targets.resources import EmulatorBinary

BIN = Path(sys.executable).parent  # labgrid's commands live beside the venv's python
BOARD = "corstone300"
EXPORTER = "bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeMps3Board:
    """One board (see the module docstring): `power(on)`, `kill()` (it dies mid-run), and
    the ports an exporter publishes."""

    def __init__(self, name: str, workdir: Path, uart: str = "tcp") -> None:
        self.name = name
        self.uart_kind = uart
        self.workdir = workdir
        self.drive = workdir / "drive"
        self.drive.mkdir(parents=True, exist_ok=True)
        self.board = load_board(BOARD)
        [method] = [m for m in self.board.flash if m["method"] == "mps3-usb"]
        self.config_dir = self.drive / method["config_dir"]
        self.config_dir.mkdir(parents=True, exist_ok=True)  # the AN547 FPGA image installed
        (self.drive / "SOFTWARE").mkdir(exist_ok=True)
        params = self.board.target("qemu")
        self.qemu = QemuDriver(EmulatorBinary("qemu", params["binary"], self.board, params, None))
        self.uart = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.uart.bind(("127.0.0.1", 0))
        self.uart.listen(1)
        self.uart_port = self.uart.getsockname()[1]
        self.process: subprocess.Popen | None = None
        self._closed = False
        self.boots = 0
        self._lock = threading.Lock()
        board = self

        class Switch(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                match = re.fullmatch(r"/power(?:/([01]))?/?", self.path)
                if match is None:
                    self.send_error(404)
                    return
                if match.group(1) is not None:
                    board.power(match.group(1) == "1")
                body = b"1" if board.is_on else b"0"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        if uart == "pty":
            self.pty_master, self._pty_slave = os.openpty()
            tty.setraw(self._pty_slave)
            self.pty_path = os.ttyname(self._pty_slave)
            threading.Thread(target=self._relay, daemon=True).start()
        self.switch = ThreadingHTTPServer(("127.0.0.1", 0), Switch)
        self.power_url = f"http://127.0.0.1:{self.switch.server_address[1]}/power/{{value}}"
        threading.Thread(target=self.switch.serve_forever, daemon=True).start()

    @property
    def is_on(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def image(self) -> Path:
        """The image images.txt names on the drive (what the MCC boots)."""
        text = (self.config_dir / "images.txt").read_text()
        found = re.search(r"IMAGE0FILE:\s*(\S+)", text)
        assert found, text
        return self.drive / found.group(1).lstrip("\\").replace("\\", "/")

    def power(self, on: bool) -> None:
        with self._lock:
            if not on:
                self._stop()
            elif not self.is_on:
                self.boots += 1
                log = self.workdir / f"boot{self.boots}"
                log.mkdir(exist_ok=True)
                fd = self.uart.fileno()
                command = [
                    arg.replace("{fd}", str(fd)).replace("{console_log}", str(log / "uart.log"))
                    for arg in self.qemu.link_command(self.image(), [])
                ]
                with open(log / "qemu.log", "wb") as err:
                    self.process = subprocess.Popen(
                        command, stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT,
                        pass_fds=[fd], start_new_session=True,
                    )  # fmt: skip

    def _relay(self) -> None:
        """The USB-UART bridge: pty <-> the running QEMU's UART; while the board is off, what
        the host sends is lost (as on a board without power)."""
        link: socket.socket | None = None
        while not self._closed:
            if link is None and self.is_on:
                with contextlib.suppress(OSError):
                    link = socket.create_connection(("127.0.0.1", self.uart_port), timeout=5)
            readers = [self.pty_master] + ([link] if link is not None else [])
            ready, _, _ = select.select(readers, [], [], 0.1)
            try:
                if self.pty_master in ready:
                    data = os.read(self.pty_master, 65536)
                    if link is not None:
                        link.sendall(data)
                if link is not None and link in ready:
                    data = link.recv(65536)
                    if not data:
                        raise OSError("the board's UART closed")
                    os.write(self.pty_master, data)
            except OSError:
                if link is not None:
                    link.close()
                link = None

    def kill(self) -> None:
        """The board dies (its UART goes away, its switch still says on)."""
        with self._lock:
            self._stop()

    def freeze(self) -> None:
        """The board hangs (its CPU stops, its UART stays open): silence to the host."""
        with self._lock:
            if self.process is not None:
                os.killpg(self.process.pid, signal.SIGSTOP)

    def _stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            self.process = None

    def exporter_config(self) -> str:
        if self.uart_kind == "pty":  # the exporter starts ser2net for it (RFC 2217)
            uart = f"  RawSerialPort: {{port: {self.pty_path}, speed: 115200}}\n"
        else:
            uart = (
                f"  NetworkSerialPort: {{host: 127.0.0.1, port: {self.uart_port}, "
                "protocol: raw, speed: 115200}\n"
            )
        power = f"  NetworkPowerPort: {{model: simplerest, host: '{self.power_url}', index: 0}}\n"
        return f"{self.name}:\n{uart}{power}"

    def close(self) -> None:
        self._closed = True
        self._stop()
        self.switch.shutdown()
        self.switch.server_close()
        self.uart.close()


@dataclass
class LocalFarm:
    """labgrid-coordinator + labgrid-exporter on loopback with `boards`, and a place per
    board (`c300-<i>`, tagged board=corstone300 npu=virtual)."""

    workdir: Path
    boards: dict[str, FakeMps3Board] = field(default_factory=dict)  # by place
    processes: list[subprocess.Popen] = field(default_factory=list)
    address: str = ""

    def env(self, user: str | None = None) -> dict[str, str]:
        env = {**os.environ, "LG_COORDINATOR": self.address}
        if user is not None:
            env["LG_USERNAME"] = user  # another client of the farm, for labgrid
        return env

    def client(self, *args: str, user: str | None = None, check: bool = True) -> str:
        done = subprocess.run(
            [str(BIN / "labgrid-client"), *args], env=self.env(user), capture_output=True,
            text=True, timeout=60,
        )  # fmt: skip
        if check and done.returncode != 0:
            raise RuntimeError(f"labgrid-client {' '.join(args)}: {done.stderr}{done.stdout}")
        return done.stdout + done.stderr

    def _spawn(self, name: str, *command: str) -> subprocess.Popen:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 (owned by the process)
        process = subprocess.Popen(
            command, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        self.processes.append(process)
        return process

    def start(self, places: int, firmware: Path, pty_places: int = 0) -> LocalFarm:
        """The coordinator, `places` boards flashed with `firmware` and powered off (the
        last `pty_places` of them on a serial device behind ser2net), the exporter publishing
        them, and their places; returns once every place's resources are visible."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        self._spawn("coordinator", str(BIN / "labgrid-coordinator"), "-l", self.address)
        _await_listening(port, self.processes[-1], self.workdir / "coordinator.log")
        config = ""
        for i in range(1, places + 1):
            uart = "pty" if i > places - pty_places else "tcp"
            board = FakeMps3Board(f"board-{i}", self.workdir / f"board-{i}", uart)
            self.boards[f"c300-{i}"] = board
            self.flash(f"c300-{i}", firmware)
            config += board.exporter_config()
        (self.workdir / "exporter.yaml").write_text(config)
        self._spawn(
            "exporter", str(BIN / "labgrid-exporter"), "-c", self.address, "-n", EXPORTER,
            "--hostname", "127.0.0.1", str(self.workdir / "exporter.yaml"),
        )  # fmt: skip
        for place, board in self.boards.items():
            self.client("-p", place, "create")
            self.client("-p", place, "add-match", f"{EXPORTER}/{board.name}/*")
            self.client("-p", place, "set-tags", f"board={BOARD}", "npu=virtual")
        self._await_resources()
        return self

    def flash(self, place: str, firmware: Path) -> None:
        """Put `firmware` on the place's board as `sdk flash` does (its drive)."""
        from sdk.targets.drivers import BoardFlash
        from sdk.targets.resources import FlashMethods

        board = self.boards[place]
        BoardFlash(FlashMethods(tuple(board.board.flash), board.drive), BOARD).flash(firmware)

    def _await_resources(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        wanted = {f"{EXPORTER}/{b.name}/NetworkSerialPort" for b in self.boards.values()}
        while True:
            listed = self.client("resources", check=False)
            if all(w in listed for w in wanted):
                return
            if time.monotonic() > deadline or self.processes[-1].poll() is not None:
                log = (self.workdir / "exporter.log").read_text(errors="replace")
                raise RuntimeError(f"the exporter's resources never showed: {listed}\n{log}")
            time.sleep(0.2)  # the coordinator has no event for "an exporter registered"

    def holder(self, place: str) -> str:
        """Who holds `place` ("None": nobody), as `labgrid-client show` says."""
        shown = self.client("-p", place, "show")
        found = re.search(r"^\s*acquired:\s*(\S+)", shown, re.M)
        if found is None:
            raise RuntimeError(f"labgrid-client show {place}: no `acquired:` line: {shown}")
        return found.group(1)

    def close(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        for board in self.boards.values():
            board.close()


def _await_listening(port: int, process: subprocess.Popen, log: Path, timeout_s=30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError as exc:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"labgrid-coordinator did not start: {log.read_text()}") from exc
            time.sleep(0.1)  # nothing announces it: its port answering is the handshake


def labgrid_installed() -> bool:
    return shutil.which("labgrid-coordinator", path=str(BIN)) is not None
