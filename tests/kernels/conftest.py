"""Fixtures of the kernel tests: one-op programs run through the real runtime, on the host
(build/host/host_link, ASan + UBSan) and on QEMU (the firmware with every kernel, Helium on),
held to ExecuTorch's runtime."""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from sdk.errors import TargetError
from sdk.firmware.boards import load_board
from sdk.link.record import FirmwareRecord, check_record
from sdk.link.session import LinkSession
from sdk.program.pte import load_program, operator_name
from sdk.targets.base import RunOptions
from sdk.targets.run import make_target
from tests.support import koracle as oracle
from tests.support.kprogram import EditedProgram

BOARD = "corstone300"
QEMU_TIMEOUT_S = 120.0


def pytest_collection_modifyitems(items) -> None:
    """The kernel tests are sweeps (tests/conftest.py samples them) and their cases beyond
    each test function's first are `slow`: the edit-test loop (`-m "not slow"`) runs every
    kernel test once."""
    here = Path(__file__).parent
    seen: set[tuple[Path, str]] = set()
    for item in items:
        if not item.path.is_relative_to(here) or not hasattr(item, "originalname"):
            continue
        function = (item.path, item.originalname)
        item.add_marker(pytest.mark.sweep)
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
    `core_aten` False keeps operators outside the Core ATen opset (koracle.export).
    BFloat16 inputs go in and out as float32 (oracle.bf16_io)."""

    def run(
        fn, *inputs: torch.Tensor, ops, rtol: float = 1e-6, scales=None, expected=None,
        core_aten: bool = True,
    ):  # fmt: skip
        if any(t.dtype == torch.bfloat16 for t in inputs):
            fn, inputs = oracle.bf16_io(fn, inputs)
            if expected is not None:
                expected = [e.float() if e.dtype == torch.bfloat16 else e for e in expected]
        pte = oracle.export(fn, tuple(inputs), core_aten)
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
        result = host_run(edit.to_bytes(), edit.inputs)
        name, reason = result.error()
        (instruction,) = edit.plan.chains[0].instructions
        op = operator_name(edit.plan.operators[instruction.instr_args.op_index])
        prefix = f"instruction 0 ({op}): "
        assert reason.startswith(prefix), reason
        assert len(result.record.outputs) == len(edit.plan.outputs), result.record
        for out in result.record.outputs:
            assert not out.array().any(), f"output {out.index} was written before the refusal"
        return name, reason[len(prefix) :]

    return run


@dataclass
class QemuRun:
    outputs: list[np.ndarray]
    record: FirmwareRecord


@pytest.fixture(scope="session")
def qemu_run(tmp_path_factory) -> Iterator[Callable[..., QemuRun]]:
    """qemu_run(elf, pte, inputs) -> QemuRun: runs the program over the link on QEMU
    (mps3-an547, -icount) booted once per firmware and kept for every program after it (a link
    failure reboots it next time); a refusal or a wrong record is a TargetError. The program is
    sent as it is: the firmware alone judges its operators and dtypes."""
    strategy = make_target("qemu", load_board(BOARD)).strategy
    workdir = tmp_path_factory.mktemp("qemu")
    booted: dict[Path, tuple[LinkSession, contextlib.ExitStack]] = {}
    lock = threading.Lock()
    boots = itertools.count()

    with contextlib.ExitStack() as stack:

        def session_for(elf: Path) -> LinkSession:
            if elf not in booted:
                folder = workdir / f"boot{next(boots)}-{elf.stem}"
                boot = stack.enter_context(contextlib.ExitStack())
                options = RunOptions(firmware=elf, workdir=folder, timeout_s=QEMU_TIMEOUT_S)
                session = boot.enter_context(strategy.up(options)).session
                booted[elf] = (session, boot)
            return booted[elf][0]

        def run(elf: Path, pte: bytes, inputs: list[np.ndarray]) -> QemuRun:
            program = load_program(pte)
            with lock:
                session = session_for(Path(elf))
                try:
                    record = session.run_program(
                        program.data, inputs, [int(t.scalar_type) for t in program.inputs()]
                    )
                except TargetError:
                    booted.pop(Path(elf))[1].close()
                    raise
                outputs = check_record(record, session.log.path, expected=program.outputs())
            return QemuRun(outputs, record)

        yield run
