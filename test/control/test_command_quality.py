"""The command-quality measures on signals whose answer is known (control/command_quality.py)."""

import numpy as np
import pytest

from continuum_ctrl.control.command_quality import chatter_index, variation_rate
from continuum_ctrl.sim.report import command_summary

#: the loop's tick, s, and a run of the demo's length
PERIOD, DURATION = 0.002, 8.0
T = PERIOD * np.arange(int(DURATION / PERIOD) + 1)


def slow(amplitude=2e4, frequency=0.25, offset=2e5):
    """A PMA's pressure along the shipped sinusoid, Pa."""
    return offset + amplitude * np.sin(2 * np.pi * frequency * T)


def square(amplitude, frequency=25.0):
    """A square wave of `amplitude` (half its swing) at `frequency` Hz."""
    return amplitude * np.sign(np.sin(2 * np.pi * frequency * T + 0.1))


def test_a_slow_sinusoid_varies_4_a_f_per_second_and_does_not_chatter():
    rate = variation_rate(T, slow(2e4, 0.25))
    np.testing.assert_allclose(rate, [4 * 2e4 * 0.25], rtol=1e-3)
    assert chatter_index(T, slow()) < 1e-3


def test_a_25_hz_square_wave_shows_in_both_measures():
    """The MuJoCo arm's chatter: 0-500 kPa at 25 Hz on a slow motion."""
    quiet, noisy = slow(), slow() + square(2.5e5)
    assert variation_rate(T, noisy)[0] > 2e7 > 100 * variation_rate(T, quiet)[0]   # Pa/s
    assert chatter_index(T, noisy)[0] > 0.8
    # a small square wave: its share of the power (A^2 against the sine's a^2 / 2), within
    # what the window's weighting of the run's middle moves it
    share = 2e3 ** 2 / (2e3 ** 2 + 2e4 ** 2 / 2)
    assert 0.7 * share < chatter_index(T, slow() + square(2e3))[0] < 1.3 * share
    assert chatter_index(T, slow())[0] < 0.05 * share


def test_channels_are_measured_apart():
    command = np.column_stack((slow(), slow() + square(2.5e5), np.full(T.size, 3e5)))
    rate, chatter = variation_rate(T, command), chatter_index(T, command)
    assert rate[2] == 0.0 and chatter[2] == 0.0                  # a constant command
    assert rate[1] > 100 * rate[0] and chatter[1] > 0.8 > 0.01 > chatter[0]


def test_a_non_uniform_time_base_gives_the_rate_per_second():
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.uniform(0.001, 0.003, 4000))
    command = 1e3 * np.sin(2 * np.pi * 0.5 * t)
    duration = t[-1] - t[0]
    expected = np.sum(np.abs(np.diff(command))) / duration
    np.testing.assert_allclose(variation_rate(t, command), [expected])
    assert abs(expected - 4 * 1e3 * 0.5) < 0.02 * expected
    assert chatter_index(t, command)[0] < 1e-3


def test_nan_gaps_neither_add_a_jump_nor_dilute_the_rate():
    command = slow()
    gapped = command.copy()
    gapped[1000:1500] = np.nan            # a second of lost samples
    rate = variation_rate(T, gapped)[0]
    np.testing.assert_allclose(rate, variation_rate(T, command)[0], rtol=0.05)
    assert chatter_index(T, gapped)[0] < 1e-3
    assert chatter_index(T, gapped + square(2.5e5))[0] > 0.8
    all_nan = np.full(T.size, np.nan)
    assert np.isnan(variation_rate(T, all_nan)[0]) and np.isnan(chatter_index(T, all_nan)[0])


@pytest.mark.parametrize('t, command, message', [
    (np.array([]), np.array([]), 'at least 2 samples'),
    (T[:1], np.ones(1), 'at least 2 samples'),
    (T, np.ones((T.size, 0)), 'at least 2 samples'),
    (T, np.ones(T.size - 1), 'shapes'),
    (T, np.ones((T.size, 2, 2)), 'shapes'),
    (T[::-1], np.ones(T.size), 'increasing'),
    (np.where(T > 1.0, np.nan, T), np.ones(T.size), 'finite'),
])
def test_bad_input_raises_one_clear_error(t, command, message):
    for measure in (variation_rate, chatter_index):
        with pytest.raises(ValueError, match=message):
            measure(t, command)


def test_a_cutoff_at_or_beyond_nyquist_is_refused():
    with pytest.raises(ValueError, match='Nyquist frequency 250 Hz'):
        chatter_index(T, slow(), cutoff=251.0)
    with pytest.raises(ValueError, match='cutoff'):
        chatter_index(T, slow(), cutoff=0.0)


def test_the_summary_names_each_sections_worst_pma():
    names = [f'section{i}_pma{j}' for i in (1, 2) for j in (1, 2, 3)]
    command = np.column_stack([slow(1e4 * (k + 1)) for k in range(6)])
    command[:, 1] += square(2.5e5)
    rows = command_summary(names, T, command)
    assert [row[:2] for row in rows] == [('section1', 'section1_pma2'),
                                         ('section2', 'section2_pma3')]
    assert rows[0][2] > 2e7 and rows[0][3] > 0.8
    np.testing.assert_allclose(rows[1][2], 4 * 6e4 * 0.25, rtol=1e-3)
    assert rows[1][3] < 1e-3
