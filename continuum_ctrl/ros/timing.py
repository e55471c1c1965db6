"""
Loop timing statistics for /diagnostics: per-window samples and whole-run histograms.

Durations are recorded in microseconds. The window (the time since the last report) keeps its
samples in a preallocated array; the whole run keeps a histogram with 1 us bins, so run
percentiles are exact to 1 us at O(1) cost per sample and constant memory.
"""

import numpy as np

#: longest duration the run histogram resolves; longer ones land in the last bin, us
HISTOGRAM_SPAN_US = 200_000


class Durations:
    """Durations of one kind (period, compute time, ...), in microseconds."""

    def __init__(self, window_capacity):
        self.window = np.zeros(window_capacity)
        self.count = 0
        self.histogram = np.zeros(HISTOGRAM_SPAN_US + 1, dtype=np.int64)
        self.total = 0
        self.largest = 0.0

    def add(self, us):
        """Record one duration (us)."""
        if self.count < len(self.window):
            self.window[self.count] = us
            self.count += 1
        self.histogram[min(int(us), HISTOGRAM_SPAN_US)] += 1
        self.total += 1
        self.largest = max(self.largest, us)

    def window_stats(self):
        """Return ``(p50, p99, max)`` of the current window (NaN when empty) and reset it."""
        if self.count == 0:
            return float('nan'), float('nan'), float('nan')
        samples = self.window[:self.count]
        p50, p99 = np.percentile(samples, (50.0, 99.0))
        largest = float(samples.max())
        self.count = 0
        return float(p50), float(p99), largest

    def run_percentile(self, fraction):
        """Return the run's `fraction` quantile (us, 1 us resolution); NaN before any sample."""
        if self.total == 0:
            return float('nan')
        return float(np.searchsorted(np.cumsum(self.histogram), fraction * self.total))

    def count_above(self, us):
        """Return how many run samples exceeded `us`."""
        return int(self.histogram[int(us) + 1:].sum())
