"""Fuzzing as a bench: each host libFuzzer target for N seconds from a corpus cut from real
programs, and what it reached. Run on demand, not a test; exits 1 when a target crashed.

    .venv/bin/python bench/fuzz.py [--seconds 60] [--targets link program vela]
        [--quant int8 int16] [--programs build/fuzz/programs]

Builds the host targets (`scons host=1`, clang for the libFuzzer builds), exports every
example (examples/*.py) and zoo model (tests/export/models/*.py) once per quantization mode
into --programs (a rerun reuses them), then seeds each target: `program` and `vela` take the
.pte files (the Vela target cuts the Ethos-U payloads out itself), `link` takes the scripts
the plain fuzz_link makes from them (`--write-seeds`: connect, load, set inputs, run, answer
the virtual U55's register exchanges, read outputs). Each target runs in a fresh corpus folder
with the seeds beside it; the table gives its runs, coverage (edges) at start and end, corpus
entries and crashes (crash-/leak-/timeout-/oom- files, or a non-zero exit).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOST = REPO / "build" / "host"
MODELS = sorted([*(REPO / "examples").glob("*.py"), *(REPO / "tests/export/models").glob("*.py")])
TARGETS = ("link", "program", "vela")
BINARY = {t: HOST / f"fuzz_{'vela_payload' if t == 'vela' else t}_libfuzzer" for t in TARGETS}
ARTIFACTS = ("crash-", "leak-", "timeout-", "oom-")
sys.path.insert(0, str(REPO))


@dataclass
class Outcome:
    """One target's run, as libFuzzer reported it."""

    target: str
    seeds: int
    runs: int
    cov_start: int
    cov_end: int
    corpus: int
    crashes: int
    status: int


def build() -> None:
    from sdk.firmware.build import scons_command

    result = subprocess.run([*scons_command(), "-C", str(REPO), "-j2", "host=1"], text=True,
                            capture_output=True)  # fmt: skip
    if result.returncode != 0:
        sys.exit(f"scons host=1 failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    missing = [str(b) for b in BINARY.values() if not b.is_file()]
    if missing:
        sys.exit(f"not built (is clang++ installed?): {', '.join(missing)}")


def export_programs(folder: Path, quants: list[str]) -> list[Path]:
    """Every model in every mode, exported once: FOLDER/<model>_<quant>/model.pte."""
    from sdk.errors import SdkError
    from sdk.export.pipeline import PROGRAM_FILE, export_model

    made = []
    for model in MODELS:
        for quant in quants:
            outdir = folder / f"{model.stem}_{quant}"
            if not (outdir / PROGRAM_FILE).is_file():
                print(f"# exporting {model.relative_to(REPO)} ({quant})", flush=True)
                try:
                    export_model(str(model), outdir, quant=quant)
                except SdkError as exc:
                    print(f"#   skipped: {exc}", flush=True)
                    continue
            made.append(outdir / PROGRAM_FILE)
    return made


def make_seeds(target: str, programs: list[Path], seeds: Path) -> int:
    seeds.mkdir(parents=True)
    if target == "link":
        command = [str(HOST / "fuzz_link"), "--write-seeds", str(seeds), *map(str, programs)]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"fuzz_link --write-seeds failed: {result.stderr[-2000:]}")
    else:
        for pte in programs:
            shutil.copyfile(pte, seeds / f"{pte.parent.name}.pte")
    return len(list(seeds.iterdir()))


def last_int(pattern: str, text: str) -> int:
    found = re.findall(pattern, text)
    return int(found[-1]) if found else -1


def run_target(target: str, programs: list[Path], seconds: int, workdir: Path) -> Outcome:
    here = workdir / target
    seeds = make_seeds(target, programs, here / "seeds")
    (here / "corpus").mkdir()
    (here / "artifacts").mkdir()
    command = [
        str(BINARY[target]), f"-max_total_time={seconds}", "-print_final_stats=1", "-timeout=25",
        f"-artifact_prefix={here / 'artifacts'}/", str(here / "corpus"), str(here / "seeds"),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True)
    (here / "libfuzzer.log").write_text(result.stderr)
    crashes = [p for p in (here / "artifacts").iterdir() if p.name.startswith(ARTIFACTS)]
    log = result.stderr
    return Outcome(
        target=target,
        seeds=seeds,
        runs=last_int(r"stat::number_of_executed_units:\s*(\d+)", log),
        cov_start=last_int(r"INITED cov: (\d+)", log),
        cov_end=last_int(r"cov: (\d+)", log),
        corpus=last_int(r"corp: (\d+)/", log),
        crashes=max(len(crashes), 1 if result.returncode != 0 else 0),
        status=result.returncode,
    )


def table(outcomes: list[Outcome], seconds: int) -> str:
    lines = [
        f"| target ({seconds} s) | seeds | runs | cov at start | cov (edges) | corpus | crashes |",
        "|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        lines.append(f"| {o.target} | {o.seeds} | {o.runs} | {o.cov_start} | {o.cov_end} "
                     f"| {o.corpus} | {o.crashes} |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=60, help="per target")
    parser.add_argument("--targets", nargs="+", default=list(TARGETS), choices=TARGETS)
    parser.add_argument("--quant", nargs="+", default=["int8", "int16"])
    parser.add_argument("--programs", type=Path, default=REPO / "build" / "fuzz" / "programs",
                        help="exported programs, kept for the next run")  # fmt: skip
    parser.add_argument("--keep", type=Path, help="keep corpora and logs here (else a tmp dir)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    build()
    programs = export_programs(args.programs, args.quant)
    if not programs:
        sys.exit("no program exported")
    print(f"# {len(programs)} programs from {args.programs}", flush=True)
    with tempfile.TemporaryDirectory(prefix="fuzz-bench-") as tmp:
        workdir = args.keep or Path(tmp)
        outcomes = []
        for target in args.targets:
            if (workdir / target).exists():
                shutil.rmtree(workdir / target)  # a fresh corpus each run
            outcome = run_target(target, programs, args.seconds, workdir)
            print(f"# {target}: exit {outcome.status}", flush=True)
            outcomes.append(outcome)
        print(table(outcomes, args.seconds))
    return 1 if any(o.crashes for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
