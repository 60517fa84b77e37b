"""The SDK's error tree: every failure a user can cause is one of these, with one clear line.

The CLI maps each to a non-zero exit status and prints `error: <message>`; nothing else
(tracebacks) reaches the user unless `--debug` is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sdk.link.protocol import ErrorReply


class SdkError(Exception):
    """Base of all SDK errors. `log_path` points at a log with the details, when there is one."""

    exit_code = 1

    def __init__(self, message: str, *, log_path: Path | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.log_path = log_path

    def __str__(self) -> str:
        if self.log_path is not None:
            return f"{self.message} (log: {self.log_path})"
        return self.message


class UsageError(SdkError):
    """Bad command-line arguments or API arguments (unknown target, missing file, ...)."""

    exit_code = 2


def check_choice(flag: str, value: str, choices, *, quoted: bool = True) -> str:
    """`value` if it is one of `choices`, else the one-line UsageError every option says
    ("--io double: one of float, int"; `quoted` shows the value as repr)."""
    if value not in choices:
        shown = repr(value) if quoted else value
        raise UsageError(f"{flag} {shown}: one of {', '.join(choices)}")
    return value


class ConfigError(SdkError):
    """A board.yaml or the kernel list is malformed: the SDK's data is wrong, not the command."""


class ResourceError(SdkError):
    """The model exceeds what the board or the firmware holds (a memory region, a slot, the
    input record's dimensions): the arguments are fine, the model is too big for them."""


class StorageError(SdkError):
    """A folder the SDK writes (the cache, an output folder) cannot be written or cleaned."""


class InternalError(SdkError):
    """The SDK reached a state its own code should rule out: a bug to report, not a user's."""


class ModelLoadError(SdkError):
    """The model file cannot be loaded or does not define a model and example inputs."""


class ExportError(SdkError):
    """Quantization, partitioning, lowering or Vela compilation failed."""


class ProgramError(SdkError):
    """A .pte file is missing, unreadable or malformed."""


class BoundaryError(SdkError):
    """A delegate boundary tensor disagrees with the NPU's record (dtype or byte size)."""

    exit_code = 3  # as `sdk inspect` and `sdk export --stock-partitioner` report a failed audit


class KernelMissingError(SdkError):
    """The program needs a CPU operator that has no kernel."""


class BuildError(SdkError):
    """Building the firmware failed."""


class TargetError(SdkError):
    """Running on a target failed: it did not boot, faulted, hung, or reported a failure."""


class FrameError(TargetError):
    """Bytes between two link delimiters that are not a valid frame (the message says why)."""


class PayloadError(TargetError):
    """A link response payload that does not have the layout of its kind."""


class FirmwareRefused(TargetError):
    """An ERROR reply: the firmware refused a request (not a link failure); `reply` says how."""

    def __init__(self, reply: ErrorReply) -> None:
        super().__init__(f"{reply.name} (code {reply.code}): {reply.reason}")
        self.reply = reply


class FlashError(SdkError):
    """The firmware could not be put on the board (no drive, no probe, the tool failed)."""


class MismatchError(SdkError):
    """A target's outputs differ from the expected (reference) outputs beyond tolerance."""

    exit_code = 4
