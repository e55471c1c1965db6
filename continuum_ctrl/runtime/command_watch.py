"""
The command's quality online, per channel and diagnostics window: variation and chatter.

    watch = CommandWatch(n)                 # n channels, chatter above CHATTER_CUTOFF_HZ
    watch_command(*watch.arrays, command, t, active)   # each tick (compiled; tick_record.py)
    rate, chatter = watch.window()          # (n,) each, since the last call

The offline measures of a recording (control/command_quality.py) resample and take a
periodogram; a tick cannot, so here each active tick adds, per channel, |the command's
change|, the square of a first-order high-pass of the command (corner CHATTER_CUTOFF_HZ)
and the command's sum and sum of squares. A window's rate is its sum of |change| over the
time its ticks span; its chatter index the high-pass output's mean square over the
command's variance, at most 1: a 25 Hz square wave gives 0.8 to 0.9, a 0.25 Hz sinusoid
(f / fc)^2 = 6e-4. Ticks while the loop does not control add nothing, and the first active
tick after them no change: the safe command and the activation blend are not chatter.

The sums only grow, and the reporter (`window`) keeps its copy of the last ones it read:
the loop thread writes, the reporter only reads, so neither resets the other's figures (a
window read during a tick may count that tick partly: one tick of some thousand). The sums
are of the command less the first active one (Pa for PMAs), so that a long run's sum of
squares keeps the precision of its variance.
"""

import math

import numpy as np

from continuum_ctrl.control.command_quality import CHATTER_CUTOFF_HZ
from continuum_ctrl.numerics.jit import compiled

#: rows of `sums` (per channel): |change|, high-pass squared, command, command squared; then
#: the previous command, the high-pass output, the first active command (one array: each
#: array argument costs the tick's compiled call its unboxing)
CHANGE, HIGH, VALUE, SQUARE, LAST, OUTPUT, ORIGIN = 0, 1, 2, 3, 4, 5, 6
#: entries of `clock`: the last active tick's time (s), 1 after an active tick, 1 once the
#: origin is set, the time the changes span (s), the ticks summed, the high-pass time
#: constant (s)
LAST_T, FOLLOWS, HAS_ORIGIN, SPAN, TICKS, TAU = 0, 1, 2, 3, 4, 5


@compiled()
def watch_command(clock, sums, command, t, active):
    """
    Add the tick's `command` (n,) at `t` (s) to the sums, if `active` (module doc).

    `clock`: see LAST_T...; `sums` (7, n): see CHANGE...
    """
    n = command.shape[0]
    if not active:
        clock[FOLLOWS] = 0.0
        return
    if clock[FOLLOWS] == 0.0:                   # the first active tick: no change yet
        for i in range(n):                      # loops: compiled without Numba's runtime
            if clock[HAS_ORIGIN] == 0.0:
                sums[ORIGIN, i] = command[i]
            sums[LAST, i] = command[i]
            sums[OUTPUT, i] = 0.0
        clock[HAS_ORIGIN] = 1.0
        clock[LAST_T] = t
        clock[FOLLOWS] = 1.0
        return
    dt = t - clock[LAST_T]
    gain = clock[TAU] / (clock[TAU] + dt)       # the discrete first-order high-pass
    for i in range(n):
        change = command[i] - sums[LAST, i]
        h = gain * (sums[OUTPUT, i] + change)
        sums[OUTPUT, i] = h
        sums[LAST, i] = command[i]
        x = command[i] - sums[ORIGIN, i]
        sums[CHANGE, i] += abs(change)
        sums[HIGH, i] += h * h
        sums[VALUE, i] += x
        sums[SQUARE, i] += x * x
    clock[LAST_T] = t
    clock[SPAN] += dt
    clock[TICKS] += 1.0


class CommandWatch:
    """
    The online sums of `n` command channels (module doc); `arrays` go to `watch_command`.

    `cutoff`: the high-pass corner, Hz.
    """

    def __init__(self, n, cutoff=CHATTER_CUTOFF_HZ):
        if not cutoff > 0.0:
            raise ValueError(f'the chatter cutoff must be > 0 Hz, got {cutoff!r}')
        clock = np.zeros(6)
        clock[TAU] = 1.0 / (2.0 * math.pi * cutoff)
        self.arrays = (clock, np.zeros((7, n)))
        self._seen = np.zeros((4, n)), np.zeros(2)          # the sums at the last window

    def window(self):
        """
        Return ``(rate, chatter)`` (n,) each since the last call: units/s, and 0..1.

        NaN where no two active ticks followed each other in the window.
        """
        clock, sums = self.arrays[0], self.arrays[1][:SQUARE + 1].copy()
        counts = clock[[SPAN, TICKS]]
        seen, seen_counts = self._seen
        self._seen = sums, counts
        delta, (span, ticks) = sums - seen, counts - seen_counts
        if not ticks > 0.0 or not span > 0.0:
            return np.full(sums.shape[1], np.nan), np.full(sums.shape[1], np.nan)
        mean = delta[VALUE] / ticks
        variance = delta[SQUARE] / ticks - mean ** 2
        power = delta[HIGH] / ticks
        # a constant command (variance only rounding) has no chatter
        quiet = variance <= 1e-12 * (mean ** 2 + 1.0)
        with np.errstate(invalid='ignore', divide='ignore'):
            chatter = np.where(quiet, 0.0, np.minimum(power / variance, 1.0))
        return delta[CHANGE] / span, chatter
