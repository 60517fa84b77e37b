"""A fault-injecting TCP proxy between the host and the firmware's UART socket (tests only).

Every byte either way may be dropped, corrupted (XOR with a random non-zero byte), duplicated,
or held back (a delay), each with its own probability, from a seeded generator per direction:
what a noisy serial line, a flaky USB adapter or a stalled ser2net does. The counts of what it
did are kept so that a test can prove faults were injected at all.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Faults:
    drop: float = 0.0
    corrupt: float = 0.0
    duplicate: float = 0.0
    delay: float = 0.0  # chance per chunk of a pause
    max_delay_s: float = 0.05


@dataclass
class Counts:
    bytes: int = 0
    dropped: int = 0
    corrupted: int = 0
    duplicated: int = 0
    delayed: int = 0

    @property
    def faults(self) -> int:
        return self.dropped + self.corrupted + self.duplicated + self.delayed


@dataclass
class FaultProxy:
    """Listens on 127.0.0.1 (`url`); each accepted client is joined to `upstream`."""

    upstream: tuple[str, int]
    faults: Faults
    seed: int
    to_target: Counts = field(default_factory=Counts)
    to_host: Counts = field(default_factory=Counts)

    def __post_init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.url = f"socket://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._upstream: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._accepter = threading.Thread(target=self._accept, daemon=True)
        self._accepter.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                if self._upstream is None:  # one upstream connection for the proxy's life
                    self._upstream = socket.create_connection(self.upstream, timeout=5)
                upstream = self._upstream
            rngs = random.Random(self.seed), random.Random(self.seed + 1_000_003)
            for src, dst, counts, rng in (
                (client, upstream, self.to_target, rngs[0]),
                (upstream, client, self.to_host, rngs[1]),
            ):
                thread = threading.Thread(
                    target=self._pump, args=(src, dst, counts, rng, client), daemon=True
                )
                thread.start()
                self._threads.append(thread)

    def _pump(self, src, dst, counts: Counts, rng: random.Random, client) -> None:
        f = self.faults
        src.settimeout(0.2)
        while not self._stop.is_set():
            try:
                data = src.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            out = bytearray()
            for byte in data:
                counts.bytes += 1
                r = rng.random()
                if r < f.drop:
                    counts.dropped += 1
                    continue
                if r < f.drop + f.corrupt:
                    counts.corrupted += 1
                    byte ^= rng.randrange(1, 256)
                out.append(byte)
                if rng.random() < f.duplicate:
                    counts.duplicated += 1
                    out.append(byte)
            if rng.random() < f.delay:
                counts.delayed += 1
                time.sleep(rng.uniform(0, f.max_delay_s))
            try:
                dst.sendall(bytes(out))
            except OSError:
                break
        if src is client:  # the host hung up: this client is done (the upstream stays)
            client.close()

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        for thread in self._threads:
            thread.join(timeout=2)
        if self._upstream is not None:
            self._upstream.close()
