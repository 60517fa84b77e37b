"""Wall time of a first and a second `sdk deploy` of the example model (goal: second/first
<= 0.1). Figures, not a test.

The first deploy is what a new user meets: an empty cache and a fresh SCons object folder
(so the firmware is compiled from scratch). The second is the same command again: the program
and the firmware come from the cache; it still runs on the target and checks the outputs.
`--warm-build` keeps the repository's object folder for the first deploy (an existing user
deploying a new model).

    .venv/bin/python bench/deploy_bench.py [--model examples/yolo_attention.py] [--quant int16]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def deploy(model: str, quant: str, env: dict, workdir: Path, n: int) -> tuple[float, dict]:
    report = workdir / f"deploy{n}.json"
    command = [
        str(Path(sys.executable).with_name("sdk")), "deploy", "--board", "corstone300", model,
        "--quant", quant, "-o", str(workdir / "out"), "--json", str(report), "--quiet",
    ]  # fmt: skip
    start = time.monotonic()
    result = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(f"deploy {n} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return seconds, json.loads(report.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="examples/yolo_attention.py")
    parser.add_argument("--quant", default="int16")
    parser.add_argument("--warm-build", action="store_true", help="keep build/ for the first")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="deploy-bench-") as tmp:
        workdir = Path(tmp)
        env = {**os.environ, "SDK_CACHE_DIR": str(workdir / "cache")}
        if not args.warm_build:
            env["SDK_BUILD_DIR"] = str(workdir / "build")
        runs = [deploy(args.model, args.quant, env, workdir, n) for n in (1, 2)]
    (first, r1), (second, r2) = runs
    print(f"model {args.model} ({args.quant}) on {r1['target']['name']}; first deploy with "
          f"{'the existing' if args.warm_build else 'a fresh'} SCons object folder")  # fmt: skip
    for label, seconds, report in (("first", first, r1), ("second", second, r2)):
        steps = ", ".join(
            f"{s['name']} {s['seconds']:.1f} s ({s['status']})" for s in report["steps"]
        )
        print(f"  {label:6} {seconds:6.1f} s wall: {steps}")
    print(f"  second/first = {second / first:.3f} (goal <= 0.1)")
    overhead = second - sum(s["seconds"] for s in r2["steps"])
    print(f"  second deploy outside its steps (Python start, imports): {overhead:.1f} s")


if __name__ == "__main__":
    main()
