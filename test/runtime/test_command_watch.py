"""The runtime's online command quality (runtime/command_watch.py) against the offline one."""

import numpy as np
import pytest

from continuum_ctrl.control.command_quality import chatter_index, variation_rate
from continuum_ctrl.runtime.command_watch import CommandWatch, watch_command

PERIOD = 0.002
T = PERIOD * np.arange(2001)


def fed(command, active=None, watch=None):
    """Return a CommandWatch fed `command` (N, n) at T, tick by tick, and its window."""
    watch = CommandWatch(command.shape[1]) if watch is None else watch
    active = np.ones(len(command), dtype=bool) if active is None else active
    for t, row, on in zip(T, command, active):
        watch_command(*watch.arrays, np.ascontiguousarray(row), t, on)
    return watch, watch.window()


def signals():
    """A slow PMA pressure (Pa), the same with a 25 Hz square wave of 250 kPa, a constant."""
    slow = 2e5 + 2e4 * np.sin(2 * np.pi * 0.25 * T)
    noisy = slow + 2.5e5 * np.sign(np.sin(2 * np.pi * 25.0 * T + 0.1))
    return np.column_stack((slow, noisy, np.full(T.size, 3e5)))


def test_the_online_rate_is_the_offline_one_and_the_index_tells_chatter():
    command = signals()
    _, (rate, chatter) = fed(command)
    np.testing.assert_allclose(rate, variation_rate(T, command), rtol=1e-12)
    offline = chatter_index(T, command)
    assert chatter[0] < 0.01 and offline[0] < 0.01
    assert chatter[1] > 0.7 and offline[1] > 0.8       # a first-order high-pass leaks less
    assert chatter[2] == 0.0


def test_ticks_that_do_not_control_add_nothing_and_windows_restart():
    command = signals()
    active = T > 1.0
    active[T > 3.0] = False
    watch, (rate, _) = fed(command, active)
    on = (T > 1.0) & (T <= 3.0)
    np.testing.assert_allclose(rate, variation_rate(T[on], command[on]), rtol=1e-12)
    rate, chatter = watch.window()              # nothing since: no figures
    assert np.all(np.isnan(rate)) and np.all(np.isnan(chatter))
    # a jump into the next active stretch (the safe command's end) is not a change
    jumped = command + 1e5 * (T > 2.0)[:, None]
    _, (rate, _) = fed(jumped, T > 2.0, watch)
    later = T > 2.0
    np.testing.assert_allclose(rate, variation_rate(T[later], jumped[later]), rtol=1e-12)


def test_a_cutoff_must_be_positive():
    with pytest.raises(ValueError, match='cutoff must be > 0'):
        CommandWatch(3, cutoff=0.0)
