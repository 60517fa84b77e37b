"""What the firmware reported about one run over the link, and the one check of it.

A run passes only when the firmware's RUN reply said so and every output arrived whole, with the
CRC-32 the firmware computed over it and the dtype and shape the program gives that output.
Anything else is a TargetError with the reason (and the link log).

The console carries no results: only log lines and, when the CPU faults, the board's fault line
(`@sdk fault cfsr=... pc=...`, written by the fault handler where no frame can be built any more);
`find_fault` reads that one line.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from sdk.errors import TargetError
from sdk.utils.dtypes import DTYPES, Dtype

DTYPE_CODES: dict[int, Dtype] = {int(code): d for code, d in DTYPES.items()}

_FAULT_LINE = re.compile(r"^@sdk fault((?: \w+=[\w.:-]*)*)\s*$", re.MULTILINE)


class ExpectedOutput(Protocol):
    """What the program says about an output (sdk.program.pte.TensorInfo has these)."""

    @property
    def scalar_type(self) -> int: ...

    @property
    def shape(self) -> tuple[int, ...]: ...


def dtype_label(code: int) -> str:
    entry = DTYPE_CODES.get(code)
    return f"{entry.name} ({code})" if entry else f"unknown dtype code {code}"


def find_fault(console: str, partial: bool = False) -> dict[str, str] | None:
    """The fields of the last fault line in console text (None when the CPU did not fault).
    A line not yet ended (the board may still be printing it) counts only when `partial`: the
    text is all there will be (the port failed, or the wait is over)."""
    text = console.replace("\x00", "\n")
    if not partial:
        text = text[: text.rfind("\n") + 1]
    found = None
    for match in _FAULT_LINE.finditer(text):
        found = dict(part.split("=", 1) for part in match.group(1).split())
    return found


def describe_fault(fault: dict[str, str]) -> str:
    details = " ".join(f"{k}={v}" for k, v in fault.items()) or "no details"
    stale = " (the stacked pc/lr/psr may be stale)" if fault.get("frame") == "stale" else ""
    return f"the firmware faulted: {details}{stale}"


@dataclass
class OutputRecord:
    index: int
    dtype: int
    sizes: tuple[int, ...]
    nbytes: int
    crc: int
    data: bytearray = field(default_factory=bytearray)

    def array(self) -> np.ndarray:
        entry = DTYPE_CODES.get(self.dtype)
        if entry is None:
            raise TargetError(f"output {self.index}: {dtype_label(self.dtype)}")
        if entry.numpy is None:
            raise TargetError(
                f"output {self.index}: dtype {dtype_label(self.dtype)} has no numpy equivalent"
            )
        expected = math.prod(self.sizes) * entry.itemsize
        if len(self.data) != expected:
            raise TargetError(
                f"output {self.index}: {len(self.data)} bytes do not make a "
                f"{entry.name} {list(self.sizes)} tensor ({expected} bytes)"
            )
        return np.frombuffer(bytes(self.data), dtype=entry.numpy).reshape(self.sizes)


@dataclass(frozen=True)
class MemoryUse:
    """The runtime's arenas after the load: what the program took of what the board gave."""

    planned_used: int
    planned_size: int
    meta_used: int
    meta_size: int


@dataclass(frozen=True)
class Outcome:
    """How the run ended, as the firmware says (its RUN reply, or an ERROR reply)."""

    ok: bool
    outputs: int = 0
    init_ticks: int = 0
    run_ticks: int = 0
    tick_hz: int = 0
    code: int = 0  # rt::Error of a failure
    name: str = ""
    reason: str = ""
    virtual_npu_ticks: int = 0  # waiting for the host's virtual-NPU jobs


@dataclass(frozen=True)
class DelegateCycles:
    """One delegate's modelled NPU work per inference, from the virtual U55's job log (the
    firmware's figure is the run's total, not split by delegate). `cycles` None: the cycle
    model could not time it (`error` says why)."""

    delegate: int
    cycles: int | None
    macs: int | None
    memory_bound_cycles: int | None
    error: str | None = None


@dataclass(frozen=True)
class ModelledNpu:
    """The virtual U55's modelled time of a run's delegates (sdk.ethosu.cycles), and the
    cross-check: the firmware's driver read each job's cycles from PMCCNTR and STATS sums
    them since the LOAD (`firmware_total`, over `runs` inferences); the job log's jobs since
    the same LOAD must add up to it (`job_log_total`)."""

    delegates: tuple[DelegateCycles, ...]
    firmware_total: int
    runs: int
    job_log_total: int

    @property
    def complete(self) -> bool:
        return all(d.cycles is not None for d in self.delegates)

    @property
    def cycles(self) -> int:
        """Per inference, the firmware's own figure (STATS: its PMCCNTR reads) when it has
        one; `agrees` says whether the job log backs it."""
        if self.runs:
            return round(self.firmware_total / self.runs)
        return sum(d.cycles or 0 for d in self.delegates)

    @property
    def agrees(self) -> bool:
        return self.firmware_total == self.job_log_total

    def check(self) -> dict:
        """The cross-check's figures (the deploy report's performance.npu_cycles_check)."""
        return {
            "firmware_total": self.firmware_total,
            "job_log_total": self.job_log_total,
            "runs": self.runs,
            "agrees": self.agrees,
            "problem": self.disagreement(),
        }

    def disagreement(self) -> str | None:
        """The cross-check's failure, in words (None when it holds)."""
        if self.agrees:
            return None
        return (
            f"the firmware's driver read {self.firmware_total:,} NPU cycles from PMCCNTR since "
            f"the LOAD, the virtual U55's job log has {self.job_log_total:,}"
        )


@dataclass
class FirmwareRecord:
    """Everything the firmware reported about a run, checked or not (filled by a LinkSession);
    check_record alone decides whether the run passed."""

    board: str | None = None
    memory: MemoryUse | None = None
    outputs: list[OutputRecord] = field(default_factory=list)
    result: Outcome | None = None
    npu_cycles: int | None = None  # the NPU's PMU cycle count of the run (STATS), if counted
    npu_modelled: ModelledNpu | None = None  # the host's virtual U55 ran the delegates

    def ticks(self) -> tuple[int, int, int]:
        """(init_ticks, run_ticks, tick_hz) of a passed run."""
        if self.result is None or not self.result.ok:
            raise TargetError("the run did not pass: it has no ticks")
        return self.result.init_ticks, self.result.run_ticks, self.result.tick_hz


def check_record(
    record: FirmwareRecord,
    log_path: Path | None = None,
    expected: Sequence[ExpectedOutput] | None = None,
) -> list[np.ndarray]:
    """The outputs of a passed run; otherwise a TargetError saying what went wrong.

    `expected` (the program's outputs, e.g. LoadedProgram.outputs()) makes the count, dtype
    and shape of every output part of the check: the CRC covers only the data."""

    def fail(message: str) -> TargetError:
        return TargetError(message, log_path=log_path)

    if record.result is None:
        raise fail("the firmware never answered the run (no RUN reply)")
    if not record.result.ok:
        r = record.result
        raise fail(f"firmware error {r.name} (code {r.code}): {r.reason}")
    if record.memory is None:
        raise fail("the firmware did not report its memory use (no LOAD reply)")
    announced = record.result.outputs
    if announced != len(record.outputs):
        raise fail(f"the result announces {announced} outputs, {len(record.outputs)} arrived")
    if expected is not None and len(expected) != announced:
        raise fail(f"the program has {len(expected)} outputs, the firmware reported {announced}")
    arrays = []
    for i, out in enumerate(record.outputs):
        if out.index != i:
            raise fail(f"output {out.index} arrived in place of output {i}")
        if expected is not None:
            want = expected[i]
            if out.dtype != int(want.scalar_type) or out.sizes != tuple(want.shape):
                raise fail(
                    f"output {i}: the firmware reported {dtype_label(out.dtype)} "
                    f"{list(out.sizes)}, the program's output is "
                    f"{dtype_label(int(want.scalar_type))} {list(want.shape)}"
                )
        entry = DTYPE_CODES.get(out.dtype)
        if entry is None:
            raise fail(f"output {i}: {dtype_label(out.dtype)}")
        if math.prod(out.sizes) * entry.itemsize != out.nbytes:
            raise fail(
                f"output {i}: nbytes={out.nbytes} but {entry.name} {list(out.sizes)} "
                f"takes {math.prod(out.sizes) * entry.itemsize}"
            )
        if len(out.data) != out.nbytes:
            raise fail(f"output {i}: {len(out.data)} of {out.nbytes} bytes arrived")
        if zlib.crc32(bytes(out.data)) != out.crc:
            raise fail(f"output {i}: CRC mismatch (corrupted output)")
        try:
            arrays.append(out.array())
        except TargetError as exc:
            raise fail(exc.message) from None
    return arrays
