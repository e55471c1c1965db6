"""
Gains with margins over a box of plant errors: the loop assessed per pose and corner.

    errors = corners(0.2, 0.25, 0.1, 0.2)         # PlantError: nominal, then the box's corners
    rows = assess(setup, gains, errors)            # Row per pose and error, worst first
    rows = survey(setup, gains, errors)            # the same, fast: exact only where it is worst
    design = best_of(setup, candidates, errors, requirement)   # Design of the best candidate

A Setup holds what does not change with the gains: the model, the output, the controller's
valve compensation, the period, the poses (Pose), the loop's options, and the plants it has
discretized (per pose and error, kept). `best_of` takes explicit candidates (one value for
every joint; tuning.search searches a continuous family): it checks each on a working set of
cases first (the worst of the first candidate's survey), then the best on all, and adds the
case it fails to the working set until the best holds everywhere. The best meets the
Requirement at every pose and error with the largest worst-case bandwidth or, when none
meets it, has the largest margins over their requirement (`Design.missed` names what it
misses).
"""

from dataclasses import dataclass, field
import itertools
import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

from continuum_ctrl.tuning.linear_loop import (BASIS, blended, continuous_plant, Controller,
                                               DiscretePlant, Gains, LoopOptions, LoopSystem,
                                               PlantError, Pose)
from continuum_ctrl.tuning.margins import Margins, POINTS
from continuum_ctrl.tuning.side_by_side import margins_of

#: cases of the first candidate's survey that start the search's working set
WORKING_SET = 4
#: frequency points of the loci in a search and a survey (tuning.margins.POINTS in `assess`)
SEARCH_POINTS = 120
#: the rows a survey assesses exactly (the exact gain margin, all points): its worst
EXACT_ROWS = 3
#: the errors of the first pose a survey assesses at every other pose: its worst
WORST_ERRORS = 2


@dataclass(frozen=True)
class Requirement:
    """
    The margins asked for: gain (dB), phase (deg), delay (s); the least `bandwidth` (Hz).

    The bandwidth floor keeps a search from buying margin with gains too slow to track
    (0: none).
    """

    gain_db: float = 6.0
    phase: float = 25.0
    delay: float = 0.004
    bandwidth: float = 0.0

    def ratios(self, margins):
        """Return {margin: its value over its requirement} (< 1: not met)."""
        low = (-20.0 * math.log10(margins.gain_low) if margins.gain_low > 0.0 else math.inf)
        out = {'gain': margins.gain_db / self.gain_db, 'low gain': low / self.gain_db,
               'phase': margins.phase / self.phase, 'delay': margins.delay / self.delay}
        if self.bandwidth > 0.0:
            out['bandwidth'] = margins.bandwidth / self.bandwidth
        return out

    def shortfall(self, margins):
        """Return the margins over their requirement, the smallest ratio (< 1: not met)."""
        if not margins.stable:
            return -math.inf
        return min(self.ratios(margins).values())

    def scaled(self, factor):
        """Return this requirement with every margin and the bandwidth times `factor`."""
        return Requirement(self.gain_db * factor, self.phase * factor, self.delay * factor,
                           self.bandwidth * factor)

    def score(self, margins):
        """Return `shortfall`, finite: an unstable loop scores minus its spectral radius."""
        return self.shortfall(margins) if margins.stable else -margins.radius

    def missed(self, margins):
        """Return the names of the margins below their requirement ('unstable': all)."""
        if not margins.stable:
            return ['unstable']
        return [name for name, ratio in self.ratios(margins).items() if ratio < 1.0]


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
    #: (frame, offset m) where a PlantError's `payload` hangs (rigid arms), or None
    payload: Optional[Tuple[str, Tuple[float, float, float]]] = None
    #: what does not change with the gains, kept: the model's plants discretized, by (pose,
    #: PlantError), and the Controllers that `controllers` blends, by ('basis', pose)
    discretized: dict = field(default_factory=dict, compare=False, repr=False)

    def controllers(self, gains, poses=None):
        """
        Return {pose index: the Controller linearized there} for `gains` (`poses`: all).

        Uniform gains (one value for every joint, as the search's) are blended from three
        linearizations per pose, kept (linear_loop.blended); others are linearized anew.
        """
        wanted = range(len(self.poses)) if poses is None else poses
        uniform_gains = all(np.ptp(np.broadcast_to(k, (self.model.n,))) == 0.0
                            for k in (gains.kp, gains.kd))
        if not uniform_gains:
            return {p: self._controller(gains, p) for p in wanted}
        out = {}
        for p in wanted:
            if ('basis', p) not in self.discretized:
                self.discretized['basis', p] = [
                    self._controller(uniform(self.model, kp, kd, 0.0, gains.velocity_filter),
                                     p) for kp, kd in BASIS]
            out[p] = blended(*self.discretized['basis', p], gains)
        return out

    def _controller(self, gains, p):
        """Return the Controller linearized at pose `p` for `gains`."""
        age = self.options.measurement_delay * self.period if self.options.stamped else 0.0
        return Controller(self.model, self.actuation, gains, self.compensation, self.period,
                          age, self.passive, self.observer).at(self.poses[p][1])

    def plant(self, p, error):
        """Return the DiscretePlant at pose `p` under `error` (the engine's: its own)."""
        if self.plants:
            return self.plants[p]
        if (p, error) not in self.discretized:
            pose = self.poses[p][1]
            if error.payload:           # the loaded arm linearized at the same sample
                pose = Pose.of(self.model.with_payload(self.payload[0], error.payload,
                                                       self.payload[1]), pose.sample)
            self.discretized[p, error] = continuous_plant(pose, error, self.options)
        return self.discretized[p, error]


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


def rigid_corners(mass, payload):
    """
    Return a rigid arm's nominal PlantError, then its box: mass 1 -+ `mass`, payload 0 or kg.

    The mass scales every link's mass and inertia alike (the simulator's
    ``mismatch.mass_scale``); the `payload` is a point mass at the Setup's frame, its inertia
    and gravity at each pose exact (Pinocchio), on the joints it rides on.
    """
    scales = sorted({1.0 - mass, 1.0 + mass})
    loads = sorted({0.0, payload})
    errors = [PlantError()]
    errors += [PlantError(mass=s, payload=p) for s in scales for p in loads
               if (s, p) != (1.0, 0.0)]
    return errors


def uniform(model, kp, kd, ki, velocity_filter, inertial=False):
    """Return Gains with one value for every joint of `model` (`inertial`: ki in 1/s^3)."""
    n = model.n
    return Gains(np.full(n, float(kp)), np.full(n, float(kd)), np.full(n, float(ki)),
                 float(velocity_filter), inertial)


def assess(setup, gains, errors, requirement=Requirement(), exact=True,
           cases: Optional[Sequence[Tuple[int, int]]] = None,
           points=POINTS) -> List[Row]:
    """
    Return a Row per pose and error (or per `cases`: (pose, error) indices), worst first.

    `exact` False: margins from the loci alone (loop_margins), at `points` frequencies.
    """
    wanted = (cases if cases is not None
              else [(p, e) for p in range(len(setup.poses)) for e in range(len(errors))])
    controllers = setup.controllers(gains, sorted({p for p, _ in wanted}))
    systems = [LoopSystem.build(setup.poses[p][1], controllers[p], errors[e], setup.options,
                                setup.plant(p, errors[e])) for p, e in wanted]
    rows = [Row(p, setup.poses[p][0], errors[e], margins) for (p, e), margins
            in zip(wanted, margins_of(systems, exact, points))]
    rows.sort(key=lambda row: requirement.score(row.margins))
    return rows


def survey(setup, gains, errors, requirement=Requirement(), exact=True):
    """
    Return rows like `assess`'s, fast: the worst cases found, those assessed exactly.

    From the loci at SEARCH_POINTS frequencies: every error at the first pose and the nominal
    arm at every pose, then the WORST_ERRORS worst errors at the other poses (the errors
    rank alike over a reference's poses: the arm's pose changes its margins by little, the
    errors by much). With `exact` the EXACT_ROWS worst are assessed again with the exact gain
    margin at POINTS frequencies, and the rows sorted again.
    """
    poses = range(len(setup.poses))
    first = [(0, e) for e in range(len(errors))] + [(p, 0) for p in poses[1:]]
    rows = assess(setup, gains, errors, requirement, False, first, SEARCH_POINTS)
    worst = [e for _, e in index(rows, errors) if e][:WORST_ERRORS]
    rows += assess(setup, gains, errors, requirement, False,
                   [(p, e) for p in poses[1:] for e in worst], SEARCH_POINTS)
    rows.sort(key=lambda row: requirement.score(row.margins))
    return exactly(setup, gains, errors, requirement, rows) if exact else rows


def exactly(setup, gains, errors, requirement, rows):
    """Return `rows` of `gains` with the EXACT_ROWS worst assessed exactly, sorted again."""
    exact = assess(setup, gains, errors, requirement, cases=index(rows[:EXACT_ROWS], errors))
    return sorted(exact + rows[EXACT_ROWS:], key=lambda row: requirement.score(row.margins))


def index(rows, errors):
    """Return the (pose, error) indices of `rows`."""
    return [(row.pose, errors.index(row.error)) for row in rows]


@dataclass(frozen=True)
class Design:
    """
    Gains and their rows (worst first) against `requirement`: `met` everywhere or not.

    `dropped`: the plant errors no gains searched held stable, left out of `rows`.
    """

    gains: Gains
    rows: List[Row]
    requirement: Requirement
    dropped: Tuple[PlantError, ...] = ()

    @property
    def met(self):
        """Return whether the margins meet the requirement at every pose and error."""
        return self.requirement.shortfall(self.rows[0].margins) >= 1.0

    @property
    def stable(self):
        """Return whether the loop is stable at every pose and error."""
        return all(row.margins.stable for row in self.rows)

    @property
    def missed(self):
        """Return the margins the worst row misses (empty when met)."""
        return self.requirement.missed(self.rows[0].margins)


def best_of(setup, candidates, errors, requirement=Requirement(), rounds=4):
    """
    Return the Design of the best of `candidates` (Gains): see the module doc.

    Among those meeting `requirement` on the working set, the largest worst-case bandwidth;
    else the largest score. At most `rounds` cases are added to the working set.
    """
    rows = survey(setup, candidates[0], errors, requirement, exact=False)
    working = index(rows[:WORKING_SET], errors)
    for _ in range(rounds):
        def merit(gains):
            found = assess(setup, gains, errors, requirement, False, working, SEARCH_POINTS)
            score = requirement.score(found[0].margins)
            bandwidth = min(row.margins.bandwidth for row in found)
            return (score >= 1.0, bandwidth if score >= 1.0 else score)
        best = max(candidates, key=merit)
        rows = survey(setup, best, errors, requirement, exact=False)
        worst = index(rows[:1], errors)[0]
        if requirement.shortfall(rows[0].margins) >= 1.0 or worst in working:
            break
        working.append(worst)
    return Design(best, exactly(setup, best, errors, requirement, rows), requirement)
