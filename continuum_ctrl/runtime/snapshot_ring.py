"""
What the loop produced (the ``~/state`` rows), from the loop thread to the publishing thread.

    row = ring.slot(); row[:] = ...; ring.commit(t, label)     # loop thread
    for t, label, row in ring.drain(): ...                     # publishing thread
"""

import numpy as np


class SnapshotRing:
    """
    Rows of float64, each with a time and a label, from one writer thread to one reader.

    The loop thread fills a row in place (``row = ring.slot()``, None when the ring is full:
    that snapshot is dropped) and commits it with ``ring.commit(t, label)``; the executor
    thread takes every committed row with `drain`. No locks: the writer only advances `head`,
    the reader only `tail`, and a row is written only while the reader cannot see it.
    """

    def __init__(self, capacity, width):
        self.rows = np.zeros((capacity, width))
        self.times = [0.0] * capacity
        self.labels = [''] * capacity
        self.head = 0
        self.tail = 0
        self.dropped = 0

    def slot(self):
        """Writer: return the next row to fill, or None when the reader is a whole ring behind."""
        capacity = len(self.times)
        if self.head - self.tail >= capacity:
            self.dropped += 1
            return None
        return self.rows[self.head % capacity]

    def commit(self, t, label):
        """Writer: publish the row from `slot` with its time `t` and `label`."""
        k = self.head % len(self.times)
        self.times[k] = t
        self.labels[k] = label
        self.head += 1

    def drain(self):
        """Reader: yield ``(t, label, row)`` for every committed row, oldest first."""
        head, capacity = self.head, len(self.times)
        for n in range(self.tail, head):
            k = n % capacity
            yield self.times[k], self.labels[k], self.rows[k]
        self.tail = head
