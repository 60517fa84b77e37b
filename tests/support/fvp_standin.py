"""A STAND-IN for Arm's Corstone FVPs, which cannot be installed here: it takes the FVP's
command line and serves UART0's link from something that runs here.

  - Corstone-300 (FVP_Corstone_SSE-300_Ethos-U55, the default): the firmware runs on QEMU.
  - Corstone-320 (FVP_Corstone_SSE-320, `--as corstone320` before the FVP's arguments): no QEMU
    runs an M85, so the stand-in checks that the ELF boots where the SSE-320 resets (a vector
    table at INITSVTOR 0x11000000 whose reset handler lies in a loaded executable segment)
    and serves the link from the host build's link server (build/host/host_link, reporting
    board corstone320, NPU ethos-u85-<num_macs>): the same firmware/link code, kernels and
    Ethos-U driver (in its U85 register layout), but not the M85 image, and no NPU: the
    link's virtual U85 answers the driver (sdk.ethosu.device.VirtualU85, the functional U85
    running Vela's command stream). Its port is the one host_link picked, not the first free
    one from start_port; --data is refused (not modelled).

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
    python tests/support/fvp_standin.py --as corstone320 -C mps4_board.telnetterminal0.mode=raw ...
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
# FVP_Corstone_SSE-320's (ExecuTorch's run_fvp.sh, Zephyr's mps4 board.cmake): the subsystem's
# components under mps4_board.subsystem., the HDLCD's visualisation beside the board's.
PARAMETERS_320 = {
    "mps4_board.subsystem.ethosu.num_macs": "256",
    "mps4_board.visualisation.disable-visualisation": "0",
    "vis_hdlcd.disable_visualisation": "0",
    "mps4_board.telnetterminal0.start_telnet": "1",
    "mps4_board.telnetterminal0.mode": "telnet",
    "mps4_board.telnetterminal0.start_port": "5000",
    "mps4_board.uart0.out_file": "",
    "mps4_board.uart0.shutdown_on_eot": "0",
    "mps4_board.subsystem.cpu0.semihosting-enable": "0",
    "mps4_board.subsystem.cpu0.semihosting-cwd": "",
}
NUM_MACS_320 = ("128", "256", "512", "1024", "2048")
INITSVTOR_320 = 0x11000000  # the SSE-320's reset vector table base (BROM)
HOST_LINK = REPO / "build" / "host" / "host_link"


def fail(message: str) -> None:
    print(f"ERROR: {message}", flush=True)
    sys.exit(1)


def parse(
    argv: list[str], known: dict[str, str] = PARAMETERS
) -> tuple[dict[str, str], Path, list[Preload], float | None]:
    params = dict(known)
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
            if not sep or name not in known:
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
    board, macs, num_macs = (
        ("mps4_board", "mps4_board.subsystem.ethosu.num_macs", NUM_MACS_320)
        if known is PARAMETERS_320
        else ("mps3_board", "ethosu.num_macs", NUM_MACS)
    )
    if params[macs] not in num_macs:
        fail(f"{macs}={params[macs]}: one of {', '.join(num_macs)}")
    if params[f"{board}.telnetterminal0.mode"] != "raw":
        fail("stand-in: telnet mode's handshake is not modelled; use mode=raw")
    if params[f"{board}.telnetterminal0.start_telnet"] != "0":
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


def check_boots_at(elf: Path, vector_base: int) -> None:
    """The ELF is an Arm executable with a vector table at `vector_base` (initial SP, then a
    Thumb reset handler inside a loaded executable segment), as the CPU reads it at reset."""
    from elftools.elf.elffile import ELFFile

    with elf.open("rb") as f:
        image = ELFFile(f)
        if image["e_machine"] != "EM_ARM":
            fail(f"{elf}: not an Arm ELF ({image['e_machine']})")
        loads = [s for s in image.iter_segments() if s["p_type"] == "PT_LOAD" and s["p_filesz"]]
        table = next(
            (s for s in loads if s["p_paddr"] <= vector_base < s["p_paddr"] + s["p_filesz"] - 8),
            None,
        )
        if table is None:
            fail(f"{elf}: nothing loaded at the reset vector base 0x{vector_base:08x}")
        words = table.data()[vector_base - table["p_paddr"] :][:8]
        reset = int.from_bytes(words[4:8], "little")
        code = [s for s in loads if s["p_flags"] & 1]  # PF_X
        if not reset & 1 or not any(
            s["p_vaddr"] <= reset - 1 < s["p_vaddr"] + s["p_filesz"] for s in code
        ):
            fail(f"{elf}: reset vector 0x{reset:08x} is not Thumb code of the image")


def serve_host_link(params: dict[str, str], elf: Path, preloads: list[Preload]) -> int:
    """Corstone-320: the ELF checked, the link served by the host build's link server."""
    if preloads:
        fail("stand-in (corstone320): --data is not modelled")
    check_boots_at(elf, INITSVTOR_320)
    if not HOST_LINK.is_file():
        fail(f"stand-in: {HOST_LINK} not built (scons host=1)")
    out_file = params["mps4_board.uart0.out_file"]
    if out_file:
        Path(out_file).touch()
    # The FVP's NPU as the firmware's INFO names it: the board's kind, the MACs asked for; the
    # host build's driver takes its register layout from it (the U85's).
    macs = params["mps4_board.subsystem.ethosu.num_macs"]
    npu_config = f"{load_board('corstone320').npu_kind}-{macs}"
    command = [
        str(HOST_LINK), "--board", "corstone320", "--npu-config", npu_config,
        "--listen", "127.0.0.1:0",
    ]  # fmt: skip
    server = subprocess.Popen(command, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    assert server.stderr is not None
    line = server.stderr.readline()
    if not line.startswith("listening on 127.0.0.1:"):
        fail(f"host_link did not listen: {line!r}")
    port = int(line.rsplit(":", 1)[1])
    print(f"telnetterminal0: Listening for serial connection on port {port}", flush=True)
    for rest in server.stderr:  # its sanitizers' words, on the FVP's output
        print(rest, end="", flush=True)
    return server.wait()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--as"]:
        if argv[1:2] != ["corstone320"]:
            fail(f"stand-in: --as {argv[1:2]}: only corstone320")
        params, elf, preloads, _ = parse(argv[2:], PARAMETERS_320)
        return serve_host_link(params, elf, preloads)
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
