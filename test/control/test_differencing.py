"""Velocities from positions (control/differencing.py) and the loop that takes states without."""

import numpy as np
import pytest

from continuum_ctrl.control.differencing import (MAX_SPEED, PositionDifference, RECEIVE_TIMES,
                                                 STAMP_SPACING, STAMPS)
from continuum_ctrl.apps.node_pair import controller_runtime

PERIOD = 0.002
SPEED = np.array([0.02, -0.04, 0.01])
#: receive times: each sample waited 0 to 1.5 ms in transport and queues (reproducible)
JITTER = np.random.default_rng(7).uniform(0.0, 1.5e-3, 50)


def ramp(k):
    """Return the positions of a ramp at sample `k` (m), measured at k periods after 1 s."""
    return 0.02 + SPEED * k * PERIOD


def test_stamps_with_receive_jitter_give_the_ramps_exact_velocity():
    difference = PositionDifference(3)
    worst_received = 0.0
    for k, late in enumerate(JITTER):
        stamp = 1.0 + k * PERIOD
        qd = difference(ramp(k), stamp + late, stamp)
        if k:
            assert difference.source == STAMPS
            np.testing.assert_allclose(qd, SPEED, rtol=1e-9)
            received = PositionDifference(3)                # the same pair, receive times
            received(ramp(k - 1), 1.0 + (k - 1) * PERIOD + JITTER[k - 1], 0.0)
            worst_received = max(worst_received, np.max(np.abs(
                received(ramp(k), stamp + late, 0.0) / SPEED - 1.0)))
        else:
            assert np.array_equal(qd, np.zeros(3))          # no partner yet
    assert worst_received > 0.3             # what the receive times would have given


@pytest.mark.parametrize('stamps, why', [
    (lambda k: 0.0, 'no stamps'),
    (lambda k: 1.0, 'a repeated stamp'),
    (lambda k: 1.0 + k * (PERIOD + 2.0 * STAMP_SPACING), 'spaced unlike the receive times'),
])
def test_bad_stamps_fall_back_to_the_receive_times(stamps, why):
    difference = PositionDifference(3)
    for k in range(4):
        qd = difference(ramp(k), 5.0 + k * PERIOD, stamps(k))
    assert difference.source == RECEIVE_TIMES, why
    np.testing.assert_allclose(qd, SPEED, rtol=1e-9)


def test_a_velocity_beyond_the_limit_is_refused_and_the_next_sample_is_not():
    difference = PositionDifference(1)
    difference(np.zeros(1), 0.0, 0.0)
    assert difference(np.array([2.0 * MAX_SPEED * PERIOD]), PERIOD, 0.0) is None
    assert np.array_equal(difference(np.array([0.001]), 2 * PERIOD, 0.0), [0.25])


def run(runtime, stamps, start=0, ticks=12):
    """Post a ramp of lengths only from sample `start`, stamped `stamps(k)`; return what's said."""
    events = []
    n = runtime.loop.model.n
    for k in range(start, start + ticks):
        t = 1.0 + k * PERIOD + JITTER[k]
        runtime.post_state(np.full(n, 0.012) + 0.01 * k * PERIOD, None, t, stamps(k))
        runtime.tick(t)
        events += [text for _, text in runtime.drain_events()]
    return [text for text in events if 'differenced' in text]


def test_the_loop_says_once_what_it_differences_over_and_again_when_it_changes():
    overrides = {'resume_count': 1, 'velocity_filter': 0.0, 'observer.type': 'none'}
    runtime = controller_runtime('continuum_3section.yaml', overrides)
    said = run(runtime, lambda k: 1.0 + k * PERIOD)
    assert len(said) == 1 and 'header stamps' in said[0], said
    np.testing.assert_allclose(runtime.loop.qd, 0.01, rtol=1e-6)
    said = run(runtime, lambda k: None, 12)               # the driver stops stamping
    assert len(said) == 1 and 'receive times' in said[0], said


def test_the_loop_refuses_a_state_whose_estimated_speed_is_too_high_and_counts_it():
    runtime = controller_runtime('planar_2r.yaml', {'resume_count': 1})
    loop = runtime.loop
    runtime.post_state(np.array([0.1, -0.2]), None, 0.0)
    runtime.tick(0.0)
    runtime.post_state(np.array([0.1 + 2.0 * MAX_SPEED * PERIOD, -0.2]), None, PERIOD)
    runtime.tick(PERIOD)
    assert np.array_equal(loop.q, [0.1, -0.2]) and loop.valid_streak == 0
    assert dict(runtime.figures())['rejected_estimated_speed'] == 1
    warnings = [text for level, text in runtime.drain_events() if level == 'warn']
    assert len(warnings) == 1 and 'beyond' in warnings[0]
