"""Issue 31: a seeded sample of the wheel's own `*_u85_INT*` cases, exported for ethos-u85-128
(what ExecuTorch's tests compile for), their command streams run in the functional U85 model
bit-identical to the TOSA reference (bench/u85_peer_sample.py; there is no U85 FVP here).

The 40 cases of seed 0 are a sweep (one test each, sampled per CI run as the kernel sweeps are;
`--sweep-fraction 1` runs all): each must end as measured, a pass unless NOT_PASSING names it,
so a case that starts failing, or one that starts passing, shows. The whole sample's figures
(38 pass of 40, what it reaches): `bench/u85_peer_sample.py --sample 40 --seed 0`, README.
"""

from __future__ import annotations

import pytest

from bench.u85_peer_sample import run_case, runnable_cases, sample

pytestmark = [pytest.mark.slow, pytest.mark.sweep]

SEED = 0
SIZE = 40
# Measured with SEED 0 (Vela 5.1.0, ExecuTorch 1.5.1): 38 pass; these 2 delegate nothing.
NOT_PASSING = {
    "ops.test_any::test_any_u85_INT[any_rank2_dims_squeeze]": ("cpu", ""),
    "ops.test_unsqueeze::test_unsqueeze_u85_INT[rand_(1, 5, 4, 3)]": ("cpu", ""),
}


@pytest.fixture(scope="module")
def cases() -> list:
    """The sample, drawn once per worker (collecting the wheel's cases takes seconds)."""
    drawn = sample(runnable_cases(), SIZE, SEED)
    assert len(drawn) == SIZE
    return drawn


@pytest.mark.parametrize("index", range(SIZE))
def test_a_sampled_u85_case_ends_as_measured(cases, index, tmp_path):
    outcome = run_case(cases[index], tmp_path)
    assert outcome.outcome not in ("mismatch", "traceback"), (outcome.case, outcome.detail)
    expected, detail = NOT_PASSING.get(outcome.case, ("pass", ""))
    assert outcome.outcome == expected and detail in outcome.detail, (
        outcome.case,
        outcome.outcome,
        outcome.detail,
    )
