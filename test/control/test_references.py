"""Reference trajectories: consistent derivatives, boundary conditions, interpolation, errors."""

import numpy as np
import pytest

from continuum_ctrl.params import ConfigError
from continuum_ctrl.control.references import (Hold, minimum_jerk_ramp, MinimumJerk, Multisine,
                                               Sinusoid, Waypoints)

H = 1e-5  # central-difference step (s): truncation ~H^2 q''' and rounding ~1e-16/H


def assert_derivatives(reference, times, rtol=1e-6):
    """Check qd and qdd against central differences of q and qd at each time."""
    for t in times:
        q, qd, qdd = reference.sample(t)
        (qm, qdm, _), (qp, qdp, _) = reference.sample(t - H), reference.sample(t + H)
        scale_v = 1.0 + np.max(np.abs(qd))
        scale_a = 1.0 + np.max(np.abs(qdd))
        np.testing.assert_allclose(qd, (qp - qm) / (2 * H), rtol=0, atol=rtol * scale_v)
        np.testing.assert_allclose(qdd, (qdp - qdm) / (2 * H), rtol=0, atol=rtol * scale_a)


def test_hold_is_constant_and_read_only():
    ref = Hold([0.1, -0.2, 0.3])
    for t in (-1.0, 0.0, 12.5):
        q, qd, qdd = ref.sample(t)
        np.testing.assert_array_equal(q, [0.1, -0.2, 0.3])
        np.testing.assert_array_equal(qd, 0.0)
        np.testing.assert_array_equal(qdd, 0.0)
    with pytest.raises(ValueError):
        q[0] = 1.0


def test_sinusoid_values_and_derivatives():
    ref = Sinusoid([0.5, 0.3], [0.4, 0.2], [0.5, 2.0], [0.0, 1.0])
    q, qd, qdd = ref.sample(0.25)
    np.testing.assert_allclose(q, [0.5 + 0.4 * np.sin(np.pi * 0.25),
                                   0.3 + 0.2 * np.sin(4 * np.pi * 0.25 + 1.0)], rtol=1e-15)
    np.testing.assert_allclose(qdd, -(2 * np.pi * np.array([0.5, 2.0])) ** 2 * (q - [0.5, 0.3]),
                               rtol=1e-12)
    assert_derivatives(ref, np.linspace(0.0, 3.0, 13))


def test_sinusoid_broadcasts_scalars_and_rejects_bad_values():
    ref = Sinusoid(0.1, 0.2, 1.0, n=3)
    assert ref.n == 3 and ref.sample(0.0)[0].shape == (3,)
    with pytest.raises(ConfigError, match='reference.frequency_hz'):
        Sinusoid([0, 0], 0.1, -1.0)
    with pytest.raises(ConfigError, match='different lengths'):
        Sinusoid([0, 0], [0.1, 0.1, 0.1], 1.0)
    with pytest.raises(ConfigError, match='reference.amplitude'):
        Sinusoid([0, 0], [0.1, float('nan')], 1.0)
    with pytest.raises(ConfigError, match='reference.center'):
        Sinusoid('zero', 0.1, 1.0)


def test_minimum_jerk_boundary_conditions_and_shape():
    q0, q1 = np.array([0.1, -0.4]), np.array([0.9, 0.2])
    ref = MinimumJerk(q0, q1, t0=1.0, duration=2.0)
    for t, want in ((0.0, q0), (1.0, q0), (3.0, q1), (9.0, q1)):
        q, qd, qdd = ref.sample(t)
        np.testing.assert_allclose(q, want, atol=1e-15)
        np.testing.assert_allclose(qd, 0.0, atol=1e-15)
        np.testing.assert_allclose(qdd, 0.0, atol=1e-15)
    q, qd, qdd = ref.sample(2.0)  # midpoint: halfway, peak speed 15/8 * delta / T, no accel
    np.testing.assert_allclose(q, 0.5 * (q0 + q1), atol=1e-15)
    np.testing.assert_allclose(qd, 1.875 * (q1 - q0) / 2.0, atol=1e-15)
    np.testing.assert_allclose(qdd, 0.0, atol=1e-14)
    assert_derivatives(ref, np.linspace(1.05, 2.95, 11))


def test_minimum_jerk_rejects_bad_arguments():
    with pytest.raises(ConfigError, match='reference.duration'):
        MinimumJerk([0.0], [1.0], 0.0, 0.0)
    with pytest.raises(ConfigError, match='reference.goal'):
        MinimumJerk([0.0, 0.0], [1.0], 0.0, 1.0)


def test_waypoints_positions_only_is_clamped_c2_spline():
    # 3 t^2 - 2 t^3 has zero slope at t = 0 and 1: the clamped spline reproduces it exactly
    times = np.array([0.0, 0.3, 0.55, 1.0])
    cubic = np.stack([3 * times ** 2 - 2 * times ** 3, -(3 * times ** 2 - 2 * times ** 3)], 1)
    ref = Waypoints(times, cubic)
    for t in np.linspace(0.01, 0.99, 17):
        q, qd, qdd = ref.sample(t)
        np.testing.assert_allclose(q, [3 * t ** 2 - 2 * t ** 3, -(3 * t ** 2 - 2 * t ** 3)],
                                   atol=1e-13)
        np.testing.assert_allclose(qd, [6 * t - 6 * t ** 2, -(6 * t - 6 * t ** 2)], atol=1e-12)
        np.testing.assert_allclose(qdd, [6 - 12 * t, -(6 - 12 * t)], atol=1e-11)


def test_waypoints_pass_through_points_and_are_c2():
    rng = np.random.default_rng(3)
    times = np.cumsum(rng.uniform(0.2, 1.0, 6))
    points = rng.uniform(-1.0, 1.0, (6, 3))
    ref = Waypoints(times, points)
    for t, p in zip(times, points):
        np.testing.assert_allclose(ref.sample(t)[0], p, atol=1e-13)
    for t in times[1:-1]:  # acceleration continuous across interior waypoints
        np.testing.assert_allclose(ref.sample(t - 1e-9)[2], ref.sample(t + 1e-9)[2], atol=1e-6)
    np.testing.assert_allclose(ref.sample(times[0] + 1e-12)[1], 0.0, atol=1e-9)
    np.testing.assert_allclose(ref.sample(times[-1] - 1e-12)[1], 0.0, atol=1e-9)
    inner = [0.5 * (a + b) for a, b in zip(times[:-1], times[1:])]
    assert_derivatives(ref, inner)
    np.testing.assert_array_equal(ref.sample(times[0] - 1.0)[0], points[0])
    np.testing.assert_array_equal(ref.sample(times[-1] + 1.0)[0], points[-1])
    assert ref.end_time == times[-1]


@pytest.mark.parametrize('degree', [3, 5])
def test_waypoints_with_derivatives_reproduce_polynomials(degree):
    # Hermite interpolation of degree 3 (velocities) or 5 (also accelerations) is exact on
    # polynomials of that degree
    rng = np.random.default_rng(degree)
    coeffs = rng.normal(size=(degree + 1, 2))
    poly = [np.polynomial.Polynomial(coeffs[:, j]) for j in range(2)]

    def value(t, d):
        return np.array([p.deriv(d)(t) if d else p(t) for p in poly])

    times = np.array([0.0, 0.4, 1.1, 1.5])
    derivs = [np.array([value(t, d) for t in times]) for d in range(3)]
    ref = Waypoints(times, derivs[0], derivs[1], derivs[2] if degree == 5 else None)
    for t in np.linspace(0.0, 1.49, 23):
        for d, got in enumerate(ref.sample(t)):
            if degree == 3 and d == 2 and np.min(np.abs(t - times)) < 1e-12:
                continue  # cubic Hermite: acceleration is one-sided at the knots
            np.testing.assert_allclose(got, value(t, d), atol=1e-9)


def test_single_waypoint_is_held():
    ref = Waypoints([2.0], [[0.3, 0.4]])
    for t in (0.0, 2.0, 5.0):
        np.testing.assert_array_equal(ref.sample(t)[0], [0.3, 0.4])
        np.testing.assert_array_equal(ref.sample(t)[1], [0.0, 0.0])


@pytest.mark.parametrize('kwargs, key', [
    (dict(times=[0.0, 1.0, 1.0], positions=[[0.0]] * 3), 'trajectory.times'),
    (dict(times=[0.0, 2.0, 1.0], positions=[[0.0]] * 3), 'trajectory.times'),
    (dict(times=[], positions=[]), 'trajectory.times'),
    (dict(times=[0.0, 1.0], positions=[[0.0, 1.0], [1.0]]), 'trajectory.positions'),
    (dict(times=[0.0, 1.0], positions=[[0.0], [1.0], [2.0]]), 'trajectory.positions'),
    (dict(times=[0.0, float('inf')], positions=[[0.0], [1.0]]), 'trajectory.times'),
    (dict(times=[0.0, 1.0], positions=[[0.0], [float('nan')]]), 'trajectory.positions'),
    (dict(times=[0.0, 1.0], positions=[[0.0], [1.0]], velocities=[[0.0]]),
     'trajectory.velocities'),
    (dict(times=[0.0, 1.0], positions=[[0.0], [1.0]], accelerations=[[0.0], [0.0]]),
     'trajectory.accelerations'),
    (dict(times=[0.0, 1.0], positions='abc'), 'trajectory.positions'),
])
def test_bad_waypoints_are_rejected(kwargs, key):
    with pytest.raises(ConfigError, match=key.replace('.', r'\.')):
        Waypoints(**kwargs)


def test_minimum_jerk_ramp_derivatives_and_ends():
    assert minimum_jerk_ramp(-1.0, 2.0) == (0.0, 0.0, 0.0)
    assert minimum_jerk_ramp(3.0, 2.0) == (1.0, 0.0, 0.0)
    assert minimum_jerk_ramp(1.0, 2.0)[0] == 0.5
    for t in np.linspace(0.1, 1.9, 7):
        s, ds, dds = minimum_jerk_ramp(t, 2.0)
        np.testing.assert_allclose(ds, (minimum_jerk_ramp(t + H, 2.0)[0]
                                        - minimum_jerk_ramp(t - H, 2.0)[0]) / (2 * H), atol=1e-9)
        np.testing.assert_allclose(dds, (minimum_jerk_ramp(t + H, 2.0)[1]
                                         - minimum_jerk_ramp(t - H, 2.0)[1]) / (2 * H), atol=1e-8)


WITHIN_CASES = {
    'hold': (Hold([0.1, -0.2]), ([0.1, -0.2], [0.1, -0.2])),
    'sinusoid': (Sinusoid([0.5, 0.3], [0.4, -0.2], [0.5, 2.0], [0.0, 1.0]),
                 ([0.1, 0.1], [0.9, 0.5])),
    'multisine': (Multisine([0.02, 0.03], [0.01, 0.02], [0.1, 2.0], 3), ([0.01, 0.01],
                                                                         [0.03, 0.05])),
    'min_jerk': (MinimumJerk([0.1, -0.4], [0.9, 0.2], 1.0, 2.0), ([0.1, -0.4], [0.9, 0.2])),
}


@pytest.mark.parametrize('case', sorted(WITHIN_CASES))
def test_within_holds_for_declared_ranges_and_never_for_narrower_bounds(case):
    """`within` says True for bounds around the declared range, False once a sample leaves."""
    reference, (lowest, highest) = WITHIN_CASES[case]
    lowest, highest = np.array(lowest), np.array(highest)
    q = np.array([reference.sample(t)[0] for t in np.linspace(0.0, 20.0, 40001)])
    margin = 1e-6
    assert reference.within(lowest - margin, highest + margin)
    assert reference.within(-np.inf, np.inf)
    for joint in range(2):
        for side in (0, 1):
            low, high = lowest - margin, highest + margin
            inner = q[:, joint].min() + margin if side == 0 else q[:, joint].max() - margin
            (low if side == 0 else high)[joint] = inner     # one sample at least is outside
            assert not reference.within(low, high)


def test_waypoints_do_not_vouch_for_bounds():
    """A spline may overshoot its points: the loop clamps it whatever the bounds."""
    reference = Waypoints([0.0, 1.0, 2.0], [[0.0], [1.0], [0.0]])
    assert not reference.within(-np.inf, np.inf)
