"""
Which references repeat, how often, and a key that names them (for learning from repetition).

    repeats = repetition(reference, longest)    # a Repetition, or None: it does not repeat

A `Sinusoid` or `Multisine` repeats with the common period of its joints' frequencies: the
smallest T with every ``f T`` a whole number (frequencies read as fractions within 1e-9 Hz).
It is learnt per period only where T <= `longest` (``ilc.longest_period``, default 10 s): a
multisine over its default band (9 joints x 4 components spread evenly over 0.2-3 Hz: a step
of 0.08 Hz, every frequency a multiple of 0.04 Hz) repeats only every 25 s and is not
learnt; one whose lowest frequency and step are multiples of 0.1 Hz or more (10 s) is.
`Waypoints` (a trajectory or a planned tip path) repeat as a trial: sent again with the same
points and times, after the measured start the loop prepends (control/reference_manager.py).
Their times count from the first point sent, and so does the trial (`start`): a stamped
message reaches the loop a little later each time (``~/joint_trajectory``'s times are the
stamp's, ros/conversion.py), which moves its points on the loop's clock but not against one
another; the lead-in from the measured start to the first point, as long as that delay
leaves it, is not learnt. A single point sent (a move) is not a trial.
A `tip_circle` (a `TaskReference` on a `TipCircle`, reached by a move from the measured tip:
control/task_space.py) repeats with its turn once its own ramp is over: on its own clock,
which starts after the move (`start`), its angle is ``2 pi f (s - ramp / 2)`` from ``s =
ramp`` on (`settle`), whatever the move's length. Anything else (a hold, a single move, another
tip path) does not repeat.
The `key` is a hash of the reference's kind and parameters, so a learnt table is kept only for
the reference it was learnt on (`ilc.file`).
"""

from dataclasses import dataclass
from fractions import Fraction
import hashlib
import math
from typing import Optional

import numpy as np

from continuum_ctrl.control.references import Multisine, Sinusoid, Waypoints
from continuum_ctrl.control.task_space import ChainedPath, TipCircle

#: frequencies (Hz) are read as fractions with denominators up to this
RESOLUTION = 10 ** 9


@dataclass(frozen=True)
class Repetition:
    """
    A repeating reference: `period` (s), `periodic` (False: a trial) and its `key`.

    `start`: when its own clock starts (s after the reference's); `settle`: how long after that
    it repeats (a tip circle's ramp, s).
    """

    period: float
    periodic: bool
    key: str
    start: float = 0.0
    settle: float = 0.0


def common_period(frequencies, longest: float) -> Optional[float]:
    """
    Return the common period (s) of `frequencies` (Hz, >= 0; 0: constant), or None.

    None where no frequency is positive or the period exceeds `longest` s.
    """
    positive = [Fraction(float(f)).limit_denominator(RESOLUTION)
                for f in np.ravel(frequencies) if f > 0.0]
    if not positive:
        return None
    numerator = math.gcd(*(f.numerator for f in positive))
    denominator = math.lcm(*(f.denominator for f in positive))
    period = denominator / numerator          # 1 / gcd of the fractions
    return period if period <= longest * (1.0 + 1e-12) else None


def _key(kind, *arrays):
    digest = hashlib.sha1(kind.encode())
    for array in arrays:
        digest.update(np.round(np.asarray(array, dtype=float), 12).tobytes())
    return digest.hexdigest()[:16]


def repetition(reference, longest: float) -> Optional[Repetition]:
    """Return how `reference` (a `Reference`) repeats, or None (see the module)."""
    if isinstance(reference, (Sinusoid, Multisine)):
        frequencies = reference.omega / (2.0 * np.pi)
        if isinstance(reference, Sinusoid):
            frequencies = frequencies[reference.amplitude != 0.0]
            parts = (reference.center, reference.amplitude, reference.omega, reference.phase)
        else:
            parts = (reference.center, reference.omega, reference.phase, reference.weight)
        period = common_period(frequencies, longest)
        if period is None:
            return None
        return Repetition(period, True, _key(type(reference).__name__, *parts))
    path = getattr(reference, 'path', None)
    start, circle = ((path.switch, path.second) if isinstance(path, ChainedPath)
                     else (0.0, path))
    if isinstance(circle, TipCircle) and circle.omega > 0.0:
        period = 2.0 * np.pi / circle.omega
        if period > longest * (1.0 + 1e-12):
            return None
        return Repetition(period, True, _key('TipCircle', circle.center, circle.u, circle.v,
                                             [circle.radius, circle.omega, circle.ramp]),
                          start, circle.ramp)
    if isinstance(reference, Waypoints) and reference.times.size > 2:
        # the first point is the measured start the loop prepends: not part of the task; the
        # trial's clock starts at the first point sent, on the sender's clock (the stamp)
        _, coefficients = reference.pieces()
        points = np.vstack((coefficients[1:, 0, :], reference.sample(reference.end_time)[0]))
        first = float(reference.times[1] - reference.times[0])
        sent = np.round(reference.times[1:] - reference.times[1], 9)    # the message's ns
        return Repetition(float(sent[-1]), False, _key('Waypoints', sent, points), first)
    return None
