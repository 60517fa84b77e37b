"""Programs, inputs and the oracle for the host-link tests, and QEMU started as a user would."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

BOARD = "corstone300"


def export_cpu(module, example_inputs, path: Path) -> Path:
    import torch
    from executorch.exir import to_edge_transform_and_lower

    exported = torch.export.export(module, example_inputs)
    path.write_bytes(to_edge_transform_and_lower(exported).to_executorch().buffer)
    return path


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


def random_inputs(pte: Path, seed: int) -> list[np.ndarray]:
    from sdk.program.pte import load_program, numpy_dtype

    rng = np.random.default_rng(seed)
    arrays = []
    for info in load_program(pte).inputs():
        dtype = numpy_dtype(info.scalar_type)
        if dtype.kind == "f":
            arrays.append(rng.standard_normal(info.shape).astype(dtype))
        else:
            bounds = np.iinfo(dtype)
            arrays.append(rng.integers(bounds.min, bounds.max, info.shape, dtype=dtype))
    return arrays


def oracle(pte: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """ExecuTorch's own runtime on the same program and inputs."""
    import executorch.kernels.quantized  # noqa: F401
    import torch
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(pte.read_bytes())
    method = program.load_method("forward")
    return [t.numpy() for t in method.execute([torch.from_numpy(x) for x in inputs])]


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
