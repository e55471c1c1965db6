"""
The loop's tick grid locked to where the joint states arrive in it.

    lock = PhaseLock(period, share=0.5)
    nudge = lock.add(wait)     # each tick that uses a new state: its wait, s; returns s
                               # to move the grid by (> 0: later), 0.0 between windows

A driver publishes on its own clock, so its samples arrive at a fixed phase of the loop's
grid, set by chance when the two started. Arriving just before the ticks, the transport's
jitter puts some after: those ticks use the state before, one period older, and the age the
law sees alternates between one and two periods. Through the nodes on this 2-core machine
(the MuJoCo arm 20 % off, lengths only, the learning at 1 Hz, docs/ilc.md) four starts fell
in two groups by that phase alone: samples about 1.6 ms before the tick gave a 10th-period
error of 0.012 / 0.018 / 0.013 mm, 0.3-0.7 ms before it 0.020 / 0.027 / 0.020 mm.

The lock moves the grid so that a new state waits `share` of a period for its tick (a state's
wait: its receipt to the first tick that uses it), by default half: a margin of half a period
for a late arrival and for an early one. Through the nodes (the same runs, four starts each)
the 10th period was 0.011-0.015 / 0.016-0.020 / 0.014-0.015 mm at a share of 0.5, 0.013-0.014 /
0.020-0.022 / 0.015-0.017 mm at 0.7, two starts at 0.3 alike, two at 0.85 worse (0.016-0.017 /
0.023-0.025 / 0.018 mm): a fresher state helps as long as none misses its tick. Over each
window of WINDOW_TICKS ticks it takes the circular mean of the waits (phases on the period's
circle, so a wait of 0.1 and one of 0.9 periods average to 0, not 0.5) and, where they gather
(mean resultant length at least MIN_CONCENTRATION; a driver whose period is no multiple of the
loop's spreads them), moves the grid by GAIN of the phase error, at most MAX_STEP periods. The
grid's period is unchanged; only its origin moves, by at most 0.1 period per window, so no tick
comes early or late by more than that.
"""

import math

#: ticks per window (0.25 s at 500 Hz)
WINDOW_TICKS = 125
#: the share of the phase error corrected per window, and the largest move, in periods
GAIN, MAX_STEP = 0.5, 0.1
#: the waits' mean resultant length below which they do not gather at one phase (0..1)
MIN_CONCENTRATION = 0.5
#: the smallest move made, in periods: the mean's noise over a window is about this
DEADBAND = 0.01


class PhaseLock:
    """The grid's moves that keep a new state's wait at `share` of `period` (module doc)."""

    def __init__(self, period: float, share: float = 0.5) -> None:
        """`period`: the loop's, s; `share`: of it, the wait aimed at (0..1)."""
        self.period = float(period)
        self.share = float(share)
        self._c = self._s = 0.0
        self._count = self._ticks = 0
        #: the last window's mean wait (s) and concentration (0..1), None before one
        self.wait = None
        self.concentration = 0.0
        #: the grid's moves so far, s
        self.moved = 0.0

    def add(self, wait: float) -> float:
        """Take a tick's `wait` (s; NaN: no new state); return the grid's move, s (> 0: later)."""
        if math.isfinite(wait):
            angle = 2.0 * math.pi * (wait / self.period)
            self._c += math.cos(angle)
            self._s += math.sin(angle)
            self._count += 1
        self._ticks += 1
        if self._ticks < WINDOW_TICKS:
            return 0.0
        c, s, count = self._c, self._s, self._count
        self._c = self._s = 0.0
        self._count = self._ticks = 0
        if count == 0:
            return 0.0
        self.concentration = math.hypot(c, s) / count
        phase = (math.atan2(s, c) / (2.0 * math.pi)) % 1.0
        self.wait = phase * self.period
        if self.concentration < MIN_CONCENTRATION:
            return 0.0
        error = (self.share - phase + 0.5) % 1.0 - 0.5     # periods, within (-0.5, 0.5]
        step = max(-MAX_STEP, min(MAX_STEP, GAIN * error))
        if abs(step) < DEADBAND:
            return 0.0
        step *= self.period
        self.moved += step
        return step
