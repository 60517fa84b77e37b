"""The host's side of the virtual U55's exchanges inside a request (docs/link.md "Virtual U55"):
the firmware's driver sends its register accesses (NPU_REGS), the device answers them (NPU_DONE),
and reads, writes and hashes target memory the NPU reaches (NPU_READ, NPU_WRITE, NPU_HASH)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from sdk.link import protocol as p
from sdk.link.protocol import Kind

if TYPE_CHECKING:
    from sdk.link.session import LinkSession


class NpuDevice(Protocol):
    """What answers a firmware's NPU register exchanges on the host (a virtual U55)."""

    def handle(self, session: LinkSession, regs: p.NpuRegs) -> tuple[int, bool]:
        """Apply the exchange's writes; the value of its read and the IRQ line's level."""
        ...


class NpuService:
    """The virtual-U55 requests of a LinkSession (a base of it: it makes them with the
    session's request machinery)."""

    npu_device: NpuDevice | None
    _last_exchange: tuple[int, int] | None

    def _npu_exchange(self, frame: p.Frame, request_seq: int) -> None:
        regs = self._payload(frame, p.parse_npu_regs)
        if (request_seq, regs.exchange) == self._last_exchange:
            return  # announced again after we answered it (our NPU_DONE crossed it)
        phase = self.phase
        value, irq = (0, False) if self.npu_device is None else self.npu_device.handle(self, regs)
        self.phase = "virtual U55 done"
        self._request(Kind.NPU_DONE, p.npu_done(value, irq), self.timeouts.transfer)
        self.phase = phase
        self._last_exchange = (request_seq, regs.exchange)

    def npu_read(self, address: int, length: int) -> bytes:
        """Bytes of target memory at an NPU address (the virtual U55's reads), chunk by chunk.
        Memory the firmware does not let the NPU reach is its refusal (FirmwareRefused)."""
        self.phase = "virtual U55 read"
        data = bytearray()
        chunk = self._max_payload()
        while len(data) < length:
            want = min(chunk, length - len(data))
            response = self._request(
                Kind.NPU_READ, p.npu_memory(address + len(data), want), self.timeouts.transfer
            )
            if len(response.payload) != want:
                raise self.fail(f"NPU_READ: {len(response.payload)} bytes, asked {want}")
            data += response.payload
        return bytes(data)

    def npu_write(self, address: int, data: bytes) -> None:
        self.phase = "virtual U55 write"
        chunk = self._max_payload() - p.NPU_WRITE_HEADER
        for start in range(0, len(data), chunk):
            part = data[start : start + chunk]
            response = self._request(
                Kind.NPU_WRITE, p.npu_write(address + start, part), self.timeouts.transfer
            )
            if self._payload(response, p.parse_u32, "NPU_WRITE") != len(part):
                raise self.fail("NPU_WRITE: the firmware wrote less than sent")

    def npu_hash(self, address: int, length: int) -> bytes:
        """SHA-256 of target memory, computed by the firmware (constant regions stay put)."""
        self.phase = "virtual U55 hash"
        response = self._request(Kind.NPU_HASH, p.npu_memory(address, length), self.timeouts.run)
        if len(response.payload) != 32:
            raise self.fail(f"NPU_HASH: {len(response.payload)} bytes, not a SHA-256")
        return response.payload
