"""`sdk run` on every target goes through one comparison: a wrong --expect fails everywhere.

Targets: the host reference, QEMU (over the host link), a board over serial (QEMU started by
hand with its UART on TCP, as a user does), and the FVP. No FVP is installed here: its
STAND-IN (tests/support/fvp_standin.py: the FVP's command line, the real link firmware on QEMU
behind it), and a FAKE that exits before its UART listens."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main
from sdk.utils.npz import read_arrays, write_arrays
from tests.support.linkprograms import export_cpu, listening_qemu

HERE = Path(__file__).resolve().parent

BOARD = "corstone300"
FVP = "FVP_Corstone_SSE-300_Ethos-U55"


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """A small CPU program, its inputs, the right outputs and a wrong expectation."""
    import torch

    class AddMul(torch.nn.Module):
        def forward(self, x, y):
            return x + y, (x * y).to(torch.int32)

    folder = tmp_path_factory.mktemp("run_targets")
    example = tuple(torch.randint(-50, 50, (3, 7), dtype=torch.int32) for _ in range(2))
    pte = export_cpu(AddMul(), example, folder / "addmul.pte")
    rng = np.random.default_rng(0)
    inputs = [rng.integers(-50, 50, (3, 7), dtype=np.int32) for _ in range(2)]
    write_arrays(folder / "in.npz", inputs)
    right = [inputs[0] + inputs[1], inputs[0] * inputs[1]]
    write_arrays(folder / "right.npz", right)
    wrong = [right[0].copy(), right[1].copy()]
    wrong[1][2, 6] += 1  # one element of one output, by one
    write_arrays(folder / "wrong.npz", wrong)
    return pte, folder


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def check_target(capsys, case, tmp_path, *target_args):
    pte, folder = case
    base = ["run", "--board", BOARD, *target_args, pte, "--inputs", folder / "in.npz"]
    code, out, err = run(capsys, *base, "-o", tmp_path / "a.npz", "--expect", folder / "right.npz")
    assert code == 0, err
    assert "output 1: bit-identical" in out
    code, out, err = run(capsys, *base, "-o", tmp_path / "b.npz", "--expect", folder / "wrong.npz")
    assert code == 4, (out, err)
    assert "output 1: max |diff| 1 (tolerance 0) MISMATCH" in err
    np.testing.assert_array_equal(
        read_arrays(tmp_path / "b.npz")[1], read_arrays(folder / "right.npz")[1]
    )


def test_host_target_compares(capsys, case, tmp_path):
    check_target(capsys, case, tmp_path, "--target", "host")


@pytest.mark.slow
def test_qemu_target_compares(capsys, case, tmp_path):
    check_target(capsys, case, tmp_path, "--target", "qemu")


@pytest.mark.slow
def test_serial_target_compares(capsys, case, tmp_path):
    pte, _ = case
    elf = tmp_path / "fw.elf"
    assert main(["build", "--board", BOARD, str(pte), "-o", str(elf)]) == 0
    for k in range(2):  # one QEMU per run: each run opens the port anew
        with listening_qemu(elf, tmp_path / f"q{k}") as port:
            url = f"socket://127.0.0.1:{port}"
            pte_, folder = case
            expect = folder / ("right.npz" if k == 0 else "wrong.npz")
            code, out, err = run(
                capsys, "run", "--board", BOARD, "--target", "serial", "--port", url, pte_,
                "--inputs", folder / "in.npz", "-o", tmp_path / f"s{k}.npz", "--expect", expect,
            )  # fmt: skip
            assert code == (0 if k == 0 else 4), (out, err)


def test_serial_target_without_a_board_is_one_clear_error(capsys, case, tmp_path):
    pte, folder = case
    base = [
        "run",
        "--target",
        "serial",
        pte,
        "--inputs",
        folder / "in.npz",
        "-o",
        tmp_path / "o.npz",
    ]
    code, _, err = run(capsys, *base)
    assert code == 2 and "--target serial needs --port URL" in err
    code, _, err = run(capsys, *base, "--port", "socket://127.0.0.1:9")
    assert code == 1 and err.count("\n") == 1
    assert "cannot open serial port socket://127.0.0.1:9" in err
    assert not (tmp_path / "o.npz").exists()


@pytest.mark.slow
def test_fvp_target_compares(capsys, case, tmp_path, fvp_standin):
    check_target(capsys, case, tmp_path, "--target", "fvp")


def test_an_fvp_that_never_opens_its_uart_never_passes(capsys, case, tmp_path, monkeypatch):
    """A FAKE FVP that prints nothing and exits: a clear failure, never a pass."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / FVP).write_text("#!/bin/sh\necho 'Info: licence checked'\nexit 3\n")
    (bin_dir / FVP).chmod(0o755)
    monkeypatch.setenv("SDK_FVP", str(bin_dir / FVP))
    pte, folder = case
    code, _, err = run(
        capsys, "run", "--target", "fvp", pte, "--inputs", folder / "in.npz",
        "-o", tmp_path / "o.npz",
    )  # fmt: skip
    assert code == 1 and "exited with 3 before its UART listened" in err, err
    assert not (tmp_path / "o.npz").exists()
