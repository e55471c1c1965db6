"""
The phase lock (runtime/phase_lock.py) on simulated arrivals, without threads or ROS.

A driver publishes every period at a phase of its own; its samples arrive after a transport
delay with jitter, mostly late. A tick uses the latest sample received by its deadline.
"""

import numpy as np
import pytest

from continuum_ctrl.runtime.phase_lock import MAX_STEP, PhaseLock, WINDOW_TICKS

PERIOD = 0.002


def run(phase, seconds, locked=True, rate_ratio=1.0, seed=0):
    """
    Tick a grid moved by a PhaseLock (if `locked`) against samples sent at `phase` periods off it.

    `rate_ratio`: the driver's period over the loop's. Return (the median wait of the new
    states over the last second, s; the share of its ticks that used a state half a period or
    more older than the median age, the jitter's doing; the lock).
    """
    rng = np.random.default_rng(seed)
    lock = PhaseLock(PERIOD)
    ticks = int(seconds / PERIOD)
    sends = (phase + np.arange(ticks + 2) * rate_ratio) * PERIOD
    # transport: 0.2 ms and a late tail (an exponential of 0.15 ms), as DDS between processes
    arrivals = sends + 2e-4 + rng.exponential(1.5e-4, sends.shape)
    origin, used, waits, ages = 0.0, -1, [], []
    for k in range(1, ticks):
        t = origin + k * PERIOD
        latest = int(np.searchsorted(arrivals, t)) - 1     # arrivals are nearly in order
        wait = np.nan
        if latest > used:
            wait, used = t - arrivals[latest], latest
            waits.append(wait)
        ages.append(t - sends[latest])
        move = lock.add(wait)
        origin += move if locked else 0.0
    window = int(1.0 / PERIOD)
    ages = np.array(ages[-window:])
    older = np.mean(ages - np.median(ages) >= 0.5 * PERIOD)
    return np.median(waits[-window:]), older, lock


@pytest.mark.parametrize('phase', [0.1, 0.3, 0.55, 0.9])
def test_the_grid_moves_until_a_new_state_waits_its_share_of_a_period(phase):
    wait, stale, lock = run(phase, 4.0)
    assert wait == pytest.approx(0.5 * PERIOD, abs=0.1 * PERIOD)
    assert stale < 0.01                         # no tick is served a state a period older


def test_arrivals_just_before_the_ticks_are_moved_off_them_the_short_way_round():
    # sent 0.35 ms before the deadline, 0.2-1 ms in transit: many miss their tick
    _, stale, _ = run(0.825, 4.0, locked=False)
    assert stale > 0.2                          # the case the lock is for: the test can fail
    wait, stale, lock = run(0.825, 4.0)
    assert stale < 0.01
    assert abs(lock.moved) <= 0.5 * PERIOD      # the short way round the period's circle
    assert abs(lock.moved) > 0.2 * PERIOD


def test_a_driver_at_an_unrelated_rate_moves_nothing():
    wait, stale, lock = run(0.0, 4.0, rate_ratio=1.37)
    assert lock.moved == 0.0 and lock.concentration < 0.5


def test_one_window_moves_at_most_its_step():
    lock = PhaseLock(PERIOD)
    moves = [lock.add(0.2 * PERIOD) for _ in range(WINDOW_TICKS)]
    assert moves[:-1] == [0.0] * (WINDOW_TICKS - 1)
    assert moves[-1] == pytest.approx(MAX_STEP * PERIOD)      # 0.3 of a period to go
    assert lock.add(np.nan) == 0.0 and lock.add(np.inf) == 0.0
