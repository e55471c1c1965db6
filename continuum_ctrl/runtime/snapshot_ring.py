"""
What the loop produced (the ``~/state`` rows), from the loop thread to the publishing thread.

    ring = SnapshotRing(capacity, width, ('active', 'stale'))
    keep_row(*ring.arrays, values, t, label)                  # loop thread: label an index
    for t, label, row in ring.drain(): ...                     # publishing thread
"""

import numpy as np

from continuum_ctrl.numerics.jit import compiled

#: entries of a ring's `counts`: rows committed (the writer's), rows taken (the reader's),
#: rows dropped because the reader was a whole ring behind
HEAD, TAIL, DROPPED = 0, 1, 2


@compiled()
def keep_row(rows, times, labels, counts, values, t, label):
    """
    Writer: copy `values` into the next row of the ring, with its time `t` and `label`.

    When the reader is a whole ring behind, the row is dropped (counted in DROPPED). It holds
    the GIL: the reader sees a row only once HEAD has moved past it.
    """
    head = counts[HEAD]
    capacity = rows.shape[0]
    if head - counts[TAIL] >= capacity:
        counts[DROPPED] += 1
        return
    k = head % capacity
    for i in range(values.shape[0]):
        rows[k, i] = values[i]
    times[k] = t
    labels[k] = label
    counts[HEAD] = head + 1


class SnapshotRing:
    """
    Rows of float64, each with a time and a label, from one writer thread to one reader.

    The loop thread writes a row with `keep_row` (the label an index into `names`); the
    executor thread takes every row written with `drain`. No locks: the writer only advances
    HEAD, the reader only TAIL, and a row is written only while the reader cannot see it.
    `arrays`: ``(rows, times, labels, counts)``, what `keep_row` takes.
    """

    def __init__(self, capacity, width, names):
        self.arrays = (np.zeros((capacity, width)), np.zeros(capacity),
                       np.zeros(capacity, dtype=np.int64), np.zeros(3, dtype=np.int64))
        self.names = tuple(names)

    @property
    def capacity(self):
        """Rows the ring holds before the writer drops them."""
        return len(self.arrays[1])

    @property
    def dropped(self):
        """Rows dropped because the reader was a whole ring behind."""
        return int(self.arrays[3][DROPPED])

    def drain(self):
        """Reader: yield ``(t, name, row)`` for every row written, oldest first."""
        rows, times, labels, counts = self.arrays
        head, capacity = int(counts[HEAD]), self.capacity
        for n in range(int(counts[TAIL]), head):
            k = n % capacity
            yield float(times[k]), self.names[labels[k]], rows[k]
        counts[TAIL] = head
