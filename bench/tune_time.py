"""How long `sdk deploy --optimize latency` takes on MLPerf Tiny's DS-CNN (docs/tuning.md), from
an empty SDK cache (every candidate exported, the firmware built), as a user's first tuning:
the wall and CPU time of the command, the candidates tried, the chosen one and its latency.
Extra arguments go to the deploy (e.g. `--io auto --input-layout auto`: every interface too).

    PYTHONPATH=. python bench/tune_time.py [OUTDIR] [deploy args ...]
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = "examples/mlperf_tiny.py:DsCnn"


def main(outdir: Path, extra: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="tune-time-cache-") as cache:
        env = {**os.environ, "SDK_CACHE_DIR": cache}
        command = [sys.executable, "-m", "sdk.cli.main", "deploy", MODEL, "--optimize", "latency",
                   "--target", "qemu", "--quiet", "-o", str(outdir), *extra]  # fmt: skip
        start = time.monotonic()
        subprocess.run(command, env=env, check=True)
        wall = time.monotonic() - start
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    tuning = json.loads((outdir / "deploy.json").read_text())
    final = tuning["tuning"]["final_deploy"]
    print(f"{MODEL} {' '.join(extra)}: {len(tuning['tuning']['trials'])} candidates in "
          f"{wall:.0f} s wall, {used.ru_utime + used.ru_stime:.0f} s CPU; chosen "
          f"{tuning['tuning']['chosen']}, latency {final['latency_ms']:.3f} ms")  # fmt: skip


if __name__ == "__main__":
    args = sys.argv[1:]
    outdir = Path(args[0]) if args and not args[0].startswith("-") else Path("/tmp/tune-time")
    main(outdir, args[1:] if args and not args[0].startswith("-") else args)
