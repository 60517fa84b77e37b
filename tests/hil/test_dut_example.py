"""A hardware-in-the-loop bench as a user writes one: a plain pytest file and the `dut` fixture.

    pytest tests/hil --target serial --port /dev/ttyACM0    # a flashed board
    pytest tests/hil                                         # QEMU (the default target)

Without a board (`--target serial` and nothing at --port) these tests are skipped, never
passed."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np


@functools.cache
def program() -> Path:
    """A small program of our own (a bench would use its model's `sdk export` output)."""
    import torch
    from executorch.exir import to_edge_transform_and_lower

    class Scale(torch.nn.Module):
        def forward(self, x, y):
            return x * 2.0 + y, (x - y).sum(dim=[1])

    example = (torch.randn(4, 16), torch.randn(4, 16))
    exported = torch.export.export(Scale(), example)
    path = Path(tempfile.mkdtemp(prefix="hil-")) / "scale.pte"
    path.write_bytes(to_edge_transform_and_lower(exported).to_executorch().buffer)
    return path


def inputs(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((4, 16)).astype(np.float32) for _ in range(2)]


def test_outputs_are_the_model_s(dut):
    x, y = inputs(1)
    result = dut.run(program(), [x, y])
    np.testing.assert_allclose(result.outputs[0], x * 2.0 + y, rtol=1e-6)
    np.testing.assert_allclose(result.outputs[1], (x - y).sum(axis=1), rtol=1e-5, atol=1e-5)
    assert result.timing.run_ticks > 0


def test_a_data_set_runs_sample_by_sample(dut, tmp_path):
    samples = [inputs(10 + i) for i in range(6)]
    xs, ys = (np.stack([s[k] for s in samples]) for k in range(2))
    np.savez(tmp_path / "data.npz", arr_0=xs, arr_1=ys)
    result = dut.run_dataset(program(), tmp_path / "data.npz")
    assert result.measured == 6 and not result.interrupted
    np.testing.assert_allclose(result.device[0], xs * 2.0 + ys, rtol=1e-6)


def test_a_repeated_run_gives_the_same_outputs(dut):
    first = dut.run(program(), inputs(2))
    second = dut.run(program(), inputs(2), iterations=3)
    for a, b in zip(first.outputs, second.outputs, strict=True):
        np.testing.assert_array_equal(a, b)
