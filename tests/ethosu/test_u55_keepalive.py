"""A long job on the virtual U55 keeps the firmware's exchange alive (sdk/ethosu/device.py
KeepAlive).

The firmware gives up on the host after 60 s of its time without a request inside the exchange
that started the job; the executor reports progress between operations and the model makes a
1-byte NPU_READ of the command stream at most every KEEPALIVE_SECONDS of host time. Here with a
fake session (counting its requests) and a fake host clock: no firmware, no QEMU. A QEMU test
would need a job past the firmware's 60 s, minutes of a test run: not written.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np
import pytest

from sdk.ethosu import device
from sdk.ethosu.device import CMD_RUN, REG, STATUS_END, Delegate, KeepAlive, VirtualU55
from sdk.ethosu.functional.execute import NpuState, execute
from sdk.ethosu.payload import NpuTensor, VelaStream
from sdk.ethosu.stream.decode import decode_cmd_data
from sdk.ethosu.stream.registers import BY_NAME, CMD1_CONTROL
from sdk.link import protocol as p
from sdk.program.tosa_file import TosaGraphInfo, TosaTensorInfo


class FakeClock:
    """Host time that moves only when the test says so (`step` seconds per reading, or
    `advance`)."""

    def __init__(self, step: float = 0.0) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakeSession:
    """The firmware's side of the NPU requests, over a flat memory at NPU address 0; counts
    the requests by kind."""

    def __init__(self, memory: bytearray) -> None:
        self.memory = memory
        self.reads: list[tuple[int, int]] = []
        self.hashes = self.writes = 0

    def npu_read(self, address: int, length: int) -> bytes:
        self.reads.append((address, length))
        return bytes(self.memory[address : address + length])

    def npu_hash(self, address: int, length: int) -> bytes:
        self.hashes += 1
        return hashlib.sha256(self.memory[address : address + length]).digest()

    def npu_write(self, address: int, data: bytes) -> None:
        self.writes += 1
        self.memory[address : address + len(data)] = data


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(device, "_clock", fake)
    return fake


def test_keepalive_reads_a_byte_at_most_every_interval(clock):
    session = FakeSession(bytearray(64))
    keepalive = KeepAlive(session, 16, interval=2.0)  # type: ignore[arg-type]
    for seconds in (0.5, 1.0, 1.0, 0.4, 1.7, 3.0):  # at 0.5, 1.5, 2.5 (>= 2), 2.9, 4.6, 7.6
        clock.advance(seconds)
        keepalive(0, 1)
    assert session.reads == [(16, 1), (16, 1), (16, 1)] and keepalive.requests == 3


class LongExecutor:
    """An executor whose job takes `steps` x `seconds` of (fake) host time: adds 1."""

    name = "long fake executor"

    def __init__(self, clock: FakeClock, steps: int, seconds: float) -> None:
        self.clock, self.steps, self.seconds = clock, steps, seconds

    def io(self, delegate_index: int) -> TosaGraphInfo:
        tensor = TosaTensorInfo("x", (1, 8), np.dtype(np.int8))
        return TosaGraphInfo([tensor], [tensor])

    def run(self, delegate_index, inputs, progress=None):
        for step in range(self.steps):
            self.clock.advance(self.seconds)
            if progress is not None:
                progress(step, self.steps)
        return [inputs[0] + 1]


QUEUE_AT, WEIGHTS_AT, SCRATCH_AT = 0x100, 0x400, 0x800


def test_a_long_job_on_the_virtual_u55_keeps_the_exchange_alive(clock):
    """100 steps of 0.5 s: 50 s of host computation, a keep-alive read every 2 s of it."""
    queue, weights = bytes(range(40)), b"weights!"
    memory = bytearray(0x1000)
    memory[QUEUE_AT : QUEUE_AT + len(queue)] = queue
    memory[WEIGHTS_AT : WEIGHTS_AT + len(weights)] = weights
    memory[SCRATCH_AT : SCRATCH_AT + 8] = bytes(range(8))
    record = NpuTensor((1, 1, 1, 1, 1, 8), 1, 0, 1)
    out = NpuTensor((1, 1, 1, 1, 1, 8), 1, 64, 1)
    stream = VelaStream({"weight_data": weights}, inputs=[record], outputs=[out])
    npu = VirtualU55("ethos-u55-128", executor=LongExecutor(clock, 100, 0.5))  # type: ignore[arg-type]
    npu._delegates.append(Delegate(0, stream, queue, hashlib.sha256(weights).digest()))
    session = FakeSession(memory)
    writes = [
        (REG["QBASE0"], QUEUE_AT), (REG["QSIZE"], len(queue)), (REG["BASEP0"], WEIGHTS_AT),
        (REG["BASEP2"], SCRATCH_AT), (REG["BASEP4"], SCRATCH_AT), (REG["CMD"], CMD_RUN),
    ]  # fmt: skip
    npu.handle(session, p.NpuRegs(0, tuple(writes), None))  # type: ignore[arg-type]
    assert npu.fault is None and npu.read(REG["STATUS"]) == STATUS_END
    assert bytes(memory[SCRATCH_AT + 64 : SCRATCH_AT + 72]) == bytes(range(1, 9))
    keepalives = [r for r in session.reads if r == (QUEUE_AT, 1)]
    assert len(keepalives) == 25  # at 2, 4, ..., 50 s


def command(name: str, value: int = 0) -> list[int]:
    """One command whose one field (or address) is `value`."""
    cmd = BY_NAME[name]
    word = ((CMD1_CONTROL if cmd.cmd1 else 0) << 14) | cmd.code
    if cmd.cmd1:
        return [word, value]
    field = cmd.fields[0] if cmd.fields else None
    return [word | ((value << field.lsb) << 16 if field else 0)]


def chained_abs(count: int) -> bytes:
    """`count` ELEMENTWISE ABS of 4 int8 elements, each on what the one before wrote (so none
    run together: the executor reports progress between each)."""
    words: list[int] = []
    for prefix in ("IFM", "OFM"):  # (1, 4, 1) int8 maps
        for register, value in (("REGION", 1), ("HEIGHT0_M1", 0), ("WIDTH0_M1", 3),
                                ("STRIDE_C", 1), ("STRIDE_X", 1), ("STRIDE_Y", 4),
                                ("PRECISION", 1)):  # fmt: skip
            words += command(f"NPU_SET_{prefix}_{register}", value)
    for register in ("OFM_HEIGHT_M1", "OFM_DEPTH_M1", "IFM_DEPTH_M1"):
        words += command(f"NPU_SET_{register}", 0)
    words += command("NPU_SET_OFM_WIDTH_M1", 3)
    for k in range(count):
        words += command("NPU_SET_IFM_BASE0", 4 * k) + command("NPU_SET_OFM_BASE0", 4 * k + 4)
        words += command("NPU_OP_ELEMENTWISE", 6)  # ABS
    words += command("NPU_OP_STOP", 0xFFFF)
    action = 2 | ((len(words) >> 16) << 8) | ((len(words) & 0xFFFF) << 16)
    return b"COP1" + struct.pack(f"<{len(words) + 1}I", action, *words)


def test_the_functional_model_reports_progress_on_a_long_stream(monkeypatch):
    """1000 operations, each read of the clock 0.1 s: the keep-alive reads every 2 s."""
    clock = FakeClock(step=0.1)
    monkeypatch.setattr(device, "_clock", clock)
    decoded = decode_cmd_data(chained_abs(1000))
    memory = np.zeros(4 * 1001, dtype=np.uint8)
    memory[:4] = np.array([-1, 2, -3, 4], dtype=np.int8).view(np.uint8)
    session = FakeSession(bytearray(64))
    keepalive = KeepAlive(session, 8)  # type: ignore[arg-type]
    execute(decoded, NpuState({1: memory}), keepalive)
    assert memory[4000:].view(np.int8).tolist() == [1, 2, 3, 4]
    assert session.reads and set(session.reads) == {(8, 1)}
    assert 40 <= keepalive.requests <= 60  # about 1000 calls x 0.1 s / 2 s
