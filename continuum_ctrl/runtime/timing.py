"""
Loop timing statistics for /diagnostics: per-window samples and whole-run histograms.

    table = DurationTable(('period', 'compute'), window_capacity=2000)
    period = table.kind('period')            # a Durations
    period.add(120.0)                        # us; or several kinds in one compiled call
    p50, p99, largest = period.window_stats()
    period.run_percentile(0.99)

Durations are recorded in microseconds. The window (the time since the last report) keeps its
samples in a preallocated ring, so window percentiles are exact, also when one thread (the
loop) records and another (the executor's diagnostics) reports: the recorder only advances
`head`, the reporter only `tail`, so neither loses or repeats a sample of the other. The
whole run keeps a histogram with logarithmic bins, each 1 % wide (HdrHistogram-like), so run
percentiles are within 0.5 % at O(1) cost per sample, constant memory and about 1700 bins per
report.

The kinds of one table share stacked arrays, and `add_duration` is compiled: the loop thread
records all of a tick's durations in one compiled call (runtime/tick_record.py), where four
Python `add` calls cost more than a rigid arm's whole control law.
"""

import math

import numpy as np

from continuum_ctrl.numerics.jit import cached_entry_point, compiled

#: relative width of a run-histogram bin
BIN_RATIO = 1.01
#: longest duration the run histogram resolves (longer ones land in the last bin), us
HISTOGRAM_SPAN_US = 1e7
_LOG_RATIO = math.log(BIN_RATIO)
_BINS = int(math.log(HISTOGRAM_SPAN_US) / _LOG_RATIO) + 1
#: columns of a table's `counts`: samples recorded in windows (the recorder's), samples
#: reported (the reporter's), samples in the run
HEAD, TAIL, TOTAL = 0, 1, 2


@compiled()
def add_duration(windows, counts, largest, histograms, kind, us):
    """
    Record the duration `us` (us) of `kind` (a row of the table's arrays).

    Beyond the window's capacity (a reporter that fell behind) it counts for the run only.
    """
    head, capacity = counts[kind, HEAD], windows.shape[1]
    if head - counts[kind, TAIL] < capacity:
        windows[kind, head % capacity] = us
        counts[kind, HEAD] = head + 1
    index = int(min(math.log(us) / _LOG_RATIO, _BINS)) if us > 1.0 else 0
    histograms[kind, index] += 1
    counts[kind, TOTAL] += 1
    if us > largest[kind]:
        largest[kind] = us


class DurationTable:
    """
    Durations of the kinds `names` in stacked arrays, a row each, in that order.

    `arrays`: ``(windows, counts, largest, histograms)``, what `add_duration` takes.
    """

    def __init__(self, names, window_capacity):
        kinds = len(names)
        self.arrays = (np.zeros((kinds, window_capacity)), np.zeros((kinds, 3), dtype=np.int64),
                       np.zeros(kinds), np.zeros((kinds, _BINS + 1), dtype=np.int64))
        self.names = tuple(names)

    def kind(self, name):
        """Return the Durations of kind `name`."""
        return Durations(self.arrays[0].shape[1], self, self.names.index(name))


class Durations:
    """
    Durations of one kind (period, compute time, ...), in microseconds.

    A row `kind` of a `DurationTable`'s arrays (`table` None: a table of its own).
    """

    def __init__(self, window_capacity, table=None, kind=0):
        table = DurationTable(('alone',), window_capacity) if table is None else table
        self.kind = kind
        self.arrays = table.arrays
        self._add = _add_duration()             # loaded now, not at the first sample
        windows, self._counts, self._largest, histograms = table.arrays
        self.window, self.histogram = windows[kind], histograms[kind]

    def add(self, us):
        """Record one duration (us); beyond the window's capacity it counts for the run only."""
        self._add(*self.arrays, self.kind, float(us))

    def window_stats(self):
        """Return ``(p50, p99, max)`` of the current window (NaN when empty) and reset it."""
        counts = self._counts[self.kind]
        head, tail, capacity = int(counts[HEAD]), int(counts[TAIL]), self.window.size
        if head == tail:
            return float('nan'), float('nan'), float('nan')
        samples = self.window[np.arange(tail, head) % capacity]
        counts[TAIL] = head
        p50, p99 = np.percentile(samples, (50.0, 99.0))
        return float(p50), float(p99), float(samples.max())

    @property
    def count(self):
        """Return the number of samples in the current window."""
        counts = self._counts[self.kind]
        return int(counts[HEAD] - counts[TAIL])

    @property
    def total(self):
        """Return the number of samples of the run."""
        return int(self._counts[self.kind, TOTAL])

    @property
    def largest(self):
        """Return the run's largest sample (us; 0 before any)."""
        return float(self._largest[self.kind])

    def run_percentile(self, fraction):
        """Return the run's `fraction` quantile (us, within 0.5 %); NaN before any sample."""
        total = self.total
        if total == 0:
            return float('nan')
        index = int(np.searchsorted(np.cumsum(self.histogram), fraction * total))
        if index >= _BINS:                  # beyond the span: only the largest is known
            return self.largest
        return min(BIN_RATIO ** (index + 0.5), self.largest) if index else 1.0


_add_duration = cached_entry_point(add_duration, *DurationTable(('example',), 1).arrays, 0, 1.0)
