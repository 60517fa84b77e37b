"""A model zoo over a farm: `sdk deploy A.py B.py C.py --target labgrid --places p1,p2`.

Each place takes the next model from one queue and deploys it as its own `sdk deploy`
process (its own place acquired and released, its own report folder), so N places run N
models at once; one combined report says which place ran which model (zoo.json, and JUnit
with a test case per model). Without --places the models run one after another on the one
target. Ctrl-C reaches every running deploy as Ctrl-C: each releases its place.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sdk.deploy.report import REPORT_FILE
from sdk.errors import MismatchError, SdkError, UsageError
from sdk.utils.files import write_atomically

ZOO_REPORT_FILE = "zoo.json"
ZOO_JUNIT_FILE = "zoo.junit.xml"
# What a per-model deploy's command line must not carry over from the zoo's.
_OWN_VALUE_OPTIONS = ("--places", "--place", "-o", "--outdir", "--json", "--junit")


@dataclass
class ZooEntry:
    model: str
    place: str | None
    exit_code: int
    passed: bool
    failure: str | None
    seconds: float
    outdir: Path

    def to_json(self) -> dict:
        return {
            "model": self.model, "place": self.place, "passed": self.passed,
            "exit_code": self.exit_code, "failure": self.failure,
            "seconds": round(self.seconds, 3), "report": str(self.outdir / REPORT_FILE),
        }  # fmt: skip


def per_model_argv(argv: Sequence[str], models: Sequence[str]) -> list[str]:
    """The zoo's command line for one deploy: `sdk`'s own options, `deploy`, then the zoo's
    options without its models and those each deploy gets its own value of (its place,
    output folder, report files) or that a zoo sets (--quiet). `sdk deploy` takes no
    abbreviated options, so each is seen here as it is spelt."""
    argv = list(argv)
    head: list[str] = []
    if "deploy" in argv:
        at = argv.index("deploy")
        head, argv = argv[:at], argv[at + 1 :]
    out: list[str] = [*head, "deploy"]
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in _OWN_VALUE_OPTIONS:
            skip = True
        elif token.split("=", 1)[0] in _OWN_VALUE_OPTIONS or token in models:
            continue
        elif token != "--quiet":
            out.append(token)
    return out


def deploy_zoo(
    models: Sequence[str],
    places: Sequence[str | None],
    argv: Sequence[str],
    outdir: Path,
    show: bool = True,
    quiet_stdout: bool = False,
) -> list[ZooEntry]:
    """Deploy every model, one running per place at a time; the entries in `models` order.
    zoo.json and zoo.junit.xml land in `outdir`, each model's own files in outdir/<i>-<stem>.
    `quiet_stdout`: progress goes to stderr (stdout carries JSON)."""
    if len(set(places)) != len(places):
        raise UsageError(f"--places names a place twice: {', '.join(map(str, places))}")
    outdir.mkdir(parents=True, exist_ok=True)
    common = per_model_argv(argv, models)
    queue = deque(enumerate(models))
    lock = threading.Lock()
    stopping = threading.Event()  # Ctrl-C: no deploy starts after it
    running: list[subprocess.Popen] = []
    say = sys.stderr if quiet_stdout else sys.stdout
    entries: dict[int, ZooEntry] = {}
    started = time.monotonic()

    def work(place: str | None) -> None:
        while True:
            with lock:
                if not queue:
                    return
                index, model = queue.popleft()
            folder = outdir / f"{index}-{Path(model.split(':')[0]).stem}"
            folder.mkdir(parents=True, exist_ok=True)
            command = [sys.executable, "-m", "sdk.cli.main", *common, model,
                       "-o", str(folder), "--quiet"]  # fmt: skip
            if place is not None:
                command += ["--place", place]
            began = time.monotonic()
            with open(folder / "deploy.log", "wb") as log:
                with lock:
                    if stopping.is_set():
                        return
                    # Its own session: a terminal's Ctrl-C reaches the zoo alone, which
                    # passes it on once (a second one could cut a place's release short).
                    process = subprocess.Popen(
                        command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                    )
                    running.append(process)
                code = process.wait()
            entries[index] = _entry(model, place, code, time.monotonic() - began, folder)
            if show:
                e = entries[index]
                verdict = "passed" if e.passed else f"FAILED ({e.failure})"
                print(f"  {model} on {place or 'the target'}: {verdict} in {e.seconds:.1f} s",
                      file=say, flush=True)  # fmt: skip

    threads = [threading.Thread(target=work, args=(p,), daemon=True) for p in places]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)  # wakes for Ctrl-C
    except KeyboardInterrupt:
        with lock:
            stopping.set()
            queue.clear()
            for process in running:
                if process.poll() is None:
                    process.send_signal(signal.SIGINT)  # it releases its place and stops
        for thread in threads:
            thread.join()
        raise
    ordered = [entries[i] for i in sorted(entries)]
    _write(outdir, ordered, list(places), time.monotonic() - started)
    return ordered


def _entry(model: str, place: str | None, code: int, seconds: float, folder: Path) -> ZooEntry:
    """What one deploy said: its deploy.json (kept only when it ran), else its last line.
    A deploy killed by a signal has the shell's exit code for it (128 + N)."""
    if code < 0:
        code = 128 - code
    report = folder / REPORT_FILE
    failure = None
    passed = False
    if report.is_file():
        data = json.loads(report.read_text())
        passed, failure = bool(data.get("passed")), data.get("failure")
    if code != 0 and failure is None:
        lines = (folder / "deploy.log").read_text(errors="replace").strip().splitlines()
        failure = next((ln for ln in reversed(lines) if ln.startswith("error:")), None)
        failure = failure or (lines[-1] if lines else f"exit code {code}")
    return ZooEntry(model, place, code, passed and code == 0, failure, seconds, folder)


def _write(outdir: Path, entries: list[ZooEntry], places: list, seconds: float) -> None:
    data = {
        "passed": all(e.passed for e in entries),
        "places": places,
        "seconds": round(seconds, 3),
        "models": [e.to_json() for e in entries],
    }
    write_atomically(outdir / ZOO_REPORT_FILE, json.dumps(data, indent=2) + "\n")
    suite = ET.Element(
        "testsuite", name="sdk deploy zoo", tests=str(len(entries)),
        failures=str(sum(not e.passed for e in entries)), time=f"{seconds:.3f}",
    )  # fmt: skip
    for e in entries:
        case = ET.SubElement(
            suite, "testcase", classname=e.place or "target", name=e.model,
            time=f"{e.seconds:.3f}",
        )  # fmt: skip
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="place", value=str(e.place))
        ET.SubElement(props, "property", name="report", value=str(e.outdir / REPORT_FILE))
        if not e.passed:
            ET.SubElement(case, "failure", message=e.failure or "failed")
    write_atomically(outdir / ZOO_JUNIT_FILE, ET.tostring(suite, encoding="unicode") + "\n")


def zoo_verdict(entries: list[ZooEntry]) -> None:
    """Raise what the zoo's exit should be: nothing when every model passed; exit 4 when the
    only failures are comparisons (as one deploy's); else the first error's code."""
    failed = [e for e in entries if not e.passed]
    if not failed:
        return
    names = ", ".join(f"{e.model} ({e.place})" if e.place else e.model for e in failed)
    message = f"{len(failed)} of {len(entries)} models failed: {names}"
    if all(e.exit_code == MismatchError.exit_code for e in failed):
        raise MismatchError(message)
    error = SdkError(message)
    error.exit_code = next(
        (e.exit_code for e in failed if e.exit_code not in (0, MismatchError.exit_code)), 1
    )
    raise error
