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
"""

import math

from continuum_ctrl.runtime.lateness import split


class StarvationDetector:
    """Sliding-window share of missed deadlines; `degraded` while above `max_share`."""

    def __init__(self, period, window=0.5, max_share=0.2):
        if not period > 0.0 or not window >= period or not 0.0 < max_share < 1.0:
            raise ValueError(f'need period > 0, window >= period and 0 < max_share < 1, got '
                             f'{period}, {window}, {max_share}')
        self.period = period
        self.max_share = max_share
        self.size = int(math.ceil(window / period))
        self._ring = bytearray(self.size)       # 1: that deadline was missed
        self._next = 0
        self.missed = 0                          # missed deadlines in the window
        self.degraded = False
        self._enter = max_share * self.size
        self._leave = 0.5 * max_share * self.size

    def _push(self, missed):
        ring, k = self._ring, self._next
        self.missed += missed - ring[k]
        ring[k] = missed
        self._next = k + 1 if k + 1 < self.size else 0

    def record(self, lateness):
        """Record one tick that started `lateness` s after its deadline; return `degraded`."""
        skipped, late = split(lateness, self.period)
        for _ in range(min(skipped, self.size)):    # deadlines that got no tick
            self._push(1)
        self._push(1 if late else 0)
        if self.degraded:
            self.degraded = self.missed > self._leave
        else:
            self.degraded = self.missed > self._enter
        return self.degraded

    @property
    def share(self):
        """Share of the window's deadlines that were missed."""
        return self.missed / self.size
