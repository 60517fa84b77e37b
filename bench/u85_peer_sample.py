"""ExecuTorch's own Ethos-U85 INT tests (the wheel's), run in the functional U85 model.

The wheel's `*_u85_INT*` cases are collected as bench/peer_suite.py collects the U55's (recording
stand-ins for its pipelines, no ExecuTorch tester). Each case is exported for ethos-u85-128 (what
the wheel's tests compile for) with the case's quantization, and every delegate's Vela command
stream runs in sdk.ethosu.functional.execute_u85 against the TOSA reference model on the same
random integer inputs. There is no FVP for the U85 here: this is what checks its streams.

Outcomes: pass (every output bit-identical, two input seeds), mismatch (some element differs:
an error in the model), refused (the model names a command it does not model), cpu (nothing
delegated: nothing to compare), export (the export failed: ExportError's first clause),
traceback (any other exception: an SDK bug).

    PYTHONPATH=$PWD .venv/bin/python bench/u85_peer_sample.py [--sample N] [--seed S]
        [--match TEXT] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
NPU = "ethos-u85-128"
OUTCOMES = ("pass", "mismatch", "refused", "cpu", "export", "traceback")
REFUSED = "is not supported by the command-stream executor"
INPUT_SEEDS = (0, 1)


@dataclass
class U85Outcome:
    case: str
    quant: str
    outcome: str
    detail: str = ""
    ops: set[tuple[str, str]] = field(default_factory=set)  # (kind, mode) of what ran
    seconds: float = 0.0


def runnable_cases(match: str | None = None) -> list:
    """The wheel's U85 INT cases that ExecuTorch does not mark xfail/skip, in collection order."""
    from bench.peer_suite import collect

    cases = collect(first=False, match=match, npu="u85")
    return [c for c in cases if c.kind == "int" and not (c.collect_error or c.et_xfail)]


def sample(cases: list, n: int, seed: int) -> list:
    """`n` of `cases` drawn with `seed`, in collection order."""
    drawn = random.Random(seed).sample(range(len(cases)), min(n, len(cases)))
    return [cases[i] for i in sorted(drawn)]


def random_inputs(io, seed: int) -> list[np.ndarray]:
    """Full-range integers of each input's dtype (the NPU sees integers only)."""
    rng = np.random.default_rng(seed)
    return [
        rng.integers(
            np.iinfo(t.dtype).min, np.iinfo(t.dtype).max, size=t.shape, dtype=t.dtype, endpoint=True
        )
        for t in io.inputs
    ]


def compare(program_path: Path) -> tuple[list[tuple[int, int]], set[tuple[str, str]]]:
    """(differing elements, max difference) per delegate output and input seed; the ops run."""
    from sdk.program.pte import load_program
    from sdk.program.tosa_file import find_tosa
    from sdk.reference.command_stream import CommandStreamExecutor
    from sdk.reference.executor import TosaExecutor

    program = load_program(program_path)
    tosa, ours = TosaExecutor(find_tosa(program)), CommandStreamExecutor(program)
    found: list[tuple[int, int]] = []
    ran: set[tuple[str, str]] = set()
    for index in range(len(program.plan.delegates)):
        for seed in INPUT_SEEDS:
            feeds = random_inputs(tosa.io(index), seed + 17 * index)
            expected, got = tosa.run(index, feeds), ours.run(index, feeds)
            ran |= {(t.kind, t.mode) for t in ours.trace}
            for want, have in zip(expected, got, strict=True):
                have = np.asarray(have).reshape(want.shape)
                if want.dtype == np.bool_:  # by bytes: a bool leaving the NPU must be 0 or 1
                    have = have.view(np.uint8) if have.dtype.itemsize == 1 else have
                have = have.astype(np.int64)
                diff = np.abs(want.astype(np.int64) - have)
                found.append((int((diff > 0).sum()), int(diff.max(initial=0))))
    return found, ran


def export(case, outdir: Path, seed: int = 0) -> Path:
    """The case's module and inputs (peer_suite.rebuild) exported for ethos-u85-128."""
    from bench.peer_suite import rebuild
    from sdk.ethosu.config import NpuConfig, QuantMode
    from sdk.export.model_loader import LoadedModel
    from sdk.export.pipeline import lower, quantize
    from sdk.export.quant_options import QuantOptions

    module, inputs = rebuild(case.test_module, case.function, case.ids, seed)
    loaded = LoadedModel(module.eval(), inputs, None, case.function, outdir / "model.py")
    options = QuantOptions(weights=case.weights, io=case.io, modules=case.modules)
    quantized = quantize(loaded, NpuConfig(NPU), QuantMode(case.quant), options=options)
    return lower(quantized, outdir).program_path


def run_case(case, workdir: Path) -> U85Outcome:
    """Export one case and compare its command streams with the TOSA reference."""
    from bench.peer_suite import one_line, traceback_detail
    from sdk.errors import ExportError, ProgramError
    from sdk.program.pte import load_program

    out = U85Outcome(case.name, case.quant, "pass")
    start = time.monotonic()
    try:
        program_path = export(case, workdir)
        if not load_program(program_path).plan.delegates:
            out.outcome = "cpu"
        else:
            found, out.ops = compare(program_path)
            bad = [f for f in found if f != (0, 0)]
            if bad:
                out.outcome, out.detail = "mismatch", f"(elements, max) {bad}"
    except ExportError as exc:
        out.outcome, out.detail = "export", one_line(exc)
    except ProgramError as exc:
        text = one_line(exc)
        out.outcome = "refused" if REFUSED in text else "traceback"
        out.detail = (
            text.split(": ", 2)[-1].removesuffix(f" {REFUSED}") if REFUSED in text else text
        )
    except Exception as exc:
        out.outcome, out.detail = "traceback", traceback_detail(exc)
    out.seconds = round(time.monotonic() - start, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=30, help="cases drawn at random")
    parser.add_argument("--seed", type=int, default=0, help="seeds the draw")
    parser.add_argument("--match", help="test modules whose name contains this")
    parser.add_argument("--workdir", type=Path, default=REPO / "out" / "u85_peer")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    cases = sample(runnable_cases(args.match), args.sample, args.seed)
    outcomes = []
    for i, case in enumerate(cases):
        outcome = run_case(case, args.workdir / f"case_{i:03d}")
        outcomes.append(outcome)
        ops = ",".join(sorted(f"{k}:{m}" if m else k for k, m in outcome.ops))
        print(f"{outcome.outcome:9s} {outcome.seconds:6.1f}s {case.name} {case.quant} "
              f"[{ops}] {outcome.detail}", flush=True)  # fmt: skip
    total = Counter(o.outcome for o in outcomes)
    print(", ".join(f"{k} {total[k]}" for k in OUTCOMES), f"of {len(outcomes)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    from bench.u85_peer_sample import main as _main

    sys.exit(_main())
