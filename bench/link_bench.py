"""Host-link throughput and latency on QEMU (UART0 on a TCP socket, docs/link.md).

    .venv/bin/python bench/link_bench.py [--kib 256] [--runs 100]

Measured in one QEMU session, so each payload figure has the raw rate of the same link beside
it: raw = LINK_TEST (unframed bytes, no acknowledgements); payload = SET_INPUT / GET_OUTPUT of
a tensor of the same size (framed, CRC, stop-and-wait acknowledgements). Goal: payload >= 0.8
of raw each way. Also the round-trip time of an empty RUN (a one-op program). Figures, not a
test: nothing here can fail but the link itself.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sdk.firmware.boards import load_board
from sdk.firmware.build import build_firmware
from sdk.program.pte import load_program
from sdk.targets.base import RunOptions
from sdk.targets.linked import run_linked
from sdk.targets.run import make_target

GOAL = 0.8


def export(module, example, path: Path) -> Path:
    import torch
    from executorch.exir import to_edge_transform_and_lower

    exported = torch.export.export(module, example)
    path.write_bytes(to_edge_transform_and_lower(exported).to_executorch().buffer)
    return path


def programs(folder: Path, kib: int) -> tuple[Path, Path]:
    import torch

    class Double(torch.nn.Module):
        def forward(self, x):
            return x * 2.0

    big = export(Double(), (torch.randn(kib * 256),), folder / "big.pte")
    tiny = export(Double(), (torch.randn(4),), folder / "tiny.pte")
    return big, tiny


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="corstone300")
    parser.add_argument("--kib", type=int, default=256, help="payload size each way")
    parser.add_argument("--runs", type=int, default=100, help="empty RUNs timed")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="link-bench-"))
    big, tiny = programs(folder, args.kib)
    board = load_board(args.board)
    strategy = make_target("qemu", board).strategy
    elf = build_firmware(board.name, big, folder / "fw.elf")
    nbytes = args.kib * 1024
    data = np.random.default_rng(0).standard_normal(nbytes // 4).astype(np.float32)
    with strategy.up(RunOptions(firmware=elf, workdir=folder / "qemu")) as up:
        session = up.session
        info = session.connect()
        big_program = load_program(big)
        run_linked(session, big_program, [data])  # loads it; warms up both directions

        raw_in, _ = session.link_test_sink(nbytes)
        start = time.monotonic()
        session.set_input(0, data, int(big_program.inputs()[0].scalar_type))
        payload_in = time.monotonic() - start

        raw_out = session.link_test_source(nbytes)
        session.run(1)
        start = time.monotonic()
        session.get_output(0)
        payload_out = time.monotonic() - start

        tiny_program = load_program(tiny)
        run_linked(session, tiny_program, [np.ones(4, np.float32)])
        times = []
        for _ in range(args.runs):
            start = time.monotonic()
            session.run(1)
            times.append(time.monotonic() - start)

    def rate(seconds: float) -> str:
        return f"{nbytes / seconds / 1024:8.1f} KiB/s"

    print(f"link: QEMU {board.name}, UART0 on TCP; max payload {info.max_payload} B per frame")
    print(f"payload {args.kib} KiB each way")
    for name, raw, payload in (
        ("host -> target", raw_in, payload_in),
        ("target -> host", raw_out, payload_out),
    ):
        fraction = raw / payload
        verdict = "meets" if fraction >= GOAL else "MISSES"
        print(
            f"  {name}: raw {rate(raw)}, payload {rate(payload)}: {fraction:.2f} of raw "
            f"({verdict} the {GOAL} goal)"
        )
    print(
        f"empty RUN round trip: median {statistics.median(times) * 1e3:.2f} ms, "
        f"min {min(times) * 1e3:.2f} ms, max {max(times) * 1e3:.2f} ms over {args.runs} runs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
