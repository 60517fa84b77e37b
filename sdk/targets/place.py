"""A board in a labgrid farm: a place the coordinator hands out, its serial port and power
switch (its power and console driver, sdk.targets.drivers).

    sdk deploy model.py --target labgrid --place c300-1 [--coordinator HOST:PORT]

The place is acquired through labgrid's client library (waiting, for a bounded time, while
another client holds it), its resources come from labgrid's own RemotePlace expansion (a
`NetworkSerialPort` over raw TCP or RFC 2217, which is also how an exporter publishes a
`USBSerialPort` through ser2net; a `NetworkPowerPort` and labgrid's power driver when it has
one), and the place is released on every way out (error, hang, Ctrl-C). A board with a power
switch is power-cycled before the run and again after a hang, so the next client finds it
fresh. Nothing of the coordinator or exporter is written here: the farm runs labgrid's.

Place tags the SDK reads: `board` (must match --board when set), `npu` (`virtual`: the board
has no NPU, the host's virtual U55 answers its driver, as on QEMU's an547).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import signal
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from sdk.errors import TargetError, UsageError
from sdk.program.pte import LoadedProgram
from sdk.targets.base import Availability, RunOptions
from sdk.targets.drivers import Console
from sdk.targets.emulator import Preload
from sdk.targets.resources import LabgridPlace
from sdk.targets.serial import SerialDriver

# labgrid's own convention for where its coordinator is (labgrid-client reads it too).
COORDINATOR_ENV = "LG_COORDINATOR"
DEFAULT_COORDINATOR = "127.0.0.1:20408"
LABGRID_INSTALL = (
    "pass --place NAME (`labgrid-client places`) and --coordinator HOST:PORT (or set "
    f"{COORDINATOR_ENV}) of a labgrid farm (docs/farm.md)"
)
CONNECT_TIMEOUT_S = 30.0  # a coordinator that takes the connection but never answers
# The place tag value saying its board has no NPU (the host's virtual U55 runs delegates).
NO_NPU_TAG = "virtual"


def coordinator_address(given: str | None) -> str:
    """--coordinator, else $LG_COORDINATOR, else labgrid's default (this machine)."""
    return given or os.environ.get(COORDINATOR_ENV) or DEFAULT_COORDINATOR


class Coordinator:
    """A client session with a labgrid coordinator (labgrid.remote.client), and the place
    operations the SDK needs: find, wait for and acquire, resources, release."""

    def __init__(self, address: str) -> None:
        # gRPC's fork handlers log a line at every subprocess a deploy starts (Vela, the
        # build) while a session is open: a client that never forks into gRPC needs none.
        os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
        os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
        from labgrid.remote.client import ClientSession
        from labgrid.util.proxy import proxymanager

        self.address = address
        self.loop = asyncio.new_event_loop()  # one per session: several may live in a process
        self._changed = asyncio.Event()
        self.held: set[str] = set()  # places acquired by this session, to release
        self._targets: list[Any] = []
        try:  # labgrid's start_session, with a bound on a coordinator that never answers
            grpc_address = proxymanager.get_grpc_address(address, default_port=20408)
            self.session = ClientSession(grpc_address, self._bound_loop())
            self._call(self.session.start(), CONNECT_TIMEOUT_S)
        except Exception as exc:  # grpc and labgrid raise many kinds: one line
            if hasattr(self, "session"):
                with contextlib.suppress(Exception):
                    self._call(self.session.stop(), 5.0)
                with contextlib.suppress(Exception):
                    self._call(self.session.close(), 5.0)
            self._close_loop()
            detail = "no answer" if isinstance(exc, asyncio.TimeoutError) else exc
            raise TargetError(
                f"cannot reach the labgrid coordinator at {address}: {detail}"
            ) from None
        original = self.session.on_place_changed

        async def on_place_changed(place_pb2):  # a place's holder changed: wake a waiter
            await original(place_pb2)
            self._changed.set()

        self.session.on_place_changed = on_place_changed

    def _bound_loop(self) -> asyncio.AbstractEventLoop:
        from labgrid.remote import client

        client._loop.set(self.loop)  # labgrid stashes its loop per context: use ours
        asyncio.set_event_loop(self.loop)  # grpc's channel binds to the current loop
        return self.loop

    def _call(self, awaitable, timeout_s: float):
        return self.loop.run_until_complete(asyncio.wait_for(awaitable, timeout_s))

    @property
    def me(self) -> str:
        return f"{self.session.gethostname()}/{self.session.getuser()}"

    def place(self, name: str) -> Any:
        """The place called `name` (labgrid's Place), or a TargetError listing the places."""
        place = self.session.places.get(name)
        if place is None:
            known = ", ".join(sorted(self.session.places)) or "none"
            raise TargetError(
                f"the labgrid coordinator at {self.address} has no place {name!r} (places: {known})"
            )
        return place

    def acquire(self, name: str, timeout_s: float, use_held: bool = False) -> bool:
        """Acquire place `name`, waiting up to `timeout_s` while another client holds it
        (this user's other runs too); True once acquired here. `use_held`: a place this
        user already holds (`labgrid-client acquire`) is used as it is (False: not ours to
        release). The wait ends on the coordinator's place update, not on a poll."""
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb2

        deadline = time.monotonic() + timeout_s
        while True:
            place = self.place(name)
            if place.acquired == self.me and use_held:
                return False
            if not place.acquired:
                try:
                    self._call(self.session.stub.AcquirePlace(pb2.AcquirePlaceRequest(
                        placename=name)), 30.0)  # fmt: skip
                except Exception as exc:  # taken in between, or the coordinator refused
                    self._call(self.session.sync_with_coordinator(), 30.0)
                    if not self.place(name).acquired:
                        raise TargetError(
                            f"place {name}: acquire refused: {_detail(exc)}"
                        ) from None
                    continue  # another client was first: wait for it like any holder
                self.held.add(name)  # ours from here on, whatever follows
                self._call(self.session.sync_with_coordinator(), 30.0)
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                yours = " (you: another run, or `labgrid-client acquire`; --use-acquired " \
                    "uses it)" if place.acquired == self.me else ""  # fmt: skip
                raise TargetError(
                    f"place {name} is held by {place.acquired}{yours}: waited {timeout_s:g} s "
                    "(--acquire-timeout); ask them to release it (`labgrid-client -p "
                    f"{name} release`)"
                )
            self._changed.clear()
            self._wait_for_change(remaining)

    def _wait_for_change(self, timeout_s: float) -> None:
        """Until a place changes, the session ends (a lost coordinator: said), or timeout."""

        async def either() -> None:
            waits = [asyncio.ensure_future(self._changed.wait()),
                     asyncio.ensure_future(self.session.stopping.wait())]  # fmt: skip
            try:
                await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()

        self.loop.run_until_complete(either())
        if self.session.stopping.is_set():
            raise TargetError(f"lost the labgrid coordinator at {self.address}")

    def release(self, name: str) -> None:
        """Give place `name` back (when acquired here); a failure is a TargetError."""
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb2

        if name not in self.held:
            return
        try:
            request = pb2.ReleasePlaceRequest(placename=name)
            self._call(self.session.stub.ReleasePlace(request), 30.0)
            self._call(self.session.sync_with_coordinator(), 30.0)
        except Exception as exc:
            raise TargetError(f"place {name}: release failed: {_detail(exc)}") from None
        self.held.discard(name)

    def target(self, name: str) -> Any:
        """A labgrid Target holding the acquired place's resources (labgrid's RemotePlace
        expansion, as labgrid-client builds it)."""
        from labgrid import Target
        from labgrid.resource.remote import RemotePlace, RemotePlaceManager

        manager = RemotePlaceManager.get()
        manager.session = self.session
        manager.loop = self.loop
        self._targets.append(target := Target(name, env=None))
        try:
            RemotePlace(target, name=name)
        except Exception as exc:  # labgrid's ServerError: an exporter gone, say
            raise TargetError(f"place {name}: its resources: {_detail(exc)}") from None
        return target

    def close(self) -> None:
        """End the session and leave nothing behind: labgrid's place manager forgets this
        session's resources, no loop stays current."""
        from labgrid.remote import client
        from labgrid.resource.remote import RemotePlaceManager

        with contextlib.suppress(Exception):
            self._call(self.session.stop(), 10.0)
        with contextlib.suppress(Exception):
            self._call(self.session.close(), 10.0)
        self._close_loop()
        manager = RemotePlaceManager.get()
        if manager.session is self.session:
            manager.session = manager.loop = None
        manager.resources = [r for r in manager.resources if r.target not in self._targets]
        manager.unmanaged_resources = [
            r for r in manager.unmanaged_resources if r.target not in self._targets
        ]
        client._loop.set(None)
        asyncio.set_event_loop(None)

    def _close_loop(self) -> None:
        with contextlib.suppress(Exception):  # nothing of gRPC's left to run on a closed loop
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.close()


def _detail(exc: BaseException) -> str:
    details = getattr(exc, "details", None)
    return details() if callable(details) else str(exc) or type(exc).__name__


def serial_url(target: Any) -> tuple[str, int]:
    """The pyserial URL and speed of the place's console: its NetworkSerialPort, through
    labgrid's proxy manager (LG_PROXY) as labgrid's own SerialDriver reaches it; a local
    serial port's device (an env file's USBSerialPort or RawSerialPort)."""
    from labgrid.resource import NetworkSerialPort, SerialPort
    from labgrid.util.proxy import proxymanager

    local = [r for r in target.resources if isinstance(r, SerialPort)]
    if local:  # a lab env's board on this machine (USBSerialPort, RawSerialPort)
        return local[0].port, local[0].speed
    try:
        port = target.get_resource(NetworkSerialPort, wait_avail=False)
    except Exception:
        names = ", ".join(type(r).__name__ for r in target.resources) or "none"
        raise TargetError(
            f"place {target.name} has no NetworkSerialPort (its resources: {names}); export "
            "the board's console (NetworkSerialPort, or USBSerialPort through ser2net)"
        ) from None
    if not port.avail:
        raise TargetError(f"place {target.name}: its serial port is not available (exporter down?)")
    host, tcp_port = proxymanager.get_host_and_port(port)
    if port.protocol == "raw":
        return f"socket://{host}:{tcp_port}", port.speed
    if port.protocol == "rfc2217":
        return f"rfc2217://{host}:{tcp_port}", port.speed
    raise TargetError(f"place {target.name}: serial protocol {port.protocol!r} (raw, rfc2217)")


def power_driver(target: Any, off_s: float) -> Any | None:
    """The target's power driver, active: an environment file's, else labgrid's driver for
    the place's power switch (a NetworkPowerPort); None when it has none."""
    from labgrid.driver import NetworkPowerDriver
    from labgrid.exceptions import NoDriverFoundError
    from labgrid.resource import NetworkPowerPort

    with contextlib.suppress(NoDriverFoundError):  # an environment file's own power driver
        return target.get_driver("PowerProtocol")
    if not any(isinstance(r, NetworkPowerPort) for r in target.resources):
        return None
    driver = NetworkPowerDriver(target, name=None, delay=float(off_s))
    target.activate(driver)
    return driver


def release_console(target: Any) -> None:
    """Close any console driver an environment file activated on the port: the link takes
    the port alone (labgrid-client's own console does the same)."""
    from labgrid.exceptions import NoDriverFoundError

    with contextlib.suppress(NoDriverFoundError):
        target.deactivate(target.get_active_driver("ConsoleProtocol"))


@contextlib.contextmanager
def board_console(target: Any, name: str, baud: int, off_s: float, log: Path) -> Iterator[Console]:
    """The console of a labgrid target's board, reset first when it has a power switch
    (and again after a hang, so the next client finds it fresh). `baud`: 0 takes the
    exporter's speed."""
    url, speed = serial_url(target)
    release_console(target)
    power = power_driver(target, off_s)
    _log(log, f"{name}: console {url}; {'a' if power else 'no'} power switch")

    def explain(exc: TargetError) -> TargetError:
        named = copy.copy(exc)  # its kind and log stay
        named.message = f"place {name}: {exc.message}"
        return named

    def reset() -> None:
        try:
            power.cycle()
        except Exception as exc:  # requests, labgrid: one line naming the place
            raise TargetError(f"place {name}: power switch: {_detail(exc)}") from None
        _log(log, f"{name}: power-cycled")

    if power is not None:
        reset()  # a fresh board for this client
    try:
        yield Console(url, baud or speed, None, explain, reset if power else None, name)
    except TargetError:
        if power is not None:  # a hang or a dead link: leave the board fresh
            with contextlib.suppress(Exception):
                reset()
        raise


class PlaceDriver:
    """Power and console of a board in a labgrid farm (see the module docstring)."""

    def __init__(self, resource: LabgridPlace) -> None:
        self.resource = resource
        self._npu = resource.npu
        self.place_tags: dict[str, str] = {}

    @property
    def npu(self) -> str | None:
        """The board's NPU: board.yaml's, unless the acquired place's `npu` tag says other."""
        tag = self.place_tags.get("npu")
        if tag is None:
            return self._npu
        return None if tag == NO_NPU_TAG else tag

    def _place(self, options: RunOptions | None) -> str | None:
        return (options.place if options is not None else None) or self.resource.place

    def _coordinator(self, options: RunOptions | None) -> str:
        return coordinator_address(
            (options.coordinator if options is not None else None) or self.resource.coordinator
        )

    def availability(self, options: RunOptions | None = None) -> Availability:
        """Available when the coordinator answers and knows the place (who holds it, if anyone)."""
        name = self._place(options)
        if not name:
            return Availability(False, "no --place given", LABGRID_INSTALL)
        address = self._coordinator(options)
        try:
            coordinator = Coordinator(address)
        except TargetError as exc:
            return Availability(False, exc.message, LABGRID_INSTALL)
        try:
            place = coordinator.place(name)
            held = f", held by {place.acquired}" if place.acquired else ", free"
            return Availability(True, f"place {name} at {address}{held}")
        except TargetError as exc:
            return Availability(False, exc.message, LABGRID_INSTALL)
        finally:
            coordinator.close()

    def preflight(self, options: RunOptions) -> None:
        if not self._place(options):
            raise UsageError("--target labgrid needs --place NAME (`labgrid-client places`)")

    def follow(self, program: LoadedProgram) -> None:
        """The board's NPU is what it is: a program for another MAC count fails at its load."""

    def preloads(self, program: LoadedProgram, workdir: Path, options: RunOptions) -> list[Preload]:
        return []  # nothing is booted here: the program goes over the link

    def input_preloads(self, inputs, workdir: Path):
        return [], {}  # nothing is booted: the inputs go over the link

    @contextlib.contextmanager
    def on(
        self, image: Path | None, workdir: Path, preloads: Sequence[Preload], options: RunOptions
    ) -> Iterator[Console]:
        """The place acquired, its board reset (when it has a power switch) and running what
        was flashed on it, until the block ends; then released whatever happened."""
        self.preflight(options)
        name = self._place(options)
        assert name is not None  # preflight
        params = self.resource.params
        timeout_s = options.acquire_timeout_s
        if timeout_s is None:
            timeout_s = float(params.get("acquire_timeout_s", 300))
        log = workdir / "place.log"
        coordinator = Coordinator(self._coordinator(options))
        failed = True
        try:
            started = time.monotonic()
            acquired = coordinator.acquire(name, timeout_s, options.use_acquired)
            how = "acquired" if acquired else "yours already (--use-acquired)"
            _log(log, f"place {name}: {how} after {time.monotonic() - started:.2f} s")
            place = coordinator.place(name)
            self._check_board(name, place.tags)
            self.place_tags = dict(place.tags)
            target = coordinator.target(name)
            with board_console(target, name, self._baud(options), self._off_s, log) as console:
                yield console
            failed = False
        finally:
            self._give_back(coordinator, name, log, failed)

    def _give_back(self, coordinator: Coordinator, name: str, log: Path, failed: bool) -> None:
        """Release the place (Ctrl-C held off meanwhile) and end the session; a release that
        fails is logged, and raised only when nothing else failed first."""
        masked = hasattr(signal, "pthread_sigmask")
        if masked:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            if name in coordinator.held:
                coordinator.release(name)
                _log(log, f"place {name}: released")
        except TargetError as exc:
            _log(log, exc.message)
            if not failed:
                raise
        finally:
            try:
                coordinator.close()
            finally:
                if masked:  # a Ctrl-C that came meanwhile is raised now (also after a failed
                    # close: a mask left set would outlive the run, inherited by every child)
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

    @property
    def _off_s(self) -> float:
        return float(self.resource.params.get("power_off_s", 1.0))

    def _baud(self, options: RunOptions) -> int:
        """--baud, else the exporter's speed (0), else board.yaml's."""
        return options.baud or int(self.resource.params.get("baud", 0))

    def _check_board(self, name: str, tags: dict[str, str]) -> None:
        board = tags.get("board")
        if board is not None and board != self.resource.board_name:
            raise UsageError(f"place {name} holds a {board} board, not {self.resource.board_name}")

    timing = SerialDriver.timing  # a board's own clock (SysTick), as for any serial board


def _log(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(line + "\n")


class LabgridTargetDriver(PlaceDriver):
    """A board a lab's own labgrid environment describes (`pytest --lg-env env.yaml`: its
    `target` fixture, a RemotePlace the lab acquired or local resources): its console and
    power switch as for a place; acquiring and releasing stay with labgrid."""

    def __init__(self, resource: LabgridPlace, target: Any) -> None:
        super().__init__(resource)
        self.target = target

    def availability(self, options: RunOptions | None = None) -> Availability:
        return Availability(True, f"labgrid target {self.target.name}")

    def preflight(self, options: RunOptions) -> None:
        """Nothing to name: the environment file did."""

    @contextlib.contextmanager
    def on(
        self, image: Path | None, workdir: Path, preloads: Sequence[Preload], options: RunOptions
    ) -> Iterator[Console]:
        from labgrid.resource.remote import RemotePlace

        with contextlib.suppress(Exception):
            self.place_tags = dict(self.target.get_resource(RemotePlace, wait_avail=False).tags)
        self._check_board(self.target.name, self.place_tags)
        log = workdir / "place.log"
        name = self.target.name
        with board_console(self.target, name, self._baud(options), self._off_s, log) as console:
            yield console
