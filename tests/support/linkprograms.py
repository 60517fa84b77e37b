"""Programs, inputs and the oracle for the host-link tests, and QEMU started as a user would."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from tests.support.etprograms import export_cpu, oracle, random_inputs  # noqa: F401 (re-exported)

BOARD = "corstone300"


def link_modules():
    import executorch.kernels.quantized  # noqa: F401  (registers the quantized ops)
    import torch
    from torch import nn

    qd = torch.ops.quantized_decomposed

    class Mix(nn.Module):
        """Two inputs; a float and an int16 output."""

        def forward(self, x, y):
            q = qd.quantize_per_tensor(x, 0.01, 3, -32768, 32767, torch.int16)
            d = qd.dequantize_per_tensor(q, 0.01, 3, -32768, 32767, torch.int16)
            return torch.cat([(d * y + x).permute(0, 2, 1), y.permute(0, 2, 1)], dim=1), q

    class Int8(nn.Module):
        """An int8 input and output beside a float one."""

        def forward(self, x, z):
            q = qd.quantize_per_tensor(x * 3.0, 0.05, -2, -128, 127, torch.int8)
            return q, qd.dequantize_per_tensor(z, 0.1, 1, -128, 127, torch.int8) + 1.0

    class Big(nn.Module):
        """Tensors of several frames each way (48 KiB in, 144 KiB out)."""

        def forward(self, x):
            return torch.cat([x * 2.0, x + 1.0], dim=0), x.permute(1, 0).contiguous()

    class Bmm(nn.Module):
        """Integer batched matmul: exact on every kernel path (floats would differ by the
        Helium kernel's fused multiply-adds)."""

        def forward(self, x, y):
            return torch.bmm(x, y) + 3

    return {
        "mix": (Mix(), (torch.randn(2, 8, 16), torch.randn(2, 8, 16))),
        "int8": (Int8(), (torch.randn(4, 33), torch.randint(-128, 127, (3, 5), dtype=torch.int8))),
        "big": (Big(), (torch.randn(96, 128),)),
        "bmm": (
            Bmm(),
            (
                torch.randint(-9, 9, (2, 3, 4), dtype=torch.int32),
                torch.randint(-9, 9, (2, 4, 5), dtype=torch.int32),
            ),
        ),
    }


def assert_identical(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


@contextlib.contextmanager
def listening_qemu(elf: Path, workdir: Path) -> Iterator[int]:
    """QEMU as a user starts it for `--target serial`: `-serial tcp:127.0.0.1:PORT,server=on,
    wait=on`; yields PORT once QEMU says it is waiting for the connection."""
    import socket
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    workdir.mkdir(parents=True, exist_ok=True)
    command = [
        "qemu-system-arm", "-M", "mps3-an547", "-display", "none", "-monitor", "none",
        "-semihosting-config", "enable=on,target=native", "-icount", "shift=0",
        "-serial", f"tcp:127.0.0.1:{port},server=on,wait=on,nodelay=on", "-kernel", str(elf),
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        # QEMU announces that it waits for the client: the handshake, no sleep.
        seen = b""
        while b"waiting for connection" not in seen:
            line = process.stderr.readline()
            if not line:
                raise AssertionError(f"QEMU did not start listening: {seen.decode()}")
            seen += line
        yield port
    finally:
        process.kill()
        process.wait()
        process.stderr.close()
