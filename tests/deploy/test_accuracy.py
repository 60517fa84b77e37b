"""The accuracy figures of the deploy report: SNR, cosine, max error, and the thresholds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sdk.accuracy import THRESHOLDS, Threshold, measure


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


def test_zero_reference():
    zero = np.zeros(5)
    assert measure(zero, zero).meets(Threshold(100, 1.0))
    assert not measure(np.ones(5), zero).meets(Threshold(0, 0.5))


def test_thresholds_cover_every_mode_and_reference():
    from sdk.accuracy import REFERENCES
    from sdk.export.npu import QuantMode

    assert set(THRESHOLDS) == {m.value for m in QuantMode}
    for per_ref in THRESHOLDS.values():
        assert set(per_ref) == set(REFERENCES)
