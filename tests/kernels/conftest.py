"""Fixtures of the kernel tests: the harnesses (built once per session) and a `check`
helper running a function both through ExecuTorch and through our kernels."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence

import kbuild
import kcase
import koracle as oracle
import numpy as np
import pytest
import torch
from kharness import GLUE_OPS, Harness, assert_matches, to_numpy


@pytest.fixture(scope="session")
def host(tmp_path_factory) -> Harness:
    if shutil.which(kbuild.HOST_CXX) is None:
        pytest.fail("g++ is missing (the set-up installs it)")
    return Harness(tmp_path_factory.mktemp("host"), exe=kbuild.build_host_harness())


@pytest.fixture(scope="session")
def check(host: Harness) -> Callable[..., list[np.ndarray]]:
    """check(fn, *inputs, ops=..., rtol=..., scales=...) -> outputs: exports fn, runs it in
    ExecuTorch and through our kernels (host harness), asserts equal outputs (see
    assert_matches; `scales` per output), and that the program calls exactly the
    operators `ops`, plus at most GLUE_OPS (so a test cannot silently test something else)."""

    def run(fn, *inputs: torch.Tensor, ops: Sequence[str], rtol: float = 1e-6, scales=None):
        pte = oracle.export(fn, tuple(inputs))
        expected = [to_numpy(t) for t in oracle.run(pte, tuple(inputs))]
        case = kcase.case_from_program(pte, [to_numpy(t) for t in inputs])
        missing = set(ops) - set(case.operators)
        extra = set(case.operators) - set(ops) - GLUE_OPS
        assert not missing and not extra, f"program calls {case.operators}, expected {ops}"
        result = host.run_one(case.builder).ok()
        actual = [result.tensor(v) for v in case.outputs]
        assert len(actual) == len(expected)
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_matches(a, e, rtol, None if scales is None else scales[i])
        return actual

    return run
