"""
Gains with margins over a box of plant errors: the loop assessed per pose and corner, a search.

    errors = corners(0.2, 0.25, 0.1, 0.2)         # PlantError: nominal, then the box's corners
    rows = assess(setup, gains, errors)            # Row per pose and error, worst first
    best, rows = propose(setup, grid, errors, requirement)

A Setup holds what does not change with the gains: the model, the output, the controller's
valve compensation, the period, the poses (Pose) and the loop's options. The search takes
every combination of the `grid` (kp, kd, ki, velocity_filter; one value for every joint),
keeps those whose margins meet the Requirement at every pose and error, and returns the one
with the largest worst-case bandwidth. It checks each candidate on a working set of cases
first (the nominal arm and the worst cases of the first candidate), then the winner on all,
and adds the case it fails to the working set until one passes everywhere: the margins from
the loci there, the exact gain margin (bisection) in the final assessment.
"""

from dataclasses import dataclass
import itertools
import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

from continuum_ctrl.tuning.linear_loop import (Controller, DiscretePlant, Gains, LoopOptions,
                                               LoopSystem, PlantError, Pose)
from continuum_ctrl.tuning.margins import loop_margins, Margins

#: cases of the first candidate that start the search's working set (beside the nominal arm)
WORKING_SET = 3


@dataclass(frozen=True)
class Requirement:
    """The margins asked for: gain (dB), phase (deg), delay (s)."""

    gain_db: float = 6.0
    phase: float = 25.0
    delay: float = 0.004

    def shortfall(self, margins):
        """Return the margins over their requirement, the smallest ratio (< 1: not met)."""
        if not margins.stable:
            return -math.inf
        low = (-20.0 * math.log10(margins.gain_low) if margins.gain_low > 0.0 else math.inf)
        return min(margins.gain_db / self.gain_db, low / self.gain_db,
                   margins.phase / self.phase, margins.delay / self.delay)


@dataclass(frozen=True)
class Setup:
    """
    What the gains do not change: model, actuation, compensation (s, s), period (s), poses.

    `plants`: a DiscretePlant per pose in place of the model's (tuning.engine_plant);
    `observer`: the loop's Observer (control/observer.py), with the `options`' velocity
    'kalman'.
    """

    model: object
    actuation: object
    compensation: Tuple[float, float]
    period: float
    poses: Sequence[Tuple[float, Pose]]
    options: LoopOptions
    passive: str = 'reference'
    plants: Optional[Sequence[DiscretePlant]] = None
    observer: Optional[object] = None

    def controllers(self, gains):
        """Return the Controller linearized at each pose for `gains`."""
        age = self.options.measurement_delay * self.period if self.options.stamped else 0.0
        return [Controller(self.model, self.actuation, gains, self.compensation, self.period,
                           age, self.passive, self.observer).at(pose)
                for _, pose in self.poses]


@dataclass(frozen=True)
class Row:
    """The margins at pose `pose` (index; `time` s into the reference) under plant `error`."""

    pose: int
    time: float
    error: PlantError
    margins: Margins


def corners(stiffness, damping, area, mass):
    """Return the nominal PlantError, then the corners of the box (each scale 1 -+ its share)."""
    shares = (stiffness, damping, area, mass)
    ranges = [sorted({1.0 - s, 1.0 + s}) for s in shares]
    errors = [PlantError()]
    errors += [PlantError(*scales) for scales in itertools.product(*ranges)
               if scales != (1.0, 1.0, 1.0, 1.0)]
    return errors


def uniform(model, kp, kd, ki, velocity_filter):
    """Return Gains with one value for every joint of `model`."""
    n = model.n
    return Gains(np.full(n, float(kp)), np.full(n, float(kd)), np.full(n, float(ki)),
                 float(velocity_filter))


def assess(setup, gains, errors, requirement=Requirement(), exact=True,
           cases: Optional[Sequence[Tuple[int, int]]] = None) -> List[Row]:
    """
    Return a Row per pose and error (or per `cases`: (pose, error) indices), worst first.

    `exact` False: margins from the loci alone (loop_margins).
    """
    controllers = setup.controllers(gains)
    wanted = (cases if cases is not None
              else [(p, e) for p in range(len(setup.poses)) for e in range(len(errors))])
    rows = []
    for p, e in wanted:
        plant = setup.plants[p] if setup.plants else None
        system = LoopSystem.build(setup.poses[p][1], controllers[p], errors[e], setup.options,
                                  plant)
        rows.append(Row(p, setup.poses[p][0], errors[e], loop_margins(system, exact)))
    rows.sort(key=lambda row: requirement.shortfall(row.margins))
    return rows


def _index(rows, errors):
    """Return the (pose, error) indices of `rows`."""
    return [(row.pose, errors.index(row.error)) for row in rows]


def propose(setup, grid, errors, requirement=Requirement()):
    """
    Return ``(gains, rows)``: the grid's gains meeting `requirement` everywhere, exact rows.

    `grid`: (kp values, kd values, ki values, velocity_filter values). The gains have the
    largest worst-case bandwidth; ``(None, [])`` when none meets the requirement.
    """
    candidates = [uniform(setup.model, *values) for values in itertools.product(*grid)]
    first = assess(setup, candidates[0], errors, requirement, exact=False)
    working = sorted(set([(p, 0) for p in range(len(setup.poses))]
                         + _index(first[:WORKING_SET], errors)))
    while True:
        best, best_bandwidth = None, -math.inf
        for gains in candidates:
            rows = assess(setup, gains, errors, requirement, False, working)
            if requirement.shortfall(rows[0].margins) < 1.0:
                continue
            bandwidth = min(row.margins.bandwidth for row in rows)
            if bandwidth > best_bandwidth:
                best, best_bandwidth = gains, bandwidth
        if best is None:
            return None, []
        rows = assess(setup, best, errors, requirement, exact=False)
        if requirement.shortfall(rows[0].margins) >= 1.0:
            exact_rows = assess(setup, best, errors, requirement)
            if requirement.shortfall(exact_rows[0].margins) >= 1.0:
                return best, exact_rows
            rows = exact_rows
        worst = _index(rows[:1], errors)[0]
        if worst in working:                # the exact gain margin fails where the loci pass
            candidates = [g for g in candidates if g is not best]
        else:
            working.append(worst)
