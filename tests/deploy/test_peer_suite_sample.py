"""A small fixed sample of ExecuTorch's own Ethos-U55 tests (the wheel's) through the peer-suite
runner (bench/peer_suite.py), as `--first` runs them: collected without ExecuTorch's tester,
deployed on QEMU, classified. The whole suite is a bench; these cases keep its parts honest:
a delegated op passes; a case ExecuTorch expects on the CPU passes; a case whose fp32 floor
the SDK misses but ExecuTorch's own criterion (vs the quantized model) holds passes by that
criterion and says so; ExecuTorch's criterion fails on a wrong answer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.peer_suite import collect, executorch_criterion, run_case  # noqa: E402

pytestmark = pytest.mark.slow

SAMPLE = {
    "ops.test_add": "pass",  # on the NPU
    "ops.test_bitwise": "pass",  # not delegated: the CPU's bitwise kernels
    "ops.test_remainder": "pass",  # the SDK's fp32 floor misses; ExecuTorch's criterion holds
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
        results[module] = (case, run_case(index, case, work, cache))
    return results


@pytest.mark.parametrize("module", list(SAMPLE))
def test_the_sample_case_ends_as_expected(sample, module):
    case, outcome = sample[module]
    assert outcome.outcome == SAMPLE[module], (case.name, outcome.detail)


def test_a_pass_by_executorch_s_criterion_says_so(sample):
    _, outcome = sample["ops.test_remainder"]
    assert outcome.detail.startswith("ExecuTorch's criterion holds; the SDK's floor:"), outcome


def test_executorch_s_criterion_fails_on_a_wrong_answer(sample, tmp_path):
    """The same report with the device 1.0 off the quantized model: not within atol."""
    import copy

    from sdk.cache import Cache
    from sdk.deploy.pipeline import deploy

    case, _ = sample["ops.test_add"]
    report = deploy(
        str(_model_file(case, tmp_path)), board="corstone300", outdir=tmp_path / "deploy",
        cache=Cache(tmp_path / "cache"),
    )  # fmt: skip
    assert executorch_criterion(report, case.options)
    wrong = copy.deepcopy(report)
    wrong.outputs[0].references["quantized"]["max_abs"] = 1.0
    assert not executorch_criterion(wrong, case.options)


def _model_file(case, folder: Path) -> Path:
    from bench.peer_suite import CASE_FILE

    path = folder / "model.py"
    path.write_text(CASE_FILE.format(name=case.name, repo=str(REPO), module=case.test_module,
                                     function=case.function, ids=case.ids))  # fmt: skip
    return path


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
