"""Reading the firmware's `@sdk` result record from console text (docs/firmware.md).

A run passes only when the firmware exited 0, printed `result status=ok`, and every output it
announced arrived whole with a matching CRC-32 and the header the program's output has. Anything
else is a TargetError with the reason and the log.

The console is untrusted text: lines end at '\\n' only (never at the other line breaks Python's
str.splitlines() knows), each record line must parse completely, `begin`, `memory`, `result`
and each `output` may appear once, and nothing may follow the result. A malformed record is
remembered, not raised at once, so that a fault record printed after a cut line still wins.
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

from sdk import contract
from sdk.dtypes import DTYPES, Dtype
from sdk.errors import TargetError

RECORD_PREFIX = "@sdk "
RECORD_VERSION = "1"
FAULT_EXIT_CODE = contract.data()["exit_codes"]["fault"]


DTYPE_CODES: dict[int, Dtype] = {int(code): d for code, d in DTYPES.items()}

_FIELD = re.compile(r'(\w+)=("[^"]*"|[^\s"]*)')
_HEX = re.compile(r"(?:[0-9a-f]{2})*")
_RESULT_OK_FIELDS = ("outputs", "init_ticks", "run_ticks", "tick_hz")
_RESULT_ERROR_FIELDS = ("code", "name", "reason")
_MEMORY_FIELDS = ("planned_used", "planned_size", "meta_used", "meta_size")
_OUTPUT_FIELDS = ("index", "dtype", "sizes", "nbytes", "crc")
_DATA_FIELDS = ("index", "offset", "hex")


class ExpectedOutput(Protocol):
    """What the program says about an output (sdk.program.pte.TensorInfo has these)."""

    @property
    def scalar_type(self) -> int: ...

    @property
    def shape(self) -> tuple[int, ...]: ...


def dtype_label(code: int) -> str:
    entry = DTYPE_CODES.get(code)
    return f"{entry.name} ({code})" if entry else f"unknown dtype code {code}"


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
    """How the run ended, as the firmware says (a result line, or a link RUN/ERROR reply)."""

    ok: bool
    outputs: int = 0
    init_ticks: int = 0
    run_ticks: int = 0
    tick_hz: int = 0
    code: int = 0  # rt::Error of a failure
    name: str = ""
    reason: str = ""
    virtual_npu_ticks: int = 0  # of a link run: waiting for the host's virtual-NPU jobs


@dataclass
class FirmwareRecord:
    """Everything the firmware reported, checked or not: the one typed run report, filled by
    the text record parser (parse_record) or by a host-link session. `problems` lists what did
    not parse; check_record alone decides whether the run passed."""

    board: str | None = None
    memory: MemoryUse | None = None
    outputs: list[OutputRecord] = field(default_factory=list)
    result: Outcome | None = None
    fault: dict[str, str] | None = None
    log_lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    npu_cycles: int | None = None  # the NPU's PMU cycle count of a link run (STATS), if counted

    def ticks(self) -> tuple[int, int, int]:
        """(init_ticks, run_ticks, tick_hz) of a passed run."""
        if self.result is None or not self.result.ok:
            raise TargetError("no 'result status=ok' line: the run has no ticks")
        return self.result.init_ticks, self.result.run_ticks, self.result.tick_hz


class _Malformed(Exception):
    """One record line that does not follow docs/firmware.md."""


def parse_fields(text: str) -> dict[str, str]:
    """`key=value key="quoted value" ...`: the whole text, each key once (else _Malformed)."""
    fields: dict[str, str] = {}
    position = 0
    for match in _FIELD.finditer(text):
        if text[position : match.start()].strip(" "):
            raise _Malformed(f"unexpected text {text[position : match.start()]!r}")
        key, value = match.group(1), match.group(2)
        if key in fields:
            raise _Malformed(f"{key}= given twice")
        fields[key] = value[1:-1] if value.startswith('"') else value
        position = match.end()
    if text[position:].strip(" "):
        raise _Malformed(f"unexpected text {text[position:]!r}")
    return fields


def _require(fields: dict[str, str], keys: Sequence[str]) -> None:
    missing = [key for key in keys if key not in fields]
    if missing:
        raise _Malformed(f"no {', '.join(k + '=' for k in missing)}")


def _int(fields: dict[str, str], key: str, base: int = 10) -> int:
    text = fields[key]
    # The firmware prints unsigned numbers of at most 64 bits (20 digits): a sign or more
    # digits is not its output (and Python's int() refuses over 4300 digits).
    pattern = r"[0-9a-f]{8}" if base == 16 else r"[0-9]{1,20}"
    if not re.fullmatch(pattern, text):
        what = "8 hex digits" if base == 16 else "an unsigned number"
        raise _Malformed(f"{key}={text[:30]!r} is not {what}")
    return int(text, base)


def _sizes(text: str) -> tuple[int, ...]:
    if not re.fullmatch(r"(?:[0-9]{1,10}(?:,[0-9]{1,10})*)?", text):
        raise _Malformed(f"sizes={text[:30]!r} is not a list of sizes")
    return tuple(int(s) for s in text.split(",") if s)


class _Parser:
    def __init__(self) -> None:
        self.record = FirmwareRecord()
        self.by_index: dict[int, OutputRecord] = {}
        self.seen: set[str] = set()
        self.ended = False  # a result line (good or not) was seen
        self._handlers = {
            "begin": self._begin,
            "memory": self._memory,
            "output": self._output,
            "data": self._data,
            "result": self._result,
        }

    def line(self, line: str) -> None:
        if not line.startswith(RECORD_PREFIX):
            if line.strip():
                self.record.log_lines.append(line)
                if self.ended:
                    self.record.problems.append(f"text after the result line: {line[:80]!r}")
            return
        kind, _, rest = line[len(RECORD_PREFIX) :].partition(" ")
        try:
            fields = parse_fields(rest)
            if kind == "fault":
                # Whatever came before, a fault is the news (the handler starts a new line).
                self.record.fault = fields
                return
            if self.ended:
                raise _Malformed("a record line after the result line")
            handler = self._handlers.get(kind)
            if handler is None:
                raise _Malformed(f"unknown record kind {kind!r}")
            if kind in ("begin", "memory", "result"):
                if kind in self.seen:
                    raise _Malformed(f"a second {kind} line")
                self.seen.add(kind)
            handler(fields)
        except _Malformed as exc:
            self.record.problems.append(f"malformed record line {line[:80]!r}: {exc}")
        finally:
            self.ended = self.ended or kind == "result"

    def _begin(self, fields: dict[str, str]) -> None:
        _require(fields, ("v", "board"))
        if fields["v"] != RECORD_VERSION:
            raise _Malformed(f"record version {fields['v']}, this host reads {RECORD_VERSION}")
        self.record.board = fields["board"]

    def _memory(self, fields: dict[str, str]) -> None:
        _require(fields, _MEMORY_FIELDS)
        self.record.memory = MemoryUse(*(_int(fields, key) for key in _MEMORY_FIELDS))

    def _output(self, fields: dict[str, str]) -> None:
        _require(fields, _OUTPUT_FIELDS)
        out = OutputRecord(
            index=_int(fields, "index"),
            dtype=_int(fields, "dtype"),
            sizes=_sizes(fields["sizes"]),
            nbytes=_int(fields, "nbytes"),
            crc=_int(fields, "crc", 16),
        )
        if out.index in self.by_index:
            raise _Malformed(f"a second header for output {out.index}")
        self.by_index[out.index] = out
        self.record.outputs.append(out)

    def _data(self, fields: dict[str, str]) -> None:
        _require(fields, _DATA_FIELDS)
        out = self.by_index.get(_int(fields, "index"))
        if out is None:
            raise _Malformed(f"data for output {fields['index']} before its header")
        offset = _int(fields, "offset")
        if offset != len(out.data):
            raise _Malformed(
                f"output {out.index}: data at offset {offset}, expected {len(out.data)} "
                "(lost lines?)"
            )
        if not _HEX.fullmatch(fields["hex"]):
            raise _Malformed("hex= is not whole bytes of lowercase hex")
        out.data += bytes.fromhex(fields["hex"])

    def _result(self, fields: dict[str, str]) -> None:
        status = fields.get("status")
        if status == "ok":
            _require(fields, _RESULT_OK_FIELDS)
            outcome = Outcome(True, *(_int(fields, key) for key in _RESULT_OK_FIELDS))
        elif status == "error":
            _require(fields, _RESULT_ERROR_FIELDS)
            outcome = Outcome(
                False, code=_int(fields, "code"), name=fields["name"], reason=fields["reason"]
            )
        else:
            raise _Malformed(f"status={status!r}")
        if set(fields) - {"status", *_RESULT_OK_FIELDS, *_RESULT_ERROR_FIELDS}:
            raise _Malformed(f"unknown fields in {sorted(fields)}")
        self.record.result = outcome


def parse_record(text: str) -> FirmwareRecord:
    """Collect the record lines of a console log; what does not parse goes to `problems`."""
    parser = _Parser()
    for raw in text.split("\n"):
        parser.line(raw.strip("\r\x00"))
    return parser.record


def check_record(
    record: FirmwareRecord,
    exit_code: int | None,
    log_path: Path | None = None,
    expected: Sequence[ExpectedOutput] | None = None,
) -> list[np.ndarray]:
    """The outputs of a passed run; otherwise a TargetError saying what went wrong.

    `expected` (the program's outputs, e.g. LoadedProgram.outputs()) makes the count, dtype
    and shape of every output part of the check: the CRC covers only the data."""

    def fail(message: str) -> TargetError:
        return TargetError(message, log_path=log_path)

    if record.fault is not None or exit_code == FAULT_EXIT_CODE:
        fault = record.fault or {}
        details = " ".join(f"{k}={v}" for k, v in fault.items())
        stale = " (the stacked pc/lr/psr may be stale)" if fault.get("frame") == "stale" else ""
        raise fail(f"the firmware faulted: {details or 'no fault record'}{stale}")
    if record.problems:
        more = f" (and {len(record.problems) - 1} more)" if len(record.problems) > 1 else ""
        raise fail(f"{record.problems[0]}{more}")
    if record.board is None:
        raise fail("no '@sdk begin' record: the firmware did not start")
    if record.result is None:
        raise fail(
            "the record ended without a result line (the firmware stopped or output was lost)"
        )
    if not record.result.ok:
        r = record.result
        raise fail(f"firmware error {r.name} (code {r.code}): {r.reason}")
    if exit_code != 0:
        raise fail(f"the firmware reported success but exited with {exit_code}")
    if record.memory is None:
        raise fail("the record has no memory line")
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
