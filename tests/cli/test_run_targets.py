"""`sdk run` on every target goes through one comparison: a wrong --expect fails everywhere.

Targets: the host reference, QEMU (over the host link), a board over serial (QEMU started by
hand with its UART on TCP, as a user does), and the FVP. No FVP is installed here: a stand-in
script named like it (a FAKE, for the absent simulator) replays a console the real firmware
printed under QEMU, or prints a failure, or nothing."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from sdk.cli.main import main
from sdk.npz import read_arrays, write_arrays

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "link"))
from linkprograms import export_cpu, listening_qemu  # noqa: E402

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


def fake_fvp(bin_dir: Path, console: str | None) -> None:
    """A stand-in for the FVP binary: writes `console` to the UART0 log file it is given."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / FVP
    body = "" if console is None else console
    (bin_dir / "console.txt").write_text(body)
    script.write_text(
        "#!/usr/bin/env python3\n"
        "# FAKE FVP for tests: replays a console into mps3_board.uart0.out_file.\n"
        "import sys\n"
        "args = sys.argv[1:]\n"
        "out = [a.split('=', 1)[1] for a in args if a.startswith('mps3_board.uart0.out_file=')]\n"
        f"text = open({str(bin_dir / 'console.txt')!r}).read()\n"
        "if out and text:\n"
        "    open(out[0], 'w').write(text)\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.fixture(scope="module")
def real_console(case, tmp_path_factory) -> str:
    """What the real firmware prints for this run on the preloaded path (under QEMU)."""
    from sdk.firmware.boards import load_board
    from sdk.firmware.build import build_firmware
    from sdk.npz import read_arrays as read
    from sdk.program.pte import load_program
    from sdk.targets.qemu import QemuTarget
    from sdk.targets.run import run_built

    pte, folder = case
    workdir = tmp_path_factory.mktemp("fvp_console")
    board = load_board(BOARD)
    elf = build_firmware(BOARD, pte, workdir / "fw.elf")
    report = run_built(
        QemuTarget(board), board, elf, load_program(pte), read(folder / "in.npz"), 60, workdir
    )
    return report.log_path.read_text()


@pytest.mark.slow
def test_fvp_target_compares(capsys, case, tmp_path, real_console, monkeypatch):
    fake_fvp(tmp_path / "bin", real_console)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    check_target(capsys, case, tmp_path, "--target", "fvp")


@pytest.mark.parametrize(
    "console,message",
    [
        (None, "no '@sdk begin' record"),
        ("@sdk begin v=1 board=corstone300\n", "ended without a result line"),
        (
            "@sdk begin v=1 board=corstone300\n@sdk result status=error code=6 "
            'name=BackendMissing reason="no backend"\n',
            "firmware error BackendMissing (code 6): no backend",
        ),
    ],
    ids=["nothing", "no-result", "failure"],
)
@pytest.mark.slow
def test_an_fvp_that_prints_a_failure_or_nothing_never_passes(
    capsys, case, tmp_path, monkeypatch, console, message
):
    fake_fvp(tmp_path / "bin", console)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    pte, folder = case
    code, _, err = run(
        capsys, "run", "--target", "fvp", pte, "--inputs", folder / "in.npz",
        "-o", tmp_path / "o.npz",
    )  # fmt: skip
    assert code == 1 and message in err, err
    assert not (tmp_path / "o.npz").exists()


def test_fvp_without_an_install_is_a_clear_error(capsys, case, tmp_path, monkeypatch):
    import shutil

    if shutil.which(FVP):
        pytest.skip(f"{FVP} is installed on this machine")
    pte, folder = case
    code, _, err = run(
        capsys, "run", "--target", "fvp", pte, "--inputs", folder / "in.npz",
        "-o", tmp_path / "o.npz",
    )  # fmt: skip
    assert code == 1 and "FVP not installed" in err
