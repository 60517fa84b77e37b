"""Host time of the command-stream executor on streams of many operations: decode, then a run.

For every Ethos-U delegate of the given programs: the time to parse and decode its payload, the
time of one run on random inputs in range (runs of like operations batched, the default), and
with --check the same run one operation at a time
(sdk.ethosu.functional.execute.BATCH_ELEMENTS 0) and
whether the two outputs are bit-identical. Host wall-clock time on a shared machine: a rough
figure, not a measurement of anything the NPU does. bench/npu_executor_bench.py breaks a run
down by operation kind instead.

    .venv/bin/python bench/npu_executor_speed.py OUT/model.pte [...] [--check]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    from sdk.ethosu.functional import execute as npu_execute
    from sdk.program.pte import load_program
    from sdk.reference.command_stream import CommandStreamExecutor

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programs", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="also one by one, and compare")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    same = True
    for path in args.programs:
        program = load_program(path)
        executor = CommandStreamExecutor(program)
        for index in range(len(program.plan.delegates)):
            started = time.perf_counter()
            io = executor.io(index)
            decoded = time.perf_counter() - started
            feeds = [
                rng.integers(np.iinfo(t.dtype).min, np.iinfo(t.dtype).max, t.shape, t.dtype)
                for t in io.inputs
            ]
            started = time.perf_counter()
            outputs = executor.run(index, feeds)
            batched = time.perf_counter() - started
            line = (
                f"{path} delegate {index}: {len(executor.trace)} operations, decode "
                f"{decoded:.2f} s, run {batched:.2f} s"
            )
            if args.check:
                limit = npu_execute.BATCH_ELEMENTS
                npu_execute.BATCH_ELEMENTS = 0
                try:
                    started = time.perf_counter()
                    single = executor.run(index, feeds)
                    one_by_one = time.perf_counter() - started
                finally:
                    npu_execute.BATCH_ELEMENTS = limit
                equal = all(np.array_equal(a, b) for a, b in zip(outputs, single, strict=True))
                same = same and equal
                line += f", one by one {one_by_one:.2f} s, {'bit-identical' if equal else 'DIFFER'}"
            print(line)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
