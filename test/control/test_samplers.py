"""The compiled reference samplers against the NumPy `sample` of each reference class."""

import numpy as np
import pytest

from continuum_ctrl.control.loop import Anchored, BUMP_PEAK
from continuum_ctrl.control.references import (blend_ramp, Hold, MinimumJerk, Multisine,
                                               Sinusoid, Waypoints)
from continuum_ctrl.control.samplers import (anchored_entry, blend_data, blend_sample,
                                             reference_data, sample_into)

RTOL = 1e-12
#: times before, during and after every reference's moves and joins, s
TIMES = np.concatenate((np.linspace(-0.5, 4.5, 401), [0.0, 0.3, 1.0, 1.7, 2.5, 3.0, 4.0]))
N = 4


def _rng():
    return np.random.default_rng(7)


def references():
    """Return {name: reference} of every type with a compiled sampler, several shapes."""
    rng = _rng()
    times = np.array([0.0, 0.4, 1.1, 2.0, 3.0])
    points = rng.uniform(-1.0, 1.0, (5, N))
    velocities = rng.uniform(-1.0, 1.0, (5, N))
    return {'hold': Hold(rng.uniform(-1.0, 1.0, N)),
            'sinusoid': Sinusoid(rng.uniform(-0.5, 0.5, N), rng.uniform(0.1, 1.0, N),
                                 rng.uniform(0.0, 2.0, N), rng.uniform(0.0, 6.0, N)),
            'multisine': Multisine(rng.uniform(-0.5, 0.5, N), rng.uniform(0.1, 1.0, N),
                                   (0.2, 3.0), 4),
            'min_jerk': MinimumJerk(rng.uniform(-1.0, 1.0, N), rng.uniform(-1.0, 1.0, N),
                                    0.3, 1.4),
            'spline': Waypoints(times, points),
            'hermite': Waypoints(times, points, velocities),
            'quintic': Waypoints(times, points, velocities,
                                 rng.uniform(-1.0, 1.0, (5, N))),
            'one_waypoint': Waypoints([0.5], points[:1])}


def close(actual, expected):
    """Assert agreement to RTOL relative to the sample's magnitude (per row)."""
    for a, e in zip(actual, expected):
        scale = max(float(np.max(np.abs(e))), 1e-300)
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=RTOL * scale)


@pytest.mark.parametrize('name', list(references()))
def test_compiled_sampler_agrees_with_numpy(name):
    """Each type's sampler, and the one of any type (`ReferenceData`) to the last bit."""
    reference = references()[name]
    data, out, any_out = reference.layout(), np.zeros((3, reference.n)), np.zeros((3, N))
    for t in TIMES:
        sample_into(data, t, out)
        close(out, reference.sample(t))
        sample_into(reference_data(data), t, any_out)
        np.testing.assert_array_equal(any_out, out)


class NumpyAnchored:
    """The anchored reference in NumPy: the arithmetic `Anchored` documents."""

    def __init__(self, reference, t0, q_start, qd_start, blend_time, low, high):
        self.reference, self.t0, self.blend_time = reference, t0, blend_time
        self.q_start, self.low, self.high = np.array(q_start, dtype=float), low, high
        reach = self.q_start + BUMP_PEAK * blend_time * np.asarray(qd_start)
        self.qd_start = np.where((reach >= low) & (reach <= high), qd_start, 0.0)

    def sample(self, t):
        elapsed = max(t - self.t0, 0.0)
        q, qd, qdd = self.reference.sample(elapsed)
        r = np.clip(q, self.low, self.high)
        inside = r == q
        rd, rdd = qd * inside, qdd * inside
        if elapsed >= self.blend_time:
            return r, rd, rdd
        s, ds, dds = blend_ramp(elapsed, self.blend_time)
        delta = r - self.q_start
        b, db, ddb = elapsed * (1.0 - s), 1.0 - s - elapsed * ds, -2.0 * ds - elapsed * dds
        return (delta * s + self.q_start + b * self.qd_start,
                rd * s + ds * delta + db * self.qd_start,
                rdd * s + 2.0 * ds * rd + dds * delta + ddb * self.qd_start)


@pytest.mark.parametrize('name', list(references()))
@pytest.mark.parametrize('limits', [0.4, 5.0], ids=['clipped', 'free'])
def test_anchored_agrees_with_numpy(name, limits):
    """Through the blend (from a moving start, one joint too fast for its limits) and clip."""
    reference = references()[name]
    low, high = np.full(N, -limits), np.full(N, limits)
    q_start = np.array([0.1, -0.3, 0.35, 0.0])
    qd_start = np.array([0.5, -1.0, 2.0, 0.0])       # joint 2 would leave [-0.4, 0.4]
    anchored = Anchored(reference, 1.0, q_start, qd_start, 0.8, low, high)
    oracle = NumpyAnchored(reference, 1.0, q_start, qd_start, 0.8, low, high)
    clipped = 0
    for t in TIMES + 1.0:
        expected = oracle.sample(t)
        close(anchored.sample(t), expected)
        clipped += np.any(np.abs(expected[0]) >= limits)
    assert clipped > 0 or limits > 1.0 or name == 'hold'     # the clip was exercised


def test_blend_alone_agrees_with_anchored():
    """The clip and blend on a sample made elsewhere (a task-space reference's path)."""
    reference = references()['sinusoid']
    low, high = np.full(N, -0.4), np.full(N, 0.4)
    blend = blend_data(0.5, 0.8, False, low, high, np.full(N, 0.2), np.full(N, 0.3))
    whole, data = anchored_entry(type(reference.layout())), reference.layout()
    raw, out, expected = np.zeros((3, N)), np.zeros((3, N)), np.zeros((3, N))
    for t in TIMES:
        elapsed = max(t - 0.5, 0.0)
        raw[:] = reference.sample(elapsed)
        blend_sample(blend, elapsed, raw, out)
        whole(data, blend, t, np.zeros((3, N)), expected)
        np.testing.assert_array_equal(out, expected)


class Uncompiled:
    """A reference without a compiled sampler (as a task-space reference is to this loop)."""

    def __init__(self, reference):
        self.reference, self.n = reference, reference.n

    def sample(self, t):
        return self.reference.sample(t)

    def within(self, low, high):
        return self.reference.within(low, high)


@pytest.mark.parametrize('limits', [0.4, 5.0], ids=['clipped', 'free'])
def test_anchored_without_a_compiled_sampler_agrees_with_numpy(limits):
    reference = Uncompiled(references()['multisine'])
    low, high = np.full(N, -limits), np.full(N, limits)
    q_start, qd_start = np.array([0.1, -0.3, 0.35, 0.0]), np.array([0.5, -1.0, 2.0, 0.0])
    anchored = Anchored(reference, 1.0, q_start, qd_start, 0.8, low, high)
    oracle = NumpyAnchored(reference, 1.0, q_start, qd_start, 0.8, low, high)
    for t in TIMES + 1.0:
        close(anchored.sample(t), oracle.sample(t))
