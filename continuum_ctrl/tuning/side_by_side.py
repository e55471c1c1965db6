"""
The margins of many loops at once, side by side on the machine's cores.

    found = margins_of(systems, exact, points)      # [Margins], in the order of `systems`

A tuner's search assesses a handful of plant cases per candidate gain; each is a LAPACK
Schur form and a triangular solve per frequency, which SciPy runs holding the GIL (a thread
per case gained nothing), so the cases go to worker processes (`concurrent.futures`). They
are forked: a spawned worker imports the caller's main module again, which breaks a script
that calls the tuner without an ``if __name__ == '__main__'`` guard; a forked one only
computes (NumPy and SciPy) and exits. The pool starts at the first call that has more than
one case of at least SIDE_BY_SIDE states, one worker per core (at most WORKERS), and lives
as long as the process. Behind 76 + 38 ms valves (252 states a case) `tune` took 40 s alone
and 25 s on two cores. Where NumPy's BLAS runs threads (NumPy imported before this package,
without ``OPENBLAS_NUM_THREADS=1``: `continuum_ctrl.ONE_BLAS_THREAD`) the cases stay in this
process: each worker's threads spun against the others' (at 20 ms valves `tune` took 22 s in
one process and 45 s side by side).
"""

from concurrent.futures import ProcessPoolExecutor
import functools
import multiprocessing
import os

from continuum_ctrl import ONE_BLAS_THREAD
from continuum_ctrl.tuning.margins import loop_margins

#: the most workers started
WORKERS = 4
#: states below which a loop is assessed in this process (shipping it costs about what the
#: assessment does)
SIDE_BY_SIDE = 100


@functools.lru_cache(maxsize=None)
def pool():
    """Return the process's worker pool, or None on one core or with threads in the BLAS."""
    cores = len(os.sched_getaffinity(0))
    if cores < 2 or not ONE_BLAS_THREAD:
        return None
    return ProcessPoolExecutor(min(cores, WORKERS), multiprocessing.get_context('fork'))


def margins_of(systems, exact, points):
    """Return `loop_margins` of each of `systems` (LoopSystems), in their order."""
    workers = pool() if len(systems) > 1 and systems[0].A.shape[0] >= SIDE_BY_SIDE else None
    if workers is None:
        return [loop_margins(system, exact, points) for system in systems]
    count = len(systems)
    return list(workers.map(loop_margins, systems, [exact] * count, [points] * count))
