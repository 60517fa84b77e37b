"""MLPerf Tiny's four models (examples/mlperf_tiny.py) through `sdk deploy` at INT8 and INT16
(a16w8): the README table. Figures, not a test (tests/deploy/test_mlperf_tiny.py checks that
they deploy).

Per model and mode: the verdict, SNR of the device's output vs the fp32 model, Vela's cycle
estimate for the NPU part, the CPU's instructions (QEMU -icount), the program's size, its
planned arena and the NPU scratch.

    .venv/bin/python bench/mlperf_tiny.py [--quant int8 int16] [--target auto]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples"))


def deploy(name: str, quant: str, target: str, out: Path) -> dict:
    report = out / f"{name}-{quant}.json"
    command = [
        str(Path(sys.executable).with_name("sdk")), "deploy", f"examples/mlperf_tiny.py:{name}",
        "--quant", quant, "--target", target, "-o", str(out / f"{name}-{quant}"),
        "--json", str(report), "--quiet",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    if not report.is_file():
        return {"passed": False, "failure": (done.stderr or done.stdout).strip()[-300:]}
    return json.loads(report.read_text())


def figure(report: dict, what: str, source: str) -> str:
    for entry in report.get("timing", []):
        if entry["what"] == what and entry["source"].startswith(source) and entry["value"]:
            return f"{int(entry['value']):,}"
    return "-"


def region(report: dict, name: str) -> str:
    regions = report.get("memory", {}).get("regions", [])
    used = [r["used"] for r in regions if r["region"] == name and r["source"] != "ELF"]
    return f"{max(used):,}" if used else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quant", nargs="+", default=["int8", "int16"])
    parser.add_argument("--target", default="auto")
    args = parser.parse_args()
    from mlperf_tiny import MODELS

    out = Path(tempfile.mkdtemp(prefix="mlperf-tiny-"))
    print("| model | quant | verdict | SNR vs fp32 (dB) | Vela NPU cycles | CPU instructions "
          "| program B | planned arena B | NPU scratch B |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for name in MODELS:
        for quant in args.quant:
            r = deploy(name, quant, args.target, out)
            snr = [o["fp32"]["snr_db"] for o in r.get("outputs", [])]
            snr_text = ", ".join(f"{s:.1f}" for s in snr if s is not None) or "-"
            verdict = "passed" if r.get("passed") else f"FAILED: {r.get('failure')}"
            print(f"| {name} | {quant} | {verdict} | {snr_text} "
                  f"| {figure(r, 'NPU delegates', 'Vela')} | {figure(r, 'CPU', 'QEMU')} "
                  f"| {region(r, 'slot:program')} | {region(r, 'slot:planned')} "
                  f"| {region(r, 'slot:scratch')} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
