"""A small fixed sample of ExecuTorch's own Ethos-U55 tests (the wheel's) through the peer-suite
runner (bench/peer_suite.py), as `--first` runs them: collected without ExecuTorch's tester,
deployed on QEMU, judged by the deploy's own verdict (ExecuTorch's criterion, the case's
tolerances). The whole suite is a bench; these cases keep its parts honest: a delegated op
passes; a case ExecuTorch expects on the CPU passes; a case whose fp32 floor the SDK misses
passes with the floor as a warning. A wrong answer failing the verdict:
tests/deploy/test_deploy.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.peer_suite import collect, run_case, tolerance_of

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

SAMPLE = {
    "ops.test_add": "pass",  # on the NPU
    "ops.test_bitwise": "pass",  # not delegated: the CPU's bitwise kernels
    "ops.test_remainder": "pass",  # the SDK's fp32 floor misses: a warning, not the verdict
    "ops.test_cond": "pass",  # torch.cond: a jump on the device and in the host reference
}


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    from sdk.cache import Cache

    cache = Cache(tmp_path_factory.mktemp("peer_cache"))
    work = tmp_path_factory.mktemp("peer")
    results = {}
    for module in SAMPLE:
        cases = [c for c in collect(first=True, match=module) if c.test_module == module]
        index, case = next((i, c) for i, c in enumerate(cases)
                           if not (c.collect_error or c.et_xfail))  # fmt: skip
        results[module] = (case, run_case(index, case, work / module, cache))
    return results


@pytest.mark.parametrize("module", list(SAMPLE))
def test_the_sample_case_ends_as_expected(sample, module):
    case, outcome = sample[module]
    assert outcome.outcome == SAMPLE[module], (case.name, outcome.detail)


def test_a_missed_fp32_floor_is_a_warning_of_a_passing_deploy(sample):
    """The remainder case: within ExecuTorch's tolerance of the quantized model, below the
    SNR floor against fp32 (the wrap of x mod y at quantized x): passed, with the warning."""
    import json

    _, outcome = sample["ops.test_remainder"]
    report = json.loads(Path(outcome.report).read_text())
    assert report["passed"] and report["outputs"][0]["criterion"]["ok"]
    assert any(w.startswith("output 0 vs the fp32 model") for w in report["warnings"]), report


def test_a_case_s_own_tolerances_are_the_verdict_s():
    from sdk.evaluation.accuracy import Tolerance

    assert tolerance_of({}) == Tolerance()
    assert tolerance_of({"atol": 0.5, "qtol": 2}) == Tolerance(atol=0.5, qtol=2.0)


def test_an_operator_has_one_name_in_tests_and_kernels():
    """ExecuTorch's tests name edge ops by graph name, the SDK's placement by kernel: the note
    'ExecuTorch expects on the CPU, delegated here' compares the two."""
    from bench.peer_suite import _op_base

    edge = "executorch_exir_dialects_edge__ops_"
    for kernel, test in [
        ("aten::upsample_nearest2d.vec_out", f"{edge}aten_upsample_nearest2d_vec"),
        ("aten::gather.out", f"{edge}aten_gather_default"),
        ("aten::where.self_out", f"{edge}aten_where_self"),
        ("dim_order_ops::_clone_dim_order.out", f"{edge}dim_order_ops__clone_dim_order_default"),
    ]:
        assert _op_base(kernel) == _op_base(test), kernel
    assert _op_base("aten::gather.out") != _op_base(f"{edge}aten_index_select_default")
