"""The host build's link server (build/host/host_link, ASan + UBSan) driven as a board is: over
TCP through pyserial's socket://, by the SDK's own session."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

from sdk.link.session import LinkSession, Timeouts
from sdk.link.transport import open_port


@contextlib.contextmanager
def serving(host_build: Path, *options: str) -> Iterator[tuple[subprocess.Popen, str]]:
    """(process, socket:// URL) of a host_link started with `options`; killed if still up at
    the end (its stderr, where the sanitizers report, is the caller's to read)."""
    process = subprocess.Popen(
        [str(host_build / "host_link"), *options, "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith("listening on 127.0.0.1:"), line + process.stderr.read()
        yield process, f"socket://127.0.0.1:{int(line.rsplit(':', 1)[1])}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def session_on(url: str, log: Path, timeouts: Timeouts | None = None) -> LinkSession:
    """A session on a host_link: its server is this host's alone, so the port closes without
    pyserial's 0.3 s wait for a reconnect (sdk.link.transport.open_port)."""
    port = open_port(url, emulator=True)
    return LinkSession(port, log_path=log, port_name=url, timeouts=timeouts)


@contextlib.contextmanager
def host_link(host_build: Path, log: Path, *options: str) -> Iterator[LinkSession]:
    """A session on a fresh host_link; at the end the peer closes, host_link must end with 0
    and its sanitizers must have said nothing."""
    with serving(host_build, *options) as (process, url):
        session = session_on(url, log)
        yield session
        session.close()
        assert process.wait(timeout=30) == 0  # the peer closed: host_link ends
        assert process.stderr is not None
        assert "runtime error" not in process.stderr.read()  # UBSan
