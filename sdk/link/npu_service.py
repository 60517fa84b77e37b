"""The host's side of the virtual U55's exchanges inside a request (docs/link.md "Virtual U55"):
the firmware's driver sends its register accesses (NPU_REGS), the device answers them (NPU_DONE),
and reads, writes and hashes target memory the NPU reaches (NPU_READ, NPU_WRITE, NPU_HASH)."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from sdk.errors import FirmwareRefused
from sdk.link import protocol as p
from sdk.link.bigio import BIG_IO_OVER
from sdk.link.protocol import Kind

if TYPE_CHECKING:
    from sdk.link.session import LinkSession


def write_npu_file(path: Path, data: bytes) -> None:
    """The file NPU_WRITE_FILE has the firmware read (a function: tests feed wrong bytes)."""
    path.write_bytes(data)


class NpuDevice(Protocol):
    """What answers a firmware's NPU register exchanges on the host (a virtual U55)."""

    def handle(self, session: LinkSession, regs: p.NpuRegs) -> tuple[int, bool]:
        """Apply the exchange's writes; the value of its read and the IRQ line's level."""
        ...


class NpuService:
    """The virtual-U55 requests of a LinkSession (a base of it: it makes them with the
    session's request machinery)."""

    npu_device: NpuDevice | None
    session: int
    _last_exchange: tuple[int, int] | None
    files_dir: Path | None  # the emulator's folder for semihosting files (None: a board)
    npu_write_files: bool = True  # NPU_WRITE_FILE for large writes (until NotSupported)
    _npu_files: int = 0

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
        """Bytes into target memory at an NPU address (the virtual U55's outputs): from a
        semihosting file (NPU_WRITE_FILE) when they are large and the target is an emulator
        (QEMU's UART moves 15 KiB/s host to board), else chunk by chunk (NPU_WRITE)."""
        if len(data) > BIG_IO_OVER and self.files_dir is not None and self.npu_write_files:
            try:
                return self._npu_write_file(address, data)
            except FirmwareRefused as refused:
                if refused.reply.name != "NotSupported":
                    raise
                self.log.event(f"NPU_WRITE_FILE: {refused.reply.reason}; NPU_WRITE it is")
                self.npu_write_files = False
        self.phase = "virtual U55 write"
        chunk = self._max_payload() - p.NPU_WRITE_HEADER
        for start in range(0, len(data), chunk):
            part = data[start : start + chunk]
            response = self._request(
                Kind.NPU_WRITE, p.npu_write(address + start, part), self.timeouts.transfer
            )
            if self._payload(response, p.parse_u32, "NPU_WRITE") != len(part):
                raise self.fail("NPU_WRITE: the firmware wrote less than sent")

    def _npu_write_file(self, address: int, data: bytes) -> None:
        """NPU_WRITE_FILE: the firmware reads `data` from a file the host wrote in the
        emulator's folder; its CRC-32 of what it wrote must be the data's."""
        assert self.files_dir is not None
        self.phase = "virtual U55 write (file)"
        self._npu_files += 1
        name = f"sdk-npu-{self.session:08x}-{self._npu_files}.bin"
        path = self.files_dir / name
        write_npu_file(path, data)
        try:
            response = self._request(
                Kind.NPU_WRITE_FILE,
                p.npu_write_file(address, len(data), name),
                self.timeouts.transfer,
            )
        finally:
            path.unlink(missing_ok=True)
        reply = self._payload(response, p.parse_fixed, "npu_write_file_reply", "NPU_WRITE_FILE")
        if reply["written"] != len(data) or reply["crc32"] != zlib.crc32(data):
            raise self.fail(
                f"NPU_WRITE_FILE: the firmware wrote {reply['written']} bytes of CRC-32 "
                f"{reply['crc32']:08x}, the host's {len(data)} bytes {zlib.crc32(data):08x}"
            )

    def npu_hash(self, address: int, length: int) -> bytes:
        """SHA-256 of target memory, computed by the firmware (constant regions stay put)."""
        self.phase = "virtual U55 hash"
        response = self._request(Kind.NPU_HASH, p.npu_memory(address, length), self.timeouts.run)
        if len(response.payload) != 32:
            raise self.fail(f"NPU_HASH: {len(response.payload)} bytes, not a SHA-256")
        return response.payload
