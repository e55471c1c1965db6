"""The tick's compiled force steps against the NumPy formulas they replace, value for value."""

import numpy as np
import pytest

from continuum_ctrl.numerics.clipping import clip, effort_limiter
from continuum_ctrl.control.compensation import _leader

N = 9


def vectors(rng, count):
    """Random force vectors with zeros, bound-equal values and huge values mixed in."""
    values = rng.normal(0.0, 20.0, (count, N))
    values[::7, 0] = 0.0
    values[::5, 1] = 1e300
    values[::3, 2] = -1e300
    return values


@pytest.fixture
def bounds():
    low = np.array([0.0, 0.0, 0.0, -5.0, -5.0, -5.0, -np.inf, -1.0, 2.0])
    high = np.array([30.0, 30.0, 30.0, 5.0, 5.0, 5.0, np.inf, 1.0, 2.0])
    return low, high


def test_the_effort_limiter_is_the_clamp_then_the_rate_limit(bounds):
    low, high = bounds
    limit = effort_limiter()
    rng = np.random.default_rng(3)
    step = np.array([0.5, np.inf, 2.0, 0.0, 1.0, 1.0, 3.0, np.inf, 1.0])
    effort, expected = np.zeros(N), np.zeros(N)
    for tau in vectors(rng, 200):
        expected = clip(clip(tau, low, high), expected - step, expected + step)
        assert limit(tau, low, high, step, effort)
        np.testing.assert_array_equal(effort, expected)


@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf])
def test_the_effort_limiter_refuses_non_finite_forces_and_keeps_the_effort(bounds, bad):
    low, high = bounds
    limit = effort_limiter()
    effort = np.linspace(0.0, 1.0, N)
    tau = np.ones(N)
    tau[4] = bad
    assert not limit(tau, low, high, np.full(N, np.inf), effort)
    np.testing.assert_array_equal(effort, np.linspace(0.0, 1.0, N))
    assert not limit(np.ones(N - 1), low, high, np.full(N, np.inf), effort)   # wrong length
    assert limit([1, 2, 3, 4, 5, 6, 7, 8, 9], low, high, np.full(N, np.inf), effort)
    np.testing.assert_array_equal(effort, [1, 2, 3, 4, 5, 5, 7, 1, 2])


def lead_in_numpy(tau, early, late, share, gain, low, high):
    """The valve lead as the compensation's module documentation states it."""
    early, late = clip(early, low, high), clip(late, low, high)
    rise = late - early
    middle = early + share * rise
    return clip(tau, low, high) + clip(gain * rise, middle - high, middle - low)


def test_the_lead_kernel_is_the_lead_formula(bounds):
    low, high = bounds
    lead = _leader()
    rng = np.random.default_rng(4)
    out = np.zeros(N)
    for tau, early, late in zip(vectors(rng, 300), vectors(rng, 300), vectors(rng, 300)):
        share, gain = rng.uniform(), rng.uniform(0.0, 40.0)
        with np.errstate(invalid='ignore'):        # inf - inf on the unbounded joint
            expected = lead_in_numpy(tau, early, late, share, gain, low, high)
        lead(tau, early, late, share, gain, low, high, out)
        np.testing.assert_array_equal(out, expected)


def test_the_lead_kernel_keeps_a_nan_of_the_law_or_of_the_feedforward(bounds):
    low, high = bounds
    lead = _leader()
    out = np.zeros(N)
    for which in range(3):
        parts = [np.ones(N), np.ones(N), np.full(N, 2.0)]
        parts[which][5] = np.nan
        lead(*parts, 0.5, 30.0, low, high, out)
        assert np.isnan(out[5]) and np.isfinite(np.delete(out, 5)).all()
