"""The accuracy figures of the deploy report (SNR, cosine, max error, the floors) and its
verdict (ExecuTorch's criterion, `closeness` under a Tolerance)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sdk.evaluation.accuracy import (
    THRESHOLDS,
    ZERO_REFERENCE_STEPS,
    Threshold,
    Tolerance,
    closeness,
    measure,
    zero_reference_bound,
)


def test_identical_is_infinite_snr():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    acc = measure(x, x)
    assert acc.snr_db is None and acc.max_abs == 0 and acc.cosine == pytest.approx(1.0)
    assert acc.meets(Threshold(1000.0, 1.0))


def test_known_snr_and_error():
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(10000)
    noise = rng.standard_normal(10000)
    noise *= np.linalg.norm(ref) / np.linalg.norm(noise) / 10  # signal/noise power = 100
    acc = measure(ref + noise, ref)
    assert acc.snr_db == pytest.approx(20.0, abs=1e-9)
    assert acc.max_abs == pytest.approx(np.max(np.abs(noise)))
    assert acc.meets(Threshold(19.9, 0.99)) and not acc.meets(Threshold(20.1, 0.99))


def test_sign_flip_fails_on_cosine():
    ref = np.linspace(1, 2, 50)
    acc = measure(-ref, ref)
    assert acc.cosine == pytest.approx(-1.0)
    assert not acc.meets(Threshold(-100.0, 0.9))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_outputs_never_pass(bad):
    ref = np.ones(4)
    out = ref.copy()
    out[1] = bad
    acc = measure(out, ref)
    assert not acc.meets(Threshold(-math.inf, -1.0 + 1e-9))


def test_non_finite_reference_values_are_left_out_and_said():
    """logit(0) is -inf in fp32: no quantized output can equal it; the rest is judged."""
    ref = np.array([-np.inf, 0.5, 1.0, -0.25])
    close = np.array([-9.7, 0.5, 1.0, -0.25])  # the quantized model's most negative value
    acc = measure(close, ref)
    assert acc.excluded == 1 and acc.judged == 3 and acc.snr_db is None
    assert acc.meets(Threshold(100.0, 1.0)) and "1 non-finite reference" in acc.describe()
    far = np.array([-9.7, -0.5, 1.0, -0.25])  # the finite positions still count
    assert not measure(far, ref).meets(Threshold(15.0, 0.98))
    out = close.copy()
    out[1] = np.nan  # not finite where the reference is: never passes
    assert not measure(out, ref).meets(Threshold(-math.inf, -1.0 + 1e-9))


def test_a_reference_with_no_finite_value_judges_nothing():
    acc = measure(np.full(4, -9.7), np.full(4, -np.inf))
    assert acc.judged == 0 and acc.meets(Threshold(100.0, 1.0))
    assert acc.describe() == "not judged: no reference value is finite (4)"
    assert acc.to_json()["excluded_non_finite_reference"] == 4


def test_zero_reference():
    zero = np.zeros(5)
    assert measure(zero, zero).meets(Threshold(100, 1.0))
    assert not measure(np.ones(5), zero).meets(Threshold(0, 0.5))


STEP = 2.0**-16  # the scale ExecuTorch's quantizer gives an output it only saw at zero
ACOS = np.full(8, 255 * STEP)  # acos(ones) as the quantized model computes it (255 steps)


def test_an_all_zero_reference_is_held_to_an_absolute_bound():
    zero = np.zeros(8)
    bound = zero_reference_bound(zero, ACOS, STEP)
    assert bound == pytest.approx((255 + ZERO_REFERENCE_STEPS) * STEP)
    floor = THRESHOLDS["int8"]["fp32"]
    assert not measure(ACOS, zero).meets(floor)  # SNR -inf, cosine 0: the false failure
    acc = measure(ACOS, zero, bound)
    assert acc.snr_db == -math.inf and acc.meets(floor)
    assert acc.to_json()["zero_reference_bound"] == bound
    assert "all-zero reference" in acc.describe()
    # A wrong output fails: a step past the bound, or something else entirely.
    assert not measure(ACOS + (ZERO_REFERENCE_STEPS + 1) * STEP, zero, bound).meets(floor)
    assert not measure(np.full(8, 0.5), zero, bound).meets(floor)


def test_the_bound_is_only_for_all_zero_references():
    assert zero_reference_bound(np.array([0.0, 1e-9]), None, STEP) is None
    assert zero_reference_bound(np.zeros(3), np.array([0.0, np.nan, 0.0]), STEP) is None
    assert zero_reference_bound(np.zeros(3), None, None) == 0.0  # float output: exact zeros
    ref = np.linspace(1, 2, 8)  # a real signal: the bound given is ignored, SNR judges
    acc = measure(ref + 0.5, ref, zero_bound=10.0)
    assert acc.zero_reference_bound is None and not acc.meets(THRESHOLDS["int8"]["fp32"])


def test_thresholds_cover_every_mode_and_reference():
    from sdk.ethosu.config import QuantMode
    from sdk.evaluation.accuracy import REFERENCES

    assert set(THRESHOLDS) == {m.value for m in QuantMode}
    for per_ref in THRESHOLDS.values():
        assert set(per_ref) == set(REFERENCES)


# --- the verdict: ExecuTorch's criterion (Tolerance) ---


def test_closeness_is_allclose_with_qtol_steps_added_to_atol():
    tol = Tolerance(atol=1e-3, rtol=1e-3, qtol=1)
    ref = np.array([0.0, 1.0, -2.0, 0.5])
    scale = 0.01
    bound = tol.atol + tol.qtol * scale + tol.rtol * np.abs(ref)
    inside = ref + bound * np.array([1, -1, 1, -1]) * 0.999
    assert closeness(inside, ref, tol, scale).ok
    outside = inside.copy()
    outside[2] = ref[2] - bound[2] * 1.001  # one value one hair past its bound
    got = closeness(outside, ref, tol, scale)
    assert not got.ok and got.outside == 1 and got.total == 4
    assert got.max_abs == pytest.approx(bound[2] * 1.001)
    assert got.allowed == pytest.approx(tol.atol + scale)
    # Without a scale only atol + rtol hold it: one step off fails.
    assert not closeness(ref + scale, ref, tol, None).ok


def test_closeness_treats_non_finite_values_as_allclose_with_equal_nan():
    tol = Tolerance()
    ref = np.array([np.nan, np.inf, 1.0])
    assert closeness(ref.copy(), ref, tol, 0.1).ok  # NaN == NaN, inf == inf
    for bad in (np.array([0.0, np.inf, 1.0]), np.array([np.nan, -np.inf, 1.0])):
        got = closeness(bad, ref, tol, 0.1)
        assert not got.ok and got.max_abs == math.inf


def test_the_tolerance_defaults_are_executorchs_u55_int_pipeline():
    """EthosU55PipelineINT's own defaults (executorch/backends/arm/test/tester/test_pipeline)."""
    import inspect

    from executorch.backends.arm.test.tester.test_pipeline import EthosU55PipelineINT

    params = inspect.signature(EthosU55PipelineINT.__init__).parameters
    tol = Tolerance()
    assert (tol.atol, tol.rtol, tol.qtol) == tuple(
        params[k].default for k in ("atol", "rtol", "qtol")
    )


def test_the_criterion_takes_the_first_outputs_scale_where_an_output_has_none():
    from sdk.deploy.verdict import criterion_scales

    assert criterion_scales([None, 0.5, 0.25]) == [0.5, 0.5, 0.25]
    assert criterion_scales([None, None]) == [None, None]
