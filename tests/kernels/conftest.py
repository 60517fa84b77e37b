"""Fixtures of the kernel tests: one-op programs run through the real runtime, on the host
(build/host/host_runner, ASan + UBSan) and on QEMU (the firmware with every kernel, Helium on),
held to ExecuTorch's runtime."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import koracle as oracle
import numpy as np
import pytest
import torch
from kprogram import EditedProgram

from sdk.firmware.boards import load_board
from sdk.program.pte import load_program, operator_name
from sdk.targets.qemu import QemuTarget
from sdk.targets.run import RunReport, run_built

BOARD = "corstone300"
QEMU_TIMEOUT_S = 120.0


def pytest_collection_modifyitems(items) -> None:
    """The kernel sweeps' cases beyond each test function's first are `slow`: the edit-test
    loop (`-m "not slow"`) runs every kernel test once, the default command every case."""
    here = Path(__file__).parent
    seen: set[tuple[Path, str]] = set()
    for item in items:
        if not item.path.is_relative_to(here) or not hasattr(item, "originalname"):
            continue
        function = (item.path, item.originalname)
        if function in seen:
            item.add_marker(pytest.mark.slow)
        seen.add(function)


@pytest.fixture(scope="session")
def check(host_run) -> Callable[..., list[np.ndarray]]:
    """check(fn, *inputs, ops=..., rtol=..., scales=..., expected=None) -> outputs: exports
    fn, runs it in ExecuTorch and on the host runner, asserts equal outputs (see
    oracle.assert_matches; `scales` per output), and that the program calls exactly the
    operators `ops`, plus at most oracle.GLUE_OPS. `expected` (tensors) replaces ExecuTorch
    where its runtime has no kernel for the case (a dtype only its portable kernel takes).
    BFloat16 inputs go in and out as float32 (oracle.bf16_io)."""

    def run(fn, *inputs: torch.Tensor, ops, rtol: float = 1e-6, scales=None, expected=None):
        if any(t.dtype == torch.bfloat16 for t in inputs):
            fn, inputs = oracle.bf16_io(fn, inputs)
            if expected is not None:
                expected = [e.float() if e.dtype == torch.bfloat16 else e for e in expected]
        pte = oracle.export(fn, tuple(inputs))
        oracle.check_operators(pte, ops)
        if expected is None:
            expected = oracle.run(pte, tuple(inputs))
        expected = [oracle.to_numpy(t) for t in expected]
        actual = host_run(pte, [oracle.to_numpy(t) for t in inputs]).outputs()
        assert len(actual) == len(expected)
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            oracle.assert_matches(a, e, rtol, None if scales is None else scales[i])
        return actual

    return run


@pytest.fixture(scope="session")
def check_edit(host_run) -> Callable[..., list[np.ndarray]]:
    """check_edit(edit, rtol=..., expected=None, scales=None) -> outputs: runs an edited
    program (calls export never makes, e.g. dtypes or bounds ExecuTorch handles but export does
    not emit) on the host runner and compares it with ExecuTorch running the same program, or
    with `expected` (arrays) when given (`scales` per output, as in check)."""

    def run(edit: EditedProgram, rtol: float = 1e-6, expected=None, scales=None):
        pte = edit.to_bytes()
        if expected is None:
            expected = oracle.run_arrays(pte, edit.inputs)
        actual = host_run(pte, edit.inputs).outputs()
        assert len(actual) == len(expected)
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            oracle.assert_matches(a, np.asarray(e), rtol, None if scales is None else scales[i])
        return actual

    return run


@pytest.fixture(scope="session")
def refused(host_run) -> Callable[[EditedProgram], tuple[str, str]]:
    """refused(edit) -> (error name, the kernel's reason) for an edited program whose one call
    the kernel must refuse. Asserts the runtime's prefix (`instruction 0 (<op>): `) and that
    the kernel wrote nothing before refusing: its outputs, zeroed at load, are still zero (so
    give it inputs that would make them non-zero)."""

    def run(edit: EditedProgram) -> tuple[str, str]:
        result = host_run(edit.to_bytes(), edit.inputs, "--outputs-on-error")
        name, reason = result.error()
        (instruction,) = edit.plan.chains[0].instructions
        op = operator_name(edit.plan.operators[instruction.instr_args.op_index])
        prefix = f"instruction 0 ({op}): "
        assert reason.startswith(prefix), reason
        assert len(result.record.outputs) == len(edit.plan.outputs), result.stdout
        for out in result.record.outputs:
            assert not out.array().any(), f"output {out.index} was written before the refusal"
        return name, reason[len(prefix) :]

    return run


@pytest.fixture(scope="session")
def qemu_run(tmp_path_factory) -> Callable[..., RunReport]:
    """qemu_run(elf, pte, inputs) -> RunReport: boots a built firmware on QEMU (mps3-an547,
    -icount) with the program and inputs preloaded; a failure is a TargetError."""
    board = load_board(BOARD)
    target = QemuTarget(board)
    workdir = tmp_path_factory.mktemp("qemu")
    counter = itertools.count()

    def run(elf: Path, pte: bytes, inputs: list[np.ndarray]) -> RunReport:
        folder = workdir / f"run{next(counter)}"
        return run_built(target, board, elf, load_program(pte), inputs, QEMU_TIMEOUT_S, folder)

    return run
