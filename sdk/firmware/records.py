"""Reading the firmware's `@sdk` result record from console text (docs/firmware.md).

A run passes only when the firmware exited 0, printed `result status=ok`, and every output it
announced arrived whole with a matching CRC-32. Everything else is a TargetError with the reason.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sdk.errors import TargetError

RECORD_PREFIX = "@sdk "
FAULT_EXIT_CODE = 100

# rt::ScalarType codes (firmware/runtime/include/rt/scalar_type.h) -> numpy dtypes.
NUMPY_DTYPES: dict[int, np.dtype] = {
    0: np.dtype("<u1"),
    1: np.dtype("<i1"),
    2: np.dtype("<i2"),
    3: np.dtype("<i4"),
    4: np.dtype("<i8"),
    5: np.dtype("<f2"),
    6: np.dtype("<f4"),
    7: np.dtype("<f8"),
    11: np.dtype(np.bool_),
    27: np.dtype("<u2"),
    28: np.dtype("<u4"),
    29: np.dtype("<u8"),
}

_FIELD = re.compile(r'(\w+)=("[^"]*"|\S*)')


@dataclass
class OutputRecord:
    index: int
    dtype: int
    sizes: tuple[int, ...]
    nbytes: int
    crc: int
    data: bytearray = field(default_factory=bytearray)

    def array(self) -> np.ndarray:
        if self.dtype not in NUMPY_DTYPES:
            raise TargetError(f"output {self.index}: dtype code {self.dtype} is not supported")
        return np.frombuffer(bytes(self.data), dtype=NUMPY_DTYPES[self.dtype]).reshape(self.sizes)


@dataclass
class FirmwareRecord:
    """Everything the firmware reported, checked or not."""

    board: str | None = None
    memory: dict[str, int] = field(default_factory=dict)
    outputs: list[OutputRecord] = field(default_factory=list)
    result: dict[str, str] | None = None
    fault: dict[str, str] | None = None
    log_lines: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.result is not None and self.result.get("status") == "ok"

    def ticks(self) -> tuple[int, int, int]:
        """(init_ticks, run_ticks, tick_hz) of a passed run."""
        assert self.result is not None
        return (
            int(self.result["init_ticks"]),
            int(self.result["run_ticks"]),
            int(self.result["tick_hz"]),
        )


def parse_fields(line: str) -> dict[str, str]:
    return {key: value.strip('"') for key, value in _FIELD.findall(line)}


def parse_record(text: str) -> FirmwareRecord:
    """Collect the record lines of a console log (no checking beyond the syntax)."""
    record = FirmwareRecord()
    outputs: dict[int, OutputRecord] = {}
    for raw in text.splitlines():
        line = raw.strip("\r\x00")
        if not line.startswith(RECORD_PREFIX):
            if line:
                record.log_lines.append(line)
            continue
        kind, _, rest = line[len(RECORD_PREFIX) :].partition(" ")
        fields = parse_fields(rest)
        try:
            if kind == "begin":
                record.board = fields.get("board")
            elif kind == "memory":
                record.memory = {k: int(v) for k, v in fields.items()}
            elif kind == "output":
                sizes = tuple(int(s) for s in fields["sizes"].split(",") if s)
                out = OutputRecord(
                    index=int(fields["index"]),
                    dtype=int(fields["dtype"]),
                    sizes=sizes,
                    nbytes=int(fields["nbytes"]),
                    crc=int(fields["crc"], 16),
                )
                outputs[out.index] = out
                record.outputs.append(out)
            elif kind == "data":
                out = outputs.get(int(fields["index"]))
                if out is None:
                    raise TargetError(f"data for output {fields['index']} before its header")
                if int(fields["offset"]) != len(out.data):
                    raise TargetError(
                        f"output {out.index}: data at offset {fields['offset']}, "
                        f"expected {len(out.data)} (lost lines?)"
                    )
                out.data += bytes.fromhex(fields["hex"])
            elif kind == "result":
                record.result = fields
            elif kind == "fault":
                record.fault = fields
        except (KeyError, ValueError) as exc:
            raise TargetError(f"malformed record line {line[:80]!r}: {exc}") from exc
    return record


def check_record(
    record: FirmwareRecord, exit_code: int | None, log_path: Path | None = None
) -> list[np.ndarray]:
    """The outputs of a passed run; otherwise a TargetError saying what went wrong."""
    if record.fault is not None or exit_code == FAULT_EXIT_CODE:
        details = " ".join(f"{k}={v}" for k, v in (record.fault or {}).items())
        raise TargetError(
            f"the firmware faulted: {details or 'no fault record'}", log_path=log_path
        )
    if record.board is None:
        raise TargetError("no '@sdk begin' record: the firmware did not start", log_path=log_path)
    if record.result is None:
        raise TargetError(
            "the record ended without a result line (the firmware stopped or output was lost)",
            log_path=log_path,
        )
    if record.result.get("status") != "ok":
        r = record.result
        raise TargetError(
            f"firmware error {r.get('name', '?')} (code {r.get('code', '?')}): "
            f"{r.get('reason', 'no reason given')}",
            log_path=log_path,
        )
    if exit_code != 0:
        raise TargetError(
            f"the firmware reported success but exited with {exit_code}", log_path=log_path
        )
    announced = int(record.result.get("outputs", -1))
    if announced != len(record.outputs):
        raise TargetError(
            f"the result announces {announced} outputs, {len(record.outputs)} arrived",
            log_path=log_path,
        )
    arrays = []
    for i, out in enumerate(record.outputs):
        if out.index != i:
            raise TargetError(
                f"output {out.index} arrived in place of output {i}", log_path=log_path
            )
        if len(out.data) != out.nbytes:
            raise TargetError(
                f"output {i}: {len(out.data)} of {out.nbytes} bytes arrived", log_path=log_path
            )
        if zlib.crc32(bytes(out.data)) != out.crc:
            raise TargetError(f"output {i}: CRC mismatch (corrupted output)", log_path=log_path)
        arrays.append(out.array())
    return arrays
