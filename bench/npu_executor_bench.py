"""Host time of the command-stream executor (sdk/ethosu/functional/execute.py): per MAC and
per program.

Runs every Ethos-U delegate of the given programs on the command-stream executor (random
inputs in range, a warm-up run first so the weight streams are decoded once, as in repeated
runs), then prints per delegate the wall time, the convolution MACs, the time per MAC of
CONV/DEPTHWISE, and the time by operation kind. Host wall-clock time on a shared machine:
a rough figure, not a measurement of anything the NPU does.

    .venv/bin/python bench/npu_executor_bench.py OUT/model.pte [...] [--runs 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    from sdk.program.pte import load_program
    from sdk.reference.command_stream import CommandStreamExecutor

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programs", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for path in args.programs:
        program = load_program(path)
        executor = CommandStreamExecutor(program)
        for index in range(len(program.plan.delegates)):
            io = executor.io(index)
            feeds = [
                rng.integers(np.iinfo(t.dtype).min, np.iinfo(t.dtype).max, t.shape, t.dtype)
                for t in io.inputs
            ]
            executor.run(index, feeds)  # warm-up: weight streams decoded
            started = time.perf_counter()
            by_kind: dict[str, float] = defaultdict(float)
            for _ in range(args.runs):
                executor.run(index, feeds)
                for entry in executor.trace:
                    by_kind[f"{entry.kind} {entry.mode}".strip()] += entry.seconds / args.runs
            seconds = (time.perf_counter() - started) / args.runs
            macs = sum(e.macs for e in executor.trace)
            conv = by_kind.get("CONV", 0.0) + by_kind.get("DEPTHWISE", 0.0)
            per_mac = f"{conv / macs * 1e9:.2f} ns/MAC (conv+depthwise)" if macs else "no MACs"
            print(
                f"{path} delegate {index}: {len(executor.trace)} ops, {seconds * 1e3:.1f} ms, "
                f"{macs} MACs, {per_mac}"
            )
            for kind, spent in sorted(by_kind.items(), key=lambda kv: -kv[1]):
                print(f"    {kind:24s} {spent * 1e3:8.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
