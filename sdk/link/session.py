"""A host-link session with the firmware over any pyserial port (docs/link.md): the requests,
their retransmission and a whole run; the bytes and frames are sdk.link.transport's, the
virtual U55's exchanges sdk.link.npu_service's.

    with open_session("socket://127.0.0.1:5555", board="corstone300", log_path=log) as s:
        record = s.run_program(program, inputs)   # a FirmwareRecord: check_record decides

The same code drives a board on /dev/ttyACM0 (or rfc2217://, hwgrep://) and QEMU's UART on a
TCP socket. Every wait has a timeout, every failure names the phase and what was seen last
(frames and console text) and the log; a firmware reset mid-session is detected, never read as
data. Firmware refusals (ERROR replies) become the record's result, which the one check
(`sdk.link.record.check_record`) judges.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sdk.errors import FirmwareRefused, PayloadError
from sdk.link import protocol as p
from sdk.link.bigio import (
    BIG_IO_OVER,
    SlotInput,
    input_offsets,
    output_file_name,
    read_output_file,
    write_input_file,
)
from sdk.link.npu_service import NpuDevice, NpuService
from sdk.link.protocol import Kind
from sdk.link.record import FirmwareRecord, MemoryUse, Outcome, OutputRecord
from sdk.link.transport import LinkLog, Port, Transport


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait for one response, per phase (a retransmission restarts the wait)."""

    connect: float = 2.0
    transfer: float = 2.0  # LOAD_*, SET_INPUT, GET_OUTPUT, INFO, STATS
    run: float = 120.0
    reset: float = 10.0


# A transfer's progress: (what, bytes done, bytes in all, the expected seconds at the line's
# speed), called before the first chunk (done 0), after each chunk, and at the end.
TransferProgress = Callable[[str, int, int, float], None]
# Bytes on the wire per payload byte and per frame (COBS, delimiters, header, CRC): a chunk of
# `max_payload` costs about that many bytes more.
FRAME_OVERHEAD = p.MIN_BODY + 2
COBS_OVERHEAD = 1 / 254


class LinkSession(Transport, NpuService):
    """One session: CONNECT, then requests; `close()` (or `with`) ends it."""

    def __init__(
        self,
        port: Port,
        *,
        board: str | None = None,
        log_path: Path | None = None,
        timeouts: Timeouts | None = None,
        retries: int = 5,
        port_name: str = "the port",
        console_log: Path | None = None,
    ) -> None:
        self.port = port
        # A file the emulator also writes the UART's output to (QEMU's chardev logfile): when
        # it exits on a fault, the socket may be reset before the last bytes are read.
        self.console_log = console_log
        self.expected_board = board
        self.timeouts = timeouts or Timeouts()
        self.retries = retries
        self.port_name = port_name
        self.log = LinkLog(log_path)
        self.session = 0
        self.connected = False
        self.info: p.Info | None = None
        self.hello: p.Info | None = None
        self._seq = 0
        self._pending = bytearray()  # bytes after the last delimiter
        self._loaded_sha: bytes | None = None
        self._loaded: p.Loaded | None = None
        self.loads = 0  # programs loaded (each starts the firmware's STATS afresh)
        self.phase = "connect"
        # The virtual U55 answering the firmware's register exchanges (sdk.ethosu.device): the value
        # read and whether the NPU's IRQ line is high. None: an absent NPU (reads 0).
        self.npu_device: NpuDevice | None = None
        # The last register exchange answered: a stale announcement can only be of it (they
        # are sequential), and their numbers wrap.
        self._last_exchange: tuple[int, int] | None = None
        # Large inputs and outputs without the UART (sdk.link.bigio), where the target allows:
        # the inputs preloaded into the inputs slot for the program of SHA-256 `slot_program`,
        # and the folder where the firmware's semihosting writes land (an emulator's cwd).
        self.slot_inputs: dict[int, SlotInput] = {}
        self.slot_program: bytes | None = None
        self.files_dir: Path | None = None
        self.input_files = True  # SET_INPUT_FILE for large inputs (until NotSupported)
        self._files = 0
        # A board's serial line: its bytes per second (the expected time of a transfer, said
        # before it starts), and who hears of the progress (None: the log alone).
        self.line_bytes_per_second: float | None = None
        self.on_transfer: TransferProgress | None = None

    # ---- context manager ---------------------------------------------------------------------

    def __enter__(self) -> LinkSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.port.close()
        finally:
            self.log.close()

    def _request(
        self, kind: Kind, payload: bytes, timeout: float, budget: float | None = None
    ) -> p.Frame:
        """Send a request and return its response (retransmitting as docs/link.md says).

        `budget`: seconds all the tries share (RUN: a board that hangs mid-run costs the run's
        timeout once, not once per retransmission); None gives each try `timeout`."""
        self._seq = self._seq % 0xFFFF + 1
        seq = self._seq
        frame = p.encode_frame(kind, seq, self.session, payload)
        what = f"{kind.name} request seq={seq} {len(payload)} B"
        end = None if budget is None else time.monotonic() + budget
        for attempt in range(self.retries + 1):
            wait = timeout if end is None else min(timeout, end - time.monotonic())
            if wait <= 0:
                raise self.fail(
                    f"no valid response to {kind.name} within {budget:g} s ({attempt} tries)"
                )
            self._send(frame, what if attempt == 0 else f"{what} (retransmission {attempt})")
            got = self._await(kind, seq, wait)
            if got is not None:
                return got
        raise self.fail(f"no valid response to {kind.name} after {self.retries + 1} tries")

    def _await(self, kind: Kind, seq: int, timeout: float) -> p.Frame | None:
        """The response to request `seq`, or None when it is time to retransmit (a timeout,
        a corrupt frame, a NAK). A reset or an ERROR reply raises. The virtual U55's register
        exchanges inside the request are answered on the way (each restarts the wait)."""
        while True:
            got = self._await_once(kind, seq, timeout)
            if got is not True:
                return got

    def _await_once(self, kind: Kind, seq: int, timeout: float) -> p.Frame | bool | None:
        """As _await; True after answering a register exchange of request `seq`."""
        for got in self._frames(time.monotonic() + timeout):
            if got is None:
                return None  # a corrupt frame (maybe our response): ask again
            if got.kind == Kind.NPU_REGS and not got.response:
                if got.seq == seq and got.session == self.session:
                    self._npu_exchange(got, seq)
                    return True  # the request goes on: wait anew
                continue
            if got.kind == Kind.HELLO:
                self.hello = p.parse_info(got.payload)
                if self.connected:
                    raise self.fail("the firmware reset (it sent HELLO mid-session)")
                continue
            if got.kind == Kind.NAK:
                return None  # the firmware got a bad frame (maybe ours): retransmit now
            if not got.response:
                continue
            if self.connected and got.session != self.session:
                raise self.fail(
                    f"the firmware reset (its session is {got.session:08x}, this session's "
                    f"{self.session:08x})"
                )
            if got.seq != seq:
                continue  # a stale duplicate of an earlier response
            if got.kind == Kind.ERROR:
                raise FirmwareRefused(p.parse_error(got.payload))
            if got.kind == kind:
                return got
        return None

    def _payload(self, frame: p.Frame, parse, *args):
        try:
            return parse(frame.payload, *args)
        except PayloadError as exc:
            raise self.fail(f"malformed {Kind(frame.kind).name} response: {exc}") from None

    # ---- messages ----------------------------------------------------------------------------

    def connect(self) -> p.Info:
        """CONNECT with a fresh session id (retransmitted until the firmware answers)."""
        self.phase = "connect"
        self.connected = False
        self.session = secrets.randbits(32) | 1
        self._seq = 0
        self._last_exchange = None
        response = self._request(Kind.CONNECT, p.connect(self.session), self.timeouts.connect)
        if response.session != self.session:
            raise self.fail(f"CONNECT answered with session {response.session:08x}")
        info = self._payload(response, p.parse_info)
        if info.protocol_version != p.PROTOCOL_VERSION:
            raise self.fail(
                f"the firmware speaks link protocol {info.protocol_version}, this host "
                f"{p.PROTOCOL_VERSION}"
            )
        if self.expected_board and info.board != self.expected_board:
            raise self.fail(
                f"the firmware on {self.port_name} is for board {info.board!r}, not "
                f"{self.expected_board!r} (wrong port?)"
            )
        self.info, self.connected = info, True
        self._loaded_sha = info.program_sha256 if info.program_loaded else None
        self._loaded = None
        return info

    def request_info(self) -> p.Info:
        self.phase = "info"
        response = self._request(Kind.INFO, b"", self.timeouts.transfer)
        self.info = self._payload(response, p.parse_info)
        return self.info

    def load(self, program: bytes) -> p.Loaded:
        """LOAD_BEGIN / LOAD_DATA... / LOAD_END: the program into the board's program slot."""
        self.phase = "load"
        digest = hashlib.sha256(program).digest()
        self._loaded_sha = None
        self._request(Kind.LOAD_BEGIN, p.load_begin(len(program), digest), self.timeouts.transfer)
        chunk = self._max_payload() - p.LOAD_DATA_HEADER
        for offset in range(0, len(program), chunk):
            part = program[offset : offset + chunk]
            response = self._request(
                Kind.LOAD_DATA, p.load_data(offset) + part, self.timeouts.transfer
            )
            received = self._payload(response, p.parse_u32, "LOAD_DATA")
            if received != offset + len(part):
                raise self.fail(
                    f"LOAD_DATA: firmware has {received} bytes, sent {offset + len(part)}"
                )
        response = self._request(Kind.LOAD_END, b"", self.timeouts.run)
        return self._loaded_now(response, digest)

    def load_slot(self, size: int, digest: bytes) -> p.Loaded:
        """LOAD_SLOT: the program was preloaded into the program slot as an SDKP blob."""
        self.phase = "load"
        self._loaded_sha = None
        response = self._request(Kind.LOAD_SLOT, p.load_begin(size, digest), self.timeouts.run)
        return self._loaded_now(response, digest)

    def _loaded_now(self, response: p.Frame, digest: bytes) -> p.Loaded:
        self._loaded = self._payload(response, p.parse_loaded)
        self._loaded_sha = digest
        self.loads += 1
        return self._loaded

    def expected_seconds(self, nbytes: int, header: int = 0) -> float:
        """Seconds `nbytes` of payload take on the line in chunks of a frame's payload less
        `header` (0: no line speed known)."""
        if not self.line_bytes_per_second:
            return 0.0
        chunk = self._max_payload() - header
        frames = max(1, -(-nbytes // chunk))
        wire = nbytes * (1 + COBS_OVERHEAD) + frames * (FRAME_OVERHEAD + header)
        return wire / self.line_bytes_per_second

    def _progress(self, what: str, done: int, total: int, expected: float) -> None:
        if done == 0 and expected:
            self.log.event(
                f"{what}: {total} bytes over the line at {self.line_bytes_per_second:g} B/s, "
                f"expected {expected:.1f} s"
            )
        if self.on_transfer is not None and total > BIG_IO_OVER:
            self.on_transfer(what, done, total, expected)

    def set_input(self, index: int, array: np.ndarray, dtype_code: int) -> None:
        self.phase = f"set input {index}"
        if self.slot_program != self._loaded_sha:
            self.slot_inputs.clear()  # another program's layout: SET_INPUT may overwrite any
        self.slot_inputs.pop(index, None)  # the firmware's copy of it is this one from now on
        data = np.ascontiguousarray(array).tobytes()
        chunk = self._max_payload() - p.TENSOR_HEADER.size
        offsets = range(0, len(data), chunk) if data else [0]
        what = f"input {index}"
        expected = self.expected_seconds(len(data), p.TENSOR_HEADER.size)
        self._progress(what, 0, len(data), expected)
        for offset in offsets:
            part = data[offset : offset + chunk]
            header = p.TensorHeader(index, dtype_code, tuple(array.shape), len(data), offset, 0)
            response = self._request(Kind.SET_INPUT, header.pack() + part, self.timeouts.transfer)
            reply = self._payload(response, p.parse_fixed, "set_input_reply", "SET_INPUT")
            got_index, received = reply["index"], reply["received"]
            if got_index != index or received != offset + len(part):
                raise self.fail(
                    f"SET_INPUT: firmware has {received} bytes of input {got_index}, "
                    f"sent {offset + len(part)} of input {index}"
                )
            self._progress(what, received, len(data), expected)

    def slot_input_for(self, index: int, array: np.ndarray) -> SlotInput | None:
        """The preloaded copy of `array` as input `index` of the loaded program, if the inputs
        slot holds one (the firmware checks its CRC-32 again)."""
        slot = self.slot_inputs.get(index)
        if slot is None or self.slot_program != self._loaded_sha:
            return None
        data = np.ascontiguousarray(array).tobytes()
        if len(data) != slot.nbytes or zlib.crc32(data) != slot.crc:
            return None
        return slot

    def set_input_file(self, index: int, array: np.ndarray, dtype_code: int, offset: int) -> None:
        """SET_INPUT_FILE: the firmware reads input `index` from a file the host writes in
        `files_dir` into the inputs slot at `offset` (where it keeps that input), checks its
        CRC-32 and takes it; the slot then holds it for the next run of the same input."""
        assert self.files_dir is not None
        self.phase = f"set input {index} (file)"
        data = np.ascontiguousarray(array).tobytes()
        crc = zlib.crc32(data)
        self._files += 1
        name = f"sdk-in-{self.session:08x}-{self._files}-{index}.bin"
        path = self.files_dir / name
        if self.slot_program != self._loaded_sha:
            self.slot_inputs.clear()
        self.slot_program = self._loaded_sha
        self.slot_inputs.pop(index, None)  # whatever the answer, the slot's copy is gone
        write_input_file(path, data)
        try:
            header = p.TensorHeader(index, dtype_code, tuple(array.shape), len(data), offset, crc)
            response = self._request(
                Kind.SET_INPUT_FILE, p.set_input_file(header, name), self.timeouts.run
            )
        finally:
            path.unlink(missing_ok=True)
        reply = self._payload(response, p.parse_fixed, "set_input_reply", "SET_INPUT_FILE")
        if reply["index"] != index or reply["received"] != len(data):
            raise self.fail(
                f"SET_INPUT_FILE: firmware has {reply['received']} bytes of input "
                f"{reply['index']}, wrote {len(data)} of input {index}"
            )
        self.slot_inputs[index] = SlotInput(offset, len(data), crc)
        self.log.event(f"input {index}: {len(data)} bytes from {name} (semihosting)")

    def set_input_slot(
        self, index: int, array: np.ndarray, dtype_code: int, slot: SlotInput
    ) -> None:
        """SET_INPUT_SLOT: input `index` is the `slot.nbytes` bytes the host preloaded at
        `slot.offset` of the inputs slot, of CRC-32 `slot.crc` (the firmware checks them)."""
        self.phase = f"set input {index} (preloaded)"
        header = p.TensorHeader(
            index, dtype_code, tuple(array.shape), slot.nbytes, slot.offset, slot.crc
        )
        response = self._request(Kind.SET_INPUT_SLOT, header.pack(), self.timeouts.transfer)
        reply = self._payload(response, p.parse_fixed, "set_input_reply", "SET_INPUT_SLOT")
        if reply["index"] != index or reply["received"] != slot.nbytes:
            raise self.fail(
                f"SET_INPUT_SLOT: firmware has {reply['received']} bytes of input "
                f"{reply['index']}, preloaded {slot.nbytes} of input {index}"
            )

    def run(self, iterations: int = 1) -> p.RunTiming:
        self.phase = "run"
        response = self._request(
            Kind.RUN, p.run(iterations), self.timeouts.run, budget=self.timeouts.run
        )
        timing = self._payload(response, p.parse_run)
        if timing.iterations != iterations:
            raise self.fail(f"RUN: {timing.iterations} iterations ran, {iterations} asked")
        return timing

    def get_output(self, index: int, after_failure: bool = False) -> OutputRecord:
        """Output `index` of the last run, chunk by chunk; the data's CRC is the firmware's.
        `after_failure`: what a failed run left there (tests of kernels that refuse a call)."""
        self.phase = f"get output {index}"
        chunk = self._max_payload() - p.TENSOR_HEADER.size
        first: p.TensorHeader | None = None
        data = bytearray()
        what, expected = f"output {index}", 0.0
        while first is None or len(data) < first.nbytes:
            response = self._request(
                Kind.GET_OUTPUT,
                p.get_output(index, len(data), chunk, after_failure),
                self.timeouts.transfer,
            )
            header, part = self._payload(response, p.parse_tensor, "GET_OUTPUT")
            if header.index != index or header.offset != len(data):
                raise self.fail(
                    f"GET_OUTPUT: got output {header.index} at {header.offset}, asked output "
                    f"{index} at {len(data)}"
                )
            if first is not None and (header.dtype, header.shape, header.nbytes, header.crc) != (
                first.dtype, first.shape, first.nbytes, first.crc
            ):  # fmt: skip
                raise self.fail(f"GET_OUTPUT: output {index} changed between chunks")
            if first is None:
                first = header
                expected = self.expected_seconds(header.nbytes, p.TENSOR_HEADER.size)
                self._progress(what, 0, header.nbytes, expected)
            if not part and len(data) < header.nbytes:
                raise self.fail(f"GET_OUTPUT: no data at {len(data)} of {header.nbytes}")
            data += part
            self._progress(what, len(data), header.nbytes, expected)
        if len(data) != first.nbytes:
            raise self.fail(f"GET_OUTPUT: {len(data)} bytes of {first.nbytes}")
        return OutputRecord(first.index, first.dtype, first.shape, first.nbytes, first.crc, data)

    def get_output_file(self, index: int) -> OutputRecord:
        """GET_OUTPUT_FILE: output `index` of the last run, written by the firmware to a file
        in `files_dir` (semihosting); its length and CRC-32 must be the firmware's."""
        assert self.files_dir is not None
        self.phase = f"get output {index} (file)"
        self._files += 1
        name = output_file_name(self.session, self._files, index)
        path = self.files_dir / name
        path.unlink(missing_ok=True)  # what is there after the answer is this request's
        response = self._request(
            Kind.GET_OUTPUT_FILE, p.get_output_file(index, name), self.timeouts.run
        )
        header, part = self._payload(response, p.parse_tensor, "GET_OUTPUT_FILE")
        if header.index != index or header.offset != 0 or part:
            raise self.fail(
                f"GET_OUTPUT_FILE: answered for output {header.index} at {header.offset} with "
                f"{len(part)} bytes, asked output {index}'s file"
            )
        try:
            data = read_output_file(path)
        except OSError as exc:
            raise self.fail(f"GET_OUTPUT_FILE: the firmware wrote {path}, but: {exc}") from None
        path.unlink(missing_ok=True)
        if len(data) != header.nbytes or zlib.crc32(data) != header.crc:
            raise self.fail(
                f"GET_OUTPUT_FILE: {path} holds {len(data)} bytes of CRC-32 "
                f"{zlib.crc32(data):08x}, the firmware's output {index} {header.nbytes} bytes "
                f"of CRC-32 {header.crc:08x}"
            )
        self.log.event(f"output {index}: {len(data)} bytes from {name} (semihosting)")
        return OutputRecord(
            header.index, header.dtype, header.shape, header.nbytes, header.crc, data
        )

    def stats(self) -> p.Stats:
        self.phase = "stats"
        response = self._request(Kind.STATS, b"", self.timeouts.transfer)
        return self._payload(response, p.parse_stats)

    def profile(self) -> tuple[dict, list[dict]]:
        """The last RUN's per-instruction events (its last iteration), chunk by chunk: the
        reply header of the last chunk and every event."""
        self.phase = "profile"
        events: list[dict] = []
        while True:
            response = self._request(Kind.PROFILE, p.profile(len(events)), self.timeouts.transfer)
            header, part = self._payload(response, p.parse_profile)
            if header["first"] != len(events):
                raise self.fail(f"PROFILE: events from {header['first']}, asked {len(events)}")
            events += part
            if len(events) >= header["total"] or not part:
                return header, events

    def reset(self) -> p.Info:
        """RESET the firmware and start a new session once it is back (CONNECT is retransmitted
        until the rebooted firmware answers; its HELLO on the way is taken in passing)."""
        self.phase = "reset"
        self.connected = False  # from here on, a firmware that reset already is no news
        self.hello = None
        with contextlib.suppress(FirmwareRefused):  # it reset already: session 0
            self._request(Kind.RESET, b"", self.timeouts.transfer)
        t = self.timeouts
        retries, self.retries = self.retries, max(self.retries, int(t.reset / t.connect))
        try:
            return self.connect()
        finally:
            self.retries = retries

    # ---- raw link measurements (bench/link_bench.py) -----------------------------------------

    def link_test_sink(self, count: int, timeout: float = 120.0) -> tuple[float, int]:
        """Send `count` raw (unframed) bytes; (seconds until the firmware had them all, the
        firmware's tick count for them). No retransmission: a measurement, not a transfer."""
        self.phase = "link test (sink)"
        self._request(Kind.LINK_TEST, p.link_test("SINK", count), self.timeouts.transfer)
        start = time.monotonic()
        self._send(b"\x55" * count, f"{count} raw bytes")
        done = self._await(Kind.LINK_TEST, self._seq, timeout)
        if done is None:
            raise self.fail(f"the firmware did not confirm {count} raw bytes")
        elapsed = time.monotonic() - start
        reply = self._payload(done, p.parse_fixed, "link_test_reply", "LINK_TEST")
        got, ticks = reply["count"], reply["ticks"]
        if got != count:
            raise self.fail(f"LINK_TEST: the firmware counted {got} of {count} bytes")
        return elapsed, ticks

    def link_test_source(self, count: int, timeout: float = 120.0) -> float:
        """Have the firmware send `count` raw bytes; seconds until all arrived."""
        self.phase = "link test (source)"
        self._request(Kind.LINK_TEST, p.link_test("SOURCE", count), self.timeouts.transfer)
        start = time.monotonic()
        received = len(self._pending)
        deadline = start + timeout
        while received < count:
            if time.monotonic() > deadline:
                raise self.fail(f"{received} of {count} raw bytes arrived")
            self.port.timeout = 0.1
            data = self.port.read(65536)
            received += len(data)
            self._pending += data
        elapsed = time.monotonic() - start
        del self._pending[:count]
        if self._await(Kind.LINK_TEST, self._seq, timeout) is None:
            raise self.fail("no LINK_TEST response after the raw bytes")
        return elapsed

    def _max_payload(self) -> int:
        return min(self.info.max_payload if self.info else p.MAX_PAYLOAD, p.MAX_PAYLOAD)

    # ---- a whole run -------------------------------------------------------------------------

    def _set_input_file(self, index: int, array: np.ndarray, code: int, offset: int) -> bool:
        """Input `index` from a semihosting file when it is large and the target has a folder
        for them (a data set's later samples on an emulator): True when it was taken. A
        firmware without semihosting refuses with NotSupported: the UART, from then on."""
        if np.asarray(array).nbytes <= BIG_IO_OVER or self.files_dir is None:
            return False
        if not self.input_files:
            return False
        try:
            self.set_input_file(index, array, code, offset)
            return True
        except FirmwareRefused as refused:
            if refused.reply.name != "NotSupported":
                raise
            self.log.event(f"input files: {refused.reply.reason}; sending them over the link")
            self.input_files = False
            return False

    def _read_output(self, index: int, output_nbytes: Sequence[int] | None) -> OutputRecord:
        """Output `index`: from a semihosting file when it is large and the target has a
        folder for them, else over the link. A firmware without semihosting (exit=park)
        refuses the file with NotSupported: the link it is, for the rest of the session."""
        large = output_nbytes is not None and output_nbytes[index] > BIG_IO_OVER
        if large and self.files_dir is not None:
            try:
                return self.get_output_file(index)
            except FirmwareRefused as refused:
                if refused.reply.name != "NotSupported":
                    raise
                self.log.event(f"output files: {refused.reply.reason}; reading over the link")
                self.files_dir = None  # the same firmware has none for inputs either
        return self.get_output(index)

    def run_program(
        self,
        program: bytes,
        inputs: Sequence[np.ndarray],
        input_dtypes: Sequence[int],
        num_outputs: int | None = None,
        *,
        iterations: int = 1,
        reload: bool = False,
        preloaded: bool = False,
        outputs_after_failure: bool = False,
        output_nbytes: Sequence[int] | None = None,
    ) -> FirmwareRecord:
        """Load (unless this session loaded the same program), set inputs, run, read outputs.

        `num_outputs`: how many to read (the program's count, from the LOAD reply, by default).
        `preloaded`: the program is already in the program slot as an SDKP blob (LOAD_SLOT).
        `outputs_after_failure`: after a refused RUN, read what the outputs hold (kernel tests).
        `output_nbytes`: each output's size: one over BIG_IO_OVER is read from a file where the
        session has an `files_dir`; an input the inputs slot holds is taken from there.
        Returns the typed record; a firmware refusal is its error result, a link failure a
        TargetError. `check_record(record, ...)` decides whether the run passed."""
        if not self.connected:
            self.connect()
        record = FirmwareRecord(board=self.info.board if self.info else None)
        ran = False
        try:
            digest = hashlib.sha256(program).digest()
            if preloaded:
                self.load_slot(len(program), digest)
            elif reload or self._loaded is None or self._loaded_sha != digest:
                self.load(program)
            loaded = self._loaded
            record.memory = MemoryUse(
                loaded.planned_used, loaded.planned_size, loaded.metadata_used, loaded.metadata_size
            )
            count = loaded.num_outputs if num_outputs is None else num_outputs
            offsets = input_offsets([np.asarray(a).nbytes for a in inputs])
            for i, (array, code) in enumerate(zip(inputs, input_dtypes, strict=True)):
                slot = self.slot_input_for(i, array)
                if slot is not None:
                    self.set_input_slot(i, array, code, slot)
                elif not self._set_input_file(i, array, code, offsets[i]):
                    self.set_input(i, array, code)
            ran = True
            timing = self.run(iterations)
            for i in range(count):
                record.outputs.append(self._read_output(i, output_nbytes))
        except FirmwareRefused as refused:
            r = refused.reply
            record.result = Outcome(False, code=r.code, name=r.name, reason=r.reason)
            if ran and outputs_after_failure and not record.outputs:
                with contextlib.suppress(FirmwareRefused):  # outputs that are no tensors
                    for i in range(count):
                        record.outputs.append(self.get_output(i, after_failure=True))
            return record
        per_run = max(iterations, 1)
        record.result = Outcome(
            True,
            outputs=loaded.num_outputs,
            init_ticks=loaded.init_ticks,
            # The CPU's time: the waits for the host's virtual U55 are not the firmware's.
            run_ticks=(timing.total_ticks - timing.virtual_npu_ticks) // per_run,
            tick_hz=timing.tick_hz,
            virtual_npu_ticks=timing.virtual_npu_ticks // per_run,
        )
        return record
