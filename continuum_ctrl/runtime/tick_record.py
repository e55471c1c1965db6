"""
A tick's deadline, timing figures, ``~/state`` row and command sums, in two compiled calls.

    record = TickRecord(capacity, detector, rows, watch)  # Durations, run counts, rows, sums
    degraded = record.deadline(lateness)          # at the tick's start: its safe command?
    record.end(values, t, label, keep, ..., command)   # at its end: durations, row, command

In Python the bookkeeping of a tick (four `Durations.add`, the lateness split, the
starvation window, the row's copy, the command's sums) cost more than a rigid arm's control
law; here it is two calls into the compiled pieces, each kept in its home:
`timing.add_duration`, `lateness.split`, `starvation.record_deadlines`,
`snapshot_ring.keep_row`, `command_watch.watch_command`. One call at the tick's start (its
lateness decides whether it gives the safe command), one at its end (its durations, row and
command).
"""

import numpy as np

from continuum_ctrl.numerics.jit import cached_entry_point, compiled
from continuum_ctrl.runtime.command_watch import CommandWatch, watch_command
from continuum_ctrl.runtime.lateness import split
from continuum_ctrl.runtime.snapshot_ring import keep_row, SnapshotRing
from continuum_ctrl.runtime.starvation import record_deadlines, StarvationDetector
from continuum_ctrl.runtime.timing import add_duration, DurationTable

#: the runtime's kinds of durations (rows of its DurationTable); the loop thread records the
#: first four, the input thread `transport`
KINDS = ('period', 'compute', 'age', 'wait', 'transport')
#: their rows, as int64 (numerics.jit: no literal arguments from compiled callers)
PERIOD, COMPUTE, AGE, WAIT = (np.int64(k) for k in range(4))
#: entries of `TickRecord.run`: deadlines skipped, ticks late (runtime/lateness.py)
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


@compiled()
def record_end(windows, counts, largest, histograms, rows, times, labels, kept, clock, sums,
               values, t, label, keep, start, last, received, end, state_time, new_state,
               active, command):
    """
    Record a tick's durations, its `command` and, if `keep`, its row `values` at `t` (s).

    The arrays: a DurationTable's of KINDS, a SnapshotRing's, a CommandWatch's. `label`: the
    row's; `command`: what the tick sent (joints order), summed if `active`. `start`, `end`: this
    tick's (perf_counter s), `last` the previous one's start (NaN: none), `received` the
    receipt of the latest state; `state_time`: the receive time of the state the tick used
    (s, the clock of `t`), `new_state` if no tick used it before; `active`: the loop controls
    (else the input age is 0 and no wait is recorded).
    """
    if keep:
        keep_row(rows, times, labels, kept, values, t, label)
    watch_command(clock, sums, command, t, active)
    wait_us = np.nan
    if new_state and active:
        wait_us = max(t - state_time, 0.0) * 1e6
    record_durations(windows, counts, largest, histograms, (start - last) * 1e6, wait_us,
                     (start - received) * 1e6 if active else 0.0, (end - start) * 1e6)


class TickRecord:
    """
    The loop's Durations of KINDS (attributes of those names), run counts, detector, rows, sums.

    `capacity`: samples per window and kind; `detector`: the StarvationDetector (replaced by
    `restart`); `rows`: the SnapshotRing of the ``~/state`` rows; `watch`: the CommandWatch
    of the commands.
    """

    def __init__(self, capacity, detector, rows, watch):
        self.table = table = DurationTable(KINDS, capacity)
        self.period, self.compute, self.age, self.wait, self.transport = (
            table.kind(name) for name in KINDS)
        self.run = np.zeros(2, dtype=np.int64)
        self.watch = watch
        self._end = table.arrays + rows.arrays + watch.arrays
        self._record_deadline, self._record_end = _record_deadline(), _record_end()
        self.restart(detector)

    def restart(self, detector):
        """Feed the new `detector` from now on."""
        self.detector = detector
        self._deadline = (detector.ring, detector.state, detector.thresholds, self.run,
                          detector.period)

    def deadline(self, lateness):
        """Record a tick starting `lateness` s after its deadline; return whether degraded."""
        return self._record_deadline(*self._deadline, lateness)

    def end(self, values, t, label, keep, start, last, received, end, state_time, new_state,
            active, command):
        """Record the tick's durations, command and, if `keep`, its row: `record_end`'s."""
        self._record_end(*self._end, values, t, label, keep, start, last, received, end,
                         state_time, new_state, active, command)

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
_RING = SnapshotRing(1, 1, ('',))
_record_end = cached_entry_point(record_end, *DurationTable(KINDS, 1).arrays, *_RING.arrays,
                                 *CommandWatch(1).arrays, np.zeros(1), 0.0, np.int64(0), True,
                                 0.0, 0.0, 0.0, 0.0, 0.0, True, True, np.zeros(1))
