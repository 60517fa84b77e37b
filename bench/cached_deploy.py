"""What a cached `sdk deploy` costs over a bare `sdk run` of the same program (goal: at most
+0.3 s, best of N each, same machine, one sitting). Figures, not a test.

The deploy runs once to fill the cache, then N times from it; `sdk run --target qemu` runs the
cached program on the same inputs N times (each a process, a QEMU boot, a load and a run, as
the deploy's run step). Printed: best and median wall times, the difference, and where a
cached deploy's time goes (its steps from deploy.json, and the process around them).

    .venv/bin/python bench/cached_deploy.py [--model examples/yolo_attention.py] [--quant int16]
        [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SDK = str(Path(sys.executable).with_name("sdk"))


def timed(command: list[str]) -> float:
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(f"{' '.join(command[:2])} failed: {result.stderr.strip()[-2000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="examples/yolo_attention.py")
    parser.add_argument("--quant", default="int16")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        report = work / "deploy.json"
        deploy = [SDK, "deploy", args.model, "--quant", args.quant, "--target", "qemu",
                  "-o", str(work / "out"), "--json", str(report), "--quiet"]  # fmt: skip
        timed(deploy)  # fills the cache (or finds it full)
        data = json.loads(report.read_text())
        program = data["files"]["program"]
        inputs = Path(program).parents[1] / "inputs.npz"
        run = [SDK, "run", "--target", "qemu", program, "--inputs", str(inputs),
               "-o", str(work / "run.npz")]  # fmt: skip
        deploys, runs, steps = [], [], []
        for _ in range(args.repeat):  # interleaved: both see the same machine
            deploys.append(timed(deploy))
            steps.append(json.loads(report.read_text())["steps"])
            runs.append(timed(run))
    best_deploy, best_run = min(deploys), min(runs)
    print(f"{args.model} --quant {args.quant}, best of {args.repeat} (median)")
    print(f"  cached sdk deploy {best_deploy:6.2f} s ({statistics.median(deploys):.2f})")
    print(f"  bare sdk run      {best_run:6.2f} s ({statistics.median(runs):.2f})")
    print(f"  overhead          {best_deploy - best_run:+6.2f} s (goal <= +0.30)")
    fastest = steps[deploys.index(best_deploy)]
    in_steps = sum(s["seconds"] for s in fastest)
    print("  the fastest deploy's steps:")
    for step in fastest:
        print(f"    {step['name']:10s} {step['seconds']:6.2f} s  {step['status']}")
    print(f"    {'(process)':10s} {best_deploy - in_steps:6.2f} s  start-up, reports, exit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
