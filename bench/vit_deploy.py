"""The tiny DeiT-style ViT (tests/deploy/models/vit_tiny.py, issue 42) deployed on QEMU in
INT16 and INT8, and INT8 with the user's `--cpu-op aten.bmm`: each one's verdict, whether every
delegate (two share one payload) has its own TOSA and timing, and Vela's workarounds. The test
suite deploys INT8 alone (tests/deploy/test_vit_tiny.py); these take minutes each.

    PYTHONPATH=. python bench/vit_deploy.py [OUTDIR]
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

from sdk.deploy.pipeline import deploy

VIT = Path(__file__).resolve().parents[1] / "tests" / "deploy" / "models" / "vit_tiny.py"
CASES = {"int16": ("int16", None), "int8": ("int8", None), "int8-cpu-bmm": ("int8", ["aten.bmm"])}


def main(outdir: Path) -> int:
    os.environ.setdefault("SDK_FVP", str(outdir / "no-fvp"))  # QEMU, as `auto` picks here
    failed = 0
    for name, (quant, cpu_ops) in CASES.items():
        start = time.monotonic()
        report = deploy(
            str(VIT), board="corstone300", quant=quant, cpu_ops=cpu_ops, outdir=outdir / name
        )
        data = report.to_json()
        export = json.loads((Path(data["files"]["program"]).parent / "report.json").read_text())
        delegates = export["delegates"]
        shared = sum(n > 1 for n in Counter(d["payload_sha256"] for d in delegates).values())
        timed = sum(t["what"].startswith("NPU delegate ") for t in data["timing"])
        identical = all(o["host_reference"]["identical"] for o in data["outputs"])
        workarounds = [w["cpu_op"] for w in export["vela_workarounds"]]
        print(
            f"{name:14} {'PASSED' if data['passed'] else 'FAILED':7} target = host reference: "
            f"{identical}; {len(delegates)} delegates ({shared} payload(s) shared), {timed} "
            f"timed; Vela workarounds {workarounds or 'none'}; {time.monotonic() - start:.0f} s"
        )
        if not data["passed"]:
            failed += 1
            print(f"{'':14} {data['failure']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/vit-bench")))
