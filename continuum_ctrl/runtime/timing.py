"""
Loop timing statistics for /diagnostics: per-window samples and whole-run histograms.

Durations are recorded in microseconds. The window (the time since the last report) keeps its
samples in a preallocated ring, so window percentiles are exact, also when one thread (the
loop) records and another (the executor's diagnostics) reports: the recorder only advances
`head`, the reporter only `tail`, so neither loses or repeats a sample of the other. The
whole run keeps a histogram with logarithmic bins, each 1 % wide (HdrHistogram-like), so run
percentiles are within 0.5 % at O(1) cost per sample, constant memory and about 1700 bins per
report. Both are Python lists: `add` runs on the loop thread four times a tick, and on lists
it takes about two thirds of its time on NumPy arrays; the reports (once a second) make arrays
of them.
"""

import math

import numpy as np

#: relative width of a run-histogram bin
BIN_RATIO = 1.01
#: longest duration the run histogram resolves (longer ones land in the last bin), us
HISTOGRAM_SPAN_US = 1e7
_LOG_RATIO = math.log(BIN_RATIO)
_BINS = int(math.log(HISTOGRAM_SPAN_US) / _LOG_RATIO) + 1


class Durations:
    """Durations of one kind (period, compute time, ...), in microseconds."""

    def __init__(self, window_capacity):
        self.window = [0.0] * window_capacity
        self.head = 0                       # samples recorded in windows (recorder's)
        self.tail = 0                       # samples reported (reporter's)
        self.histogram = [0] * (_BINS + 1)
        self.total = 0
        self.largest = 0.0

    def add(self, us):
        """Record one duration (us); beyond the window's capacity it counts for the run only."""
        head, capacity = self.head, len(self.window)
        if head - self.tail < capacity:
            self.window[head % capacity] = us
            self.head = head + 1
        index = int(math.log(us) / _LOG_RATIO) if us > 1.0 else 0
        self.histogram[min(index, _BINS)] += 1
        self.total += 1
        if us > self.largest:
            self.largest = us

    def window_stats(self):
        """Return ``(p50, p99, max)`` of the current window (NaN when empty) and reset it."""
        head, tail, capacity = self.head, self.tail, len(self.window)
        if head == tail:
            return float('nan'), float('nan'), float('nan')
        samples = np.take(self.window, np.arange(tail, head) % capacity)
        self.tail = head
        p50, p99 = np.percentile(samples, (50.0, 99.0))
        return float(p50), float(p99), float(samples.max())

    @property
    def count(self):
        """Return the number of samples in the current window."""
        return self.head - self.tail

    def run_percentile(self, fraction):
        """Return the run's `fraction` quantile (us, within 0.5 %); NaN before any sample."""
        if self.total == 0:
            return float('nan')
        index = int(np.searchsorted(np.cumsum(self.histogram), fraction * self.total))
        if index >= _BINS:                  # beyond the span: only the largest is known
            return self.largest
        return min(BIN_RATIO ** (index + 0.5), self.largest) if index else 1.0
