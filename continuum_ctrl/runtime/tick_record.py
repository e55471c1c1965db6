"""
A tick's deadline and its timing figures, each recorded by one compiled call (loop thread).

    figures = TickFigures(capacity, detector)   # the runtime's Durations, run counts
    degraded = figures.deadline(lateness)       # at the tick's start: its safe command?
    figures.durations(period_us, wait_us, age_us, compute_us)        # at its end

In Python the bookkeeping of a tick (four `Durations.add`, the lateness split, the
starvation window) cost more than a rigid arm's control law; here it is two calls into the
compiled pieces, each kept in its home: `timing.add_duration`, `lateness.split`,
`starvation.record_deadlines`, at the tick's start (its lateness decides whether it gives the
safe command) and at its end (its durations).
"""

import numpy as np

from continuum_ctrl.numerics.jit import cached_entry_point, compiled
from continuum_ctrl.runtime.lateness import split
from continuum_ctrl.runtime.starvation import record_deadlines, StarvationDetector
from continuum_ctrl.runtime.timing import add_duration, DurationTable

#: the runtime's kinds of durations (rows of its DurationTable); the loop thread records the
#: first four, the input thread `transport`
KINDS = ('period', 'compute', 'age', 'wait', 'transport')
#: their rows, as int64 (numerics.jit: no literal arguments from compiled callers)
PERIOD, COMPUTE, AGE, WAIT = (np.int64(k) for k in range(4))
#: entries of `TickFigures.run`: deadlines skipped, ticks late (runtime/lateness.py)
SKIPPED, LATE = 0, 1


@compiled()
def record_deadline(ring, state, thresholds, run, period, lateness):
    """
    Record a tick that started `lateness` s after its deadline; return whether degraded.

    `ring`, `state`, `thresholds`: a StarvationDetector's (`period` s its period); `run`: the
    counts SKIPPED and LATE.
    """
    skipped, late = split(lateness, period)
    run[SKIPPED] += skipped
    run[LATE] += 1 if late else 0
    return record_deadlines(ring, state, thresholds, skipped, late)


@compiled()
def record_durations(windows, counts, largest, histograms, period_us, wait_us, age_us,
                     compute_us):
    """
    Record a tick's durations (us) into a DurationTable's arrays of KINDS.

    `period_us`, `wait_us` NaN: none this tick (no previous tick, no new state).
    """
    if period_us == period_us:
        add_duration(windows, counts, largest, histograms, PERIOD, period_us)
    add_duration(windows, counts, largest, histograms, COMPUTE, compute_us)
    add_duration(windows, counts, largest, histograms, AGE, age_us)
    if wait_us == wait_us:
        add_duration(windows, counts, largest, histograms, WAIT, wait_us)


class TickFigures:
    """
    The loop's Durations of KINDS (attributes of those names), run counts and detector.

    `capacity`: samples per window and kind; `detector`: the StarvationDetector (replaced by
    `restart`).
    """

    def __init__(self, capacity, detector):
        self.table = table = DurationTable(KINDS, capacity)
        self.period, self.compute, self.age, self.wait, self.transport = (
            table.kind(name) for name in KINDS)
        self.run = np.zeros(2, dtype=np.int64)
        self._record_deadline, self._record_durations = _record_deadline(), _record_durations()
        self.restart(detector)

    def restart(self, detector):
        """Feed the new `detector` from now on."""
        self.detector = detector
        self._deadline = (detector.ring, detector.state, detector.thresholds, self.run,
                          detector.period)

    def deadline(self, lateness):
        """Record a tick starting `lateness` s after its deadline; return whether degraded."""
        return self._record_deadline(*self._deadline, lateness)

    def durations(self, period_us, wait_us, age_us, compute_us):
        """Record the tick's period, wait, input age and compute time (us; NaN: none)."""
        self._record_durations(*self.table.arrays, period_us, wait_us, age_us, compute_us)

    @property
    def skipped(self):
        """Deadlines that passed without a tick, over the run."""
        return int(self.run[SKIPPED])

    @property
    def late(self):
        """Ticks that started late, over the run."""
        return int(self.run[LATE])


_DETECTOR = StarvationDetector(0.5)
_record_deadline = cached_entry_point(record_deadline, _DETECTOR.ring, _DETECTOR.state,
                                      _DETECTOR.thresholds, np.zeros(2, dtype=np.int64), 0.5,
                                      0.0)
_record_durations = cached_entry_point(record_durations, *DurationTable(KINDS, 1).arrays,
                                       1.0, 1.0, 1.0, 1.0)
