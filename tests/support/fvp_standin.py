"""A STAND-IN for Arm's Corstone-300 FVP (FVP_Corstone_SSE-300_Ethos-U55), which cannot be
installed here: it takes the FVP's command line and runs the firmware on QEMU behind it.

What it models of the FVP, from Arm's documentation (../shared/notes/peers.md):
  - options `-C NAME=VALUE`, `-a ELF`, `--data FILE@ADDRESS`, `--timelimit SECONDS`; an unknown
    option or parameter is refused (exit 1), as the FVP refuses one;
  - UART0 on telnet terminal 0: with `start_telnet=0` no client is started; in `mode=raw` the
    terminal is a transparent TCP bridge on the first free port at or above `start_port`
    (default 5000), announced as "telnetterminal0: Listening for serial connection on port N";
    `mps3_board.uart0.out_file` gets a copy of UART0's output;
  - semihosting: the firmware's exit ends the simulation.
Not modelled (refused by name): telnet mode's handshake, a started telnet client. The NPU is
not modelled either: QEMU has none, so the firmware's driver talks to the host's virtual U55
over the link (the SDK's session answers it as on QEMU).

    python tests/support/fvp_standin.py -C mps3_board.telnetterminal0.mode=raw ... -a fw.elf
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from sdk.firmware.boards import load_board  # noqa: E402
from sdk.targets.emulator import Preload  # noqa: E402
from sdk.targets.run import make_target  # noqa: E402

# The FVP parameters this stand-in knows (a subset of the FVP's), with their defaults.
PARAMETERS = {
    "ethosu.num_macs": "128",
    "mps3_board.visualisation.disable-visualisation": "0",
    "mps3_board.telnetterminal0.start_telnet": "1",
    "mps3_board.telnetterminal0.mode": "telnet",
    "mps3_board.telnetterminal0.start_port": "5000",
    "mps3_board.uart0.out_file": "",
    "mps3_board.uart0.shutdown_on_eot": "0",
    "cpu0.semihosting-enable": "0",
    "cpu0.semihosting-cwd": "",
}
NUM_MACS = ("32", "64", "128", "256")


def fail(message: str) -> None:
    print(f"ERROR: {message}", flush=True)
    sys.exit(1)


def parse(argv: list[str]) -> tuple[dict[str, str], Path, list[Preload], float | None]:
    params = dict(PARAMETERS)
    elf: Path | None = None
    preloads: list[Preload] = []
    timelimit = None
    args = iter(argv)
    for arg in args:
        value = next(args, None) if arg in ("-C", "-a", "--data", "--timelimit") else None
        if arg in ("-C", "-a", "--data", "--timelimit") and value is None:
            fail(f"option {arg} needs a value")
        if arg == "-C":
            name, sep, setting = value.partition("=")
            if not sep or name not in PARAMETERS:
                fail(f"Parameter '{name}' not found (stand-in: unknown to it)")
            params[name] = setting
        elif arg == "-a":
            elf = Path(value)
        elif arg == "--data":
            file, sep, address = value.rpartition("@")
            if not sep:
                fail(f"--data {value}: expected FILE@ADDRESS")
            preloads.append(Preload(Path(file), int(address, 0)))
        elif arg == "--timelimit":
            timelimit = float(value)
        else:
            fail(f"unknown option {arg}")
    if elf is None:
        fail("no application (-a ELF)")
    if params["ethosu.num_macs"] not in NUM_MACS:
        fail(f"ethosu.num_macs={params['ethosu.num_macs']}: one of {', '.join(NUM_MACS)}")
    if params["mps3_board.telnetterminal0.mode"] != "raw":
        fail("stand-in: telnet mode's handshake is not modelled; use mode=raw")
    if params["mps3_board.telnetterminal0.start_telnet"] != "0":
        fail("stand-in: starting a telnet client is not modelled; use start_telnet=0")
    return params, elf, preloads, timelimit


def listen_from(port: int) -> socket.socket:
    """A listening socket on the first free port at or above `port`, as the FVP takes it."""
    for candidate in range(port, port + 1000):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind(("127.0.0.1", candidate))
        except OSError:
            sock.close()
            continue
        sock.listen(1)
        return sock
    fail(f"no free port from {port}")
    raise AssertionError


def main(argv: list[str]) -> int:
    params, elf, preloads, timelimit = parse(argv)
    listener = listen_from(int(params["mps3_board.telnetterminal0.start_port"]))
    fd = listener.fileno()
    out_file = params["mps3_board.uart0.out_file"] or os.devnull
    command = [
        arg.replace("{fd}", str(fd)).replace("{console_log}", out_file)
        for arg in make_target("qemu", load_board("corstone300")).strategy.power.link_command(
            elf, preloads
        )
    ]
    cwd = params["cpu0.semihosting-cwd"] or None
    port = listener.getsockname()[1]
    qemu = subprocess.Popen(command, pass_fds=[fd], cwd=cwd, stdin=subprocess.DEVNULL)
    listener.close()  # QEMU holds its own copy
    print(f"telnetterminal0: Listening for serial connection on port {port}", flush=True)
    if timelimit is not None:
        timer = threading.Timer(timelimit, lambda: qemu.send_signal(signal.SIGTERM))
        timer.daemon = True
        timer.start()
    return qemu.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
