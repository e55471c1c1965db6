"""The starvation detector: share of missed deadlines over a sliding window, with hysteresis."""

import pytest

from continuum_ctrl.runtime.starvation import StarvationDetector

PERIOD = 0.002          # 500 Hz: a 0.5 s window holds 250 deadlines


def test_on_time_ticks_and_sub_threshold_lateness_never_degrade():
    detector = StarvationDetector(PERIOD, 0.5, 0.2)
    assert detector.size == 250
    for k in range(2000):
        assert not detector.record(0.49 * PERIOD if k % 2 else 0.0)
    assert detector.share == 0.0


def test_a_share_just_above_the_bound_degrades_and_one_just_below_does_not():
    below = StarvationDetector(PERIOD, 0.5, 0.2)
    above = StarvationDetector(PERIOD, 0.5, 0.2)
    for k in range(1000):                   # every 5th tick late: exactly 20 %, not above
        below.record(0.6 * PERIOD if k % 5 == 0 else 0.0)
        above.record(0.6 * PERIOD if k % 4 == 0 else 0.0)   # 25 %
    assert not below.degraded and below.share == pytest.approx(0.2)
    assert above.degraded and above.share == pytest.approx(0.25, abs=0.005)


def test_skipped_deadlines_count_and_recovery_needs_half_the_share():
    detector = StarvationDetector(PERIOD, 0.5, 0.2)
    for _ in range(300):
        detector.record(0.0)
    assert not detector.record(40.2 * PERIOD)   # 40 skipped deadlines: 16 % of the window
    assert detector.missed == 40
    assert detector.record(20.7 * PERIOD)       # 21 more (the last one late): 24.4 %
    assert detector.missed == 61
    ticks = 0
    while detector.record(0.0):                 # on time again: recovers at <= 10 %
        ticks += 1
    assert detector.share <= 0.1 < (detector.missed + 1) / detector.size
    # degraded until the 188 older on-time entries and then 36 of the 61 misses left the window
    assert ticks == 188 + 36 - 1


def test_a_stall_longer_than_the_window_fills_it_at_once():
    detector = StarvationDetector(PERIOD, 0.5, 0.2)
    assert detector.record(10.0)                # a 10 s stall
    assert detector.share == 1.0


def test_bad_settings_are_refused():
    for args in ((0.0, 0.5, 0.2), (PERIOD, 0.001, 0.2), (PERIOD, 0.5, 0.0), (PERIOD, 0.5, 1.0)):
        with pytest.raises(ValueError, match='max_share'):
            StarvationDetector(*args)
