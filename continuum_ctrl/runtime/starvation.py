"""
Starvation of the control loop: too many of its ticks missed over a sliding window.

    detector = StarvationDetector(period=0.002, window=0.5, max_share=0.2)
    degraded = detector.record(lateness)     # once per tick; lateness: s after its deadline

Each deadline of the loop counts as missed when it was skipped or its tick was late, as
runtime/lateness.py defines them. The loop is `degraded` from the tick at which more than
`max_share` of the last ``window / period`` deadlines were missed, and recovers once at most
half that share are (the gap keeps a loop at the edge from flapping). A burst of input that
holds the executor, or a machine too slow for the rate, shows here; the node reports it and,
if asked to, sends the safe command while degraded.

The window lives in arrays and `record_deadlines` is compiled, so that the loop's per-tick
figures feed it from their one compiled call (runtime/tick_record.py).
"""

import math

import numpy as np

from continuum_ctrl.numerics.jit import compiled
from continuum_ctrl.runtime.lateness import split

#: entries of a detector's `state`: the next ring slot, the missed deadlines in the window,
#: 1 while degraded
NEXT, MISSED, DEGRADED = 0, 1, 2


@compiled()
def record_deadlines(ring, state, thresholds, skipped, late):
    """
    Push `skipped` missed deadlines and one that was missed if `late` into the window.

    `ring`: 1 per missed deadline of the window; `state`: see NEXT, MISSED, DEGRADED;
    `thresholds`: (enter, leave), missed deadlines above which the loop degrades and at or
    below which it recovers. Return whether it is degraded.
    """
    size = ring.size
    pushes = min(skipped, size)         # a stall longer than the window fills it at once
    for k in range(pushes + 1):
        missed = 1 if k < pushes or late else 0
        slot = state[NEXT]
        state[MISSED] += missed - ring[slot]
        ring[slot] = missed
        state[NEXT] = slot + 1 if slot + 1 < size else 0
    threshold = thresholds[1] if state[DEGRADED] else thresholds[0]
    state[DEGRADED] = 1 if state[MISSED] > threshold else 0
    return state[DEGRADED] == 1


class StarvationDetector:
    """Sliding-window share of missed deadlines; `degraded` while above `max_share`."""

    def __init__(self, period, window=0.5, max_share=0.2):
        if not period > 0.0 or not window >= period or not 0.0 < max_share < 1.0:
            raise ValueError(f'need period > 0, window >= period and 0 < max_share < 1, got '
                             f'{period}, {window}, {max_share}')
        self.period = period
        self.max_share = max_share
        self.size = int(math.ceil(window / period))
        self.ring = np.zeros(self.size, dtype=np.int64)     # 1: that deadline was missed
        self.state = np.zeros(3, dtype=np.int64)
        self.thresholds = np.array([max_share * self.size, 0.5 * max_share * self.size])

    def record(self, lateness):
        """Record one tick that started `lateness` s after its deadline; return `degraded`."""
        return record_deadlines(self.ring, self.state, self.thresholds,
                                *split(lateness, self.period))

    @property
    def missed(self):
        """Missed deadlines in the window."""
        return int(self.state[MISSED])

    @property
    def degraded(self):
        """Whether more than `max_share` of the window's deadlines were missed (hysteresis)."""
        return bool(self.state[DEGRADED])

    @property
    def share(self):
        """Share of the window's deadlines that were missed."""
        return self.missed / self.size
