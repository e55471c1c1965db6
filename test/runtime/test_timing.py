"""Loop timing statistics: exact window figures, whole-run percentiles within 0.5 %."""

import numpy as np
import pytest

from continuum_ctrl.runtime.timing import Durations


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_run_percentiles_within_half_a_percent_of_the_exact_ones(seed):
    rng = np.random.default_rng(seed)
    samples = np.concatenate([rng.lognormal(np.log(200.0), 0.8, 20000),
                              rng.uniform(0.2, 1.0, 50), [2.5e7]])  # sub-us and beyond span
    durations = Durations(100)
    for us in samples:
        durations.add(us)
    for fraction in (0.01, 0.5, 0.9, 0.99, 0.999):
        exact = np.quantile(samples, fraction, method='inverted_cdf')
        assert durations.run_percentile(fraction) == pytest.approx(exact, rel=0.0051)
    assert durations.total == len(samples) and durations.largest == 2.5e7
    assert durations.run_percentile(1.0) == 2.5e7            # capped at the largest sample


def test_window_is_exact_and_resets_and_the_run_continues():
    durations = Durations(4)
    assert np.isnan(durations.run_percentile(0.5))
    assert all(np.isnan(v) for v in durations.window_stats())
    for us in (10.0, 30.0, 20.0, 40.0, 1000.0):              # the fifth overflows the window
        durations.add(us)
    p50, p99, largest = durations.window_stats()
    assert (p50, largest) == (25.0, 40.0) and p99 == pytest.approx(39.7)
    assert all(np.isnan(v) for v in durations.window_stats())
    assert durations.total == 5 and durations.largest == 1000.0
    assert durations.run_percentile(0.5) == pytest.approx(30.0, rel=0.0051)
