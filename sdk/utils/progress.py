"""The steps of a long command, timed, each shown with a spinner while it runs.

    steps = Steps(show=sys.stderr.isatty() and not quiet)
    with steps.step("export", "export + Vela") as step:
        if hit:
            step.cached("program from the cache")
    steps.records  # -> [StepRecord(name, status, seconds, detail)] for the report

Progress goes to stderr through rich and only when `show` (a terminal, not --quiet): the
records are kept either way, since the report says which steps ran and which came from the
cache.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

DONE, CACHED, SKIPPED, FAILED = "done", "cached", "skipped", "failed"
MARKS = {DONE: "✓", CACHED: "✓", SKIPPED: "–", FAILED: "✗"}


@dataclass
class StepRecord:
    name: str
    status: str = DONE
    seconds: float = 0.0
    detail: str = ""

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "detail": self.detail,
        }


class StepHandle:
    def __init__(self, record: StepRecord, show: Callable[[str], None] | None = None) -> None:
        self.record = record
        self._show = show

    def progress(self, text: str) -> None:
        """Where a long step is (`calibration 3/8 samples`), beside its label while it runs;
        only on a shown spinner, never in the record."""
        if self._show is not None:
            self._show(text)

    def cached(self, detail: str = "") -> None:
        self.record.status, self.record.detail = CACHED, detail

    def skip(self, detail: str) -> None:
        self.record.status, self.record.detail = SKIPPED, detail

    def note(self, detail: str) -> None:
        self.record.detail = detail

    def failed(self, detail: str) -> None:
        """The step ran to its end but what it judged failed (a tuning candidate that did not
        pass): marked so, without an exception stopping the command."""
        self.record.status, self.record.detail = FAILED, detail


class Steps:
    def __init__(self, show: bool) -> None:
        self.show = show
        self.records: list[StepRecord] = []
        self._console = None
        self._transfer_start = 0.0
        self._transfer_tenth = 0
        if show:
            from rich.console import Console

            self._console = Console(stderr=True)

    def say(self, text: str) -> None:
        """A line of its own among the steps (what a long command is about to do); shown only
        when the steps are."""
        if self._console is not None:
            self._console.print(text, highlight=False, markup=False, soft_wrap=True)

    @contextlib.contextmanager
    def step(self, name: str, label: str | None = None) -> Iterator[StepHandle]:
        record = StepRecord(name)
        self.records.append(record)
        start = time.monotonic()
        try:
            with self._spinner(label or name) as show:
                yield StepHandle(record, show)
        except BaseException:
            record.status = FAILED
            raise
        finally:
            record.seconds = time.monotonic() - start
            self._print(record, label or name)

    @contextlib.contextmanager
    def _spinner(self, label: str) -> Iterator[Callable[[str], None] | None]:
        """The spinner while a step runs; yields what shows its progress beside the label."""
        if self._console is None:
            yield None
            return
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
        with Progress(*columns, console=self._console, transient=True) as progress:
            task = progress.add_task(label, total=None)
            yield lambda text: progress.update(task, description=f"{label}: {text}")

    def transfer(self, what: str, done: int, total: int, expected_s: float) -> None:
        """A large transfer over a serial line (sdk.link.session.TransferProgress): its
        expected time before it starts, then every tenth of it, on the terminal; the expected
        time also goes into the running step's detail (the report)."""
        if done == 0 and expected_s and self.records:
            record = self.records[-1]
            note = f"{what}: {total:,} bytes, expected {expected_s:.1f} s at the line's speed"
            record.detail = f"{record.detail}; {note}" if record.detail else note
        if self._console is None:
            return
        if done == 0:
            self._transfer_start = time.monotonic()
            self._transfer_tenth = 0
            expected = f", expected {expected_s:.1f} s" if expected_s else ""
            self._console.print(f"  {what}: {total:,} bytes{expected}", highlight=False)
            return
        tenth = done * 10 // total
        if tenth > self._transfer_tenth:
            self._transfer_tenth = tenth
            elapsed = time.monotonic() - self._transfer_start
            self._console.print(
                f"  {what}: {done:,} of {total:,} bytes ({tenth * 10}%), {elapsed:.1f} s",
                highlight=False,
            )

    def _print(self, record: StepRecord, label: str) -> None:
        if self._console is None:
            return
        extra = f"  ({record.detail})" if record.detail else ""
        status = "" if record.status == DONE else f" [{record.status}]"
        self._console.print(
            f"{MARKS[record.status]} {label}{status}  {record.seconds:.1f} s{extra}",
            highlight=False,
            markup=False,
        )
