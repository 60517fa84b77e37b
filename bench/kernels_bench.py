"""Instruction counts of the CPU kernels on Cortex-M55: the real firmware under QEMU -icount.

Builds the board firmware with every kernel twice: as shipped (Helium on) and with
`kernel_mve=0` (the kernels' own portable scalar path, compiled the same way otherwise: same
-O3, same flags, MVE off for the kernel sources only). Boots one-op programs exported with
ExecuTorch on QEMU mps3-an547 with `-icount shift=0`, where the firmware's run_ticks around
execute() convert to retired instructions (RunReport.timing.instructions; resolution about 31
instructions). Each figure subtracts the same operator's run on a tiny shape (the runtime's
per-instruction overhead and the kernel's argument checks), so it is the cost per unit of work:
per MAC for aten::bmm.out (float32, int16, int8), aten::mm.out and aten::convolution.out
(float32, 3x3, padding 1), per byte for
aten::split_with_sizes_copy.out, per element for add.out and quantize_per_tensor.out.
Every output is checked against numpy first: the measured code must be right.

QEMU models no pipeline: these are instruction counts, not cycles.

    .venv/bin/python bench/kernels_bench.py
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sdk.firmware.boards import load_board  # noqa: E402
from sdk.firmware.build import build_firmware  # noqa: E402
from sdk.program.pte import load_program  # noqa: E402
from sdk.targets.base import RunOptions  # noqa: E402
from sdk.targets.run import make_target  # noqa: E402

BOARD = "corstone300"
TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Case:
    """One operator at a measured shape and at a tiny one (the overhead)."""

    name: str
    unit: str
    fn: Callable
    make_inputs: Callable[[tuple[int, ...]], list[np.ndarray]]
    work: Callable[[tuple[int, ...]], int]
    check: Callable[[list[np.ndarray], list[np.ndarray]], None]
    shape: tuple[int, ...]
    tiny: tuple[int, ...]


def _rng() -> np.random.Generator:
    return np.random.default_rng(7)


def _bmm_inputs(dtype) -> Callable[[tuple[int, ...]], list[np.ndarray]]:
    def make(shape: tuple[int, ...]) -> list[np.ndarray]:
        m, k, n = shape
        rng = _rng()
        if np.dtype(dtype).kind == "f":
            return [rng.standard_normal((1, m, k)).astype(dtype),
                    rng.standard_normal((1, k, n)).astype(dtype)]  # fmt: skip
        return [rng.integers(-100, 100, (1, m, k)).astype(dtype),
                rng.integers(-100, 100, (1, k, n)).astype(dtype)]  # fmt: skip

    return make


def _check_bmm(inputs: list[np.ndarray], outputs: list[np.ndarray]) -> None:
    a, b = inputs
    if a.dtype.kind == "f":
        np.testing.assert_allclose(outputs[0], a @ b, rtol=1e-4, atol=1e-4)
    else:  # integers wrap in their own width
        exact = a.astype(np.int64) @ b.astype(np.int64)
        np.testing.assert_array_equal(outputs[0], exact.astype(a.dtype))


def _macs(shape: tuple[int, ...]) -> int:
    m, k, n = shape
    return m * k * n


def _mm_inputs(shape: tuple[int, ...]) -> list[np.ndarray]:
    return [x[0] for x in _bmm_inputs(np.float32)(shape)]


def _conv_inputs(shape: tuple[int, ...]) -> list[np.ndarray]:
    c, h, w, cout, k = shape
    rng = _rng()
    return [rng.standard_normal((1, c, h, w)).astype(np.float32),
            rng.standard_normal((cout, c, k, k)).astype(np.float32),
            rng.standard_normal((cout,)).astype(np.float32)]  # fmt: skip


def _conv(x, w, b):
    import torch

    return torch.nn.functional.conv2d(x, w, b, padding=w.shape[-1] // 2)


def _check_conv(inputs: list[np.ndarray], outputs: list[np.ndarray]) -> None:
    import torch

    expected = _conv(*(torch.from_numpy(a).double() for a in inputs)).numpy()
    np.testing.assert_allclose(outputs[0], expected, rtol=1e-4, atol=1e-4)


def _conv_macs(shape: tuple[int, ...]) -> int:
    c, h, w, cout, k = shape
    return c * h * w * cout * k * k  # padding k // 2, stride 1: H x W outputs per channel


def _split_inputs(shape: tuple[int, ...]) -> list[np.ndarray]:
    rows, cols = shape
    return [_rng().integers(-128, 128, (rows, cols)).astype(np.int8)]


def _split(t):
    import torch

    first = t.shape[1] * 8 // 25  # 512 of 1600
    return torch.split(t, [first, t.shape[1] - first], dim=1)


def _check_split(inputs: list[np.ndarray], outputs: list[np.ndarray]) -> None:
    (x,) = inputs
    np.testing.assert_array_equal(np.concatenate(outputs, axis=1), x)


def _floats(shape: tuple[int, ...], count: int) -> list[np.ndarray]:
    rng = _rng()
    return [(rng.standard_normal(shape) * 3).astype(np.float32) for _ in range(count)]


def _quantize(t):
    import torch

    return torch.ops.quantized_decomposed.quantize_per_tensor(t, 0.05, 3, -128, 127, torch.int8)


def _check_quantize(inputs: list[np.ndarray], outputs: list[np.ndarray]) -> None:
    expected = np.clip(np.rint(inputs[0] * np.float32(1 / 0.05)) + 3, -128, 127)
    assert np.abs(outputs[0].astype(np.int32) - expected).max() <= 1


def cases() -> list[Case]:
    import torch

    bmm = torch.bmm
    return [
        Case("bmm float32 48x256x64", "MAC", bmm, _bmm_inputs(np.float32), _macs, _check_bmm,
             (48, 256, 64), (1, 1, 1)),
        Case("bmm int16 48x256x64", "MAC", bmm, _bmm_inputs(np.int16), _macs, _check_bmm,
             (48, 256, 64), (1, 1, 1)),
        Case("bmm int8 48x256x128", "MAC", bmm, _bmm_inputs(np.int8), _macs, _check_bmm,
             (48, 256, 128), (1, 1, 1)),
        Case("mm float32 48x256x64", "MAC", torch.mm, _mm_inputs, _macs,
             lambda i, o: _check_bmm([a[None] for a in i], [x[None] for x in o]),
             (48, 256, 64), (1, 1, 1)),
        Case("conv2d float32 16x32x32->16 3x3", "MAC", _conv, _conv_inputs, _conv_macs,
             _check_conv, (16, 32, 32, 16, 3), (1, 1, 1, 1, 1)),
        Case("split_with_sizes_copy int8 96x1600", "byte", _split, _split_inputs,
             lambda s: s[0] * s[1], _check_split, (96, 1600), (1, 25)),
        Case("add.out float32 16384", "element", lambda a, b: a + b, lambda s: _floats(s, 2),
             lambda s: s[0],
             lambda i, o: np.testing.assert_array_equal(o[0], i[0] + i[1]), (16384,), (1,)),
        Case("quantize_per_tensor int8 16384", "element", _quantize, lambda s: _floats(s, 1),
             lambda s: s[0], _check_quantize, (16384,), (1,)),
    ]  # fmt: skip


def export(fn: Callable, inputs: list[np.ndarray]) -> bytes:
    """The .pte of a CPU-only program computing fn(*inputs), as ExecuTorch exports it."""
    import executorch.kernels.quantized  # noqa: F401  (registers quantized_decomposed)
    import torch
    from executorch.exir import to_edge_transform_and_lower

    class Fn(torch.nn.Module):
        def forward(self, *args):
            return fn(*args)

    exported = torch.export.export(Fn(), tuple(torch.from_numpy(x) for x in inputs))
    return to_edge_transform_and_lower(exported).to_executorch().buffer


class Runner:
    """Boots a built firmware on QEMU and runs a program over the link (one boot per run:
    instruction counts then carry no other program's state; +-1 SysTick tick of jitter)."""

    def __init__(self, workdir: Path) -> None:
        self.board = load_board(BOARD)
        self.strategy = make_target("qemu", self.board).strategy
        if not self.strategy.power.counts_instructions:
            raise SystemExit(f"board {BOARD}: its QEMU target does not run with -icount")
        self.workdir = workdir
        self.count = 0

    def instructions(self, elf: Path, pte: bytes, inputs: list[np.ndarray], check) -> int:
        self.count += 1
        folder = self.workdir / f"run{self.count}"
        program = load_program(pte)
        options = RunOptions(timeout_s=TIMEOUT_S, workdir=folder, firmware=elf)
        result = self.strategy.run_program(program, inputs, options)
        check(inputs, result.outputs)
        assert result.timing.instructions is not None
        return result.timing.instructions


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        print("building the firmware with every kernel: Helium, and kernel_mve=0 ...", flush=True)
        firmwares = {
            "Helium": build_firmware(BOARD, None, workdir / "mve.elf"),
            "scalar": build_firmware(BOARD, None, workdir / "scalar.elf", kernel_mve=False),
        }
        runner = Runner(workdir)
        rows = []
        for case in cases():
            big, tiny = case.make_inputs(case.shape), case.make_inputs(case.tiny)
            big_pte, tiny_pte = export(case.fn, big), export(case.fn, tiny)
            row = {}
            for label, elf in firmwares.items():
                measured = runner.instructions(elf, big_pte, big, case.check)
                overhead = runner.instructions(elf, tiny_pte, tiny, case.check)
                work = case.work(case.shape) - case.work(case.tiny)
                row[label] = (measured, overhead, (measured - overhead) / work)
            rows.append((case, row))

    print(
        "\ninstructions retired in execute() (QEMU mps3-an547, -icount shift=0), minus the same"
        "\noperator on a tiny shape (overhead); scalar = the kernels' portable path (kernel_mve=0)"
    )
    header = (
        f"{'measurement':<36} {'work':>12}  {'Helium':>10} {'per unit':>9}  "
        f"{'scalar':>10} {'per unit':>9}  {'scalar/Helium':>13}"
    )
    print(header)
    print("-" * len(header))
    for case, row in rows:
        (mve, _, mve_unit), (scalar, _, scalar_unit) = row["Helium"], row["scalar"]
        work = f"{case.work(case.shape)} {case.unit}"
        print(
            f"{case.name:<36} {work:>12}  {mve:>10} {mve_unit:>9.3f}  "
            f"{scalar:>10} {scalar_unit:>9.3f}  {scalar_unit / mve_unit:>12.1f}x"
        )
    print("\noverhead (the tiny shape): " + ", ".join(
        f"{case.name.split()[0]} {row['Helium'][1]}/{row['scalar'][1]}" for case, row in rows
    ))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
