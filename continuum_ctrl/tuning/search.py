"""
The continuous search for gains: a family by bandwidth and damping, pushed to its margins.

    start, w0 = Family.of(gains)          # the file's gains: w, zeta and the ki / kp ratio
    design = search(setup, errors, requirement, start, w0)   # Design: gains, rows, missed

The family, one value for every joint: ``kp = w^2`` (1/s^2), ``kd = 2 zeta w`` (1/s),
``ki = ratio kp`` (N/(m s)); `w` (rad/s) is the natural frequency of the law's error dynamics
``e'' + kd e' + kp e = 0``, `zeta` their damping; kd at most KD_MAX. The velocity filter
stays the start's. What is searched is the family's `Ranges`: PMA (these) or RIGID (a rigid
arm's, its integral ``gains.ki_inertial`` within kp kd / 4, every case exact).

On a working set of cases (pose, plant error; the worst of the start's survey), from the
loci (tuning.proposal.SEARCH_POINTS):

1. `w` is scanned log-spaced over W_RANGE at the start's damping and ratio;
2. if some `w` meets the requirement, the largest is pushed to the edge by bisection in
   log w towards the next one (the bandwidth grows with w); else the `w` of the best score
   is refined by SciPy's bounded `minimize_scalar`;
3. the damping, then the ratio, are chosen for the largest score at that `w` (bounded
   `minimize_scalar`), and step 2 runs again from there;
4. where the requirement is met, the ratio is raised as far as it stays met (bisection in
   log ratio): the integral sets most of the bandwidth (at 60 ms valves, kp 144, kd 34,
   the ratio from 30 to 67 moved it from 0.28 to 0.50 Hz for 0.01 dB of gain margin).

The result is surveyed on every case; a worst case outside the working set joins it and the
search runs again (at most ROUNDS times). The Design always holds the best gains found:
meeting the requirement with the largest bandwidth. When no gains meet it, the largest
margins over their requirement are found first (the plant errors that no gains hold stable
are dropped, not the nominal arm: `Design.dropped`); the largest margins alone would buy
little margin with much bandwidth (at 60 ms valves the nominal gain margin grows from 1.8 to
2.2 dB as kp falls from 300 to 64 1/s^2, the bandwidth from 0.7 to 0.13 Hz), so the
requirement is then scaled to REACH of what was reached and the largest bandwidth that keeps
it is searched (`Design.missed` says which margins it misses).
"""

from dataclasses import dataclass, replace
import math

from typing import Tuple

import numpy as np
from scipy.optimize import minimize_scalar

from continuum_ctrl.control.settings import INERTIAL_RANGE
from continuum_ctrl.tuning.proposal import (assess, Design, exactly, index, SEARCH_POINTS,
                                            survey, uniform, WORKING_SET)

#: rad/s: the natural frequencies searched (kp 9 to 676 1/s^2). The model lacks the arm's own
#: modes (the MuJoCo disc stack's near 25 Hz): at 60 ms valves the model's margins kept
#: growing up to kp 2400, kd 137, which track the builtin arm within 0.09 mm and lose the
#: disc stack (3.5-10 mm RMS, in process)
W_RANGE = (3.0, 26.0)
#: 1/s: the largest kd searched, the shipped file's. The model lacks the disc stack's modes
#: near 25 Hz that kd excites: kd 74 (kp 676) behind 60 ms valves tracked the builtin arm
#: within 0.15 mm and lost the MuJoCo stack (3-7 mm RMS, in process); docs/tuning.md
KD_MAX = 40.0
#: the damping ratios searched (kd at most KD_MAX): above 1.5 the margins grow on (kd acts
#: before the valves' lag) but so does the sensor noise in the commands (at 100 ms valves,
#: zeta 2.3 tracked within 0.11 mm at 3.3 MPa/s of command variation, in process)
DAMPING_RANGE = (0.5, 1.5)
#: N s/m: the integral's ki / kp ratios searched (the shipped gains have 60; at 100 ms valves
#: a ratio of 6 kept margin but let the arm lag the reference by 0.25-0.39 mm RMS)
RATIO_RANGE = (20.0, 150.0)
#: values of w in the first scan
SCAN = 7
#: halvings of the log-w bracket at the edge of the requirement
HALVINGS = 4
#: evaluations of each bounded scalar search
ITERATIONS = 6
#: rounds of the search, each with the last survey's worst case added to the working set
ROUNDS = 2
#: the share of the margins reached (over their requirement) kept when the requirement is
#: out of reach: the bandwidth is pushed up to there
REACH = 0.8


@dataclass(frozen=True)
class Ranges:
    """
    What the family searches: `w` (rad/s), `kd_max` (1/s), `damping`, `ratio` ki / kp.

    `inertial`: the integral in acceleration units (``gains.ki_inertial``, 1/s^3, the ratio
    in 1/s), capped at control.settings.INERTIAL_RANGE kp kd, its documented range.
    `exact`: every case in the working set, assessed with exact margins (a rigid arm's box
    is small and its loop about 5n states; its integral makes the loop conditionally
    stable, ``ki < kp kd / a`` for an arm `a` times heavier, a low gain margin the loci do
    not give: searched on the loci, the Panda's ki_inertial went to 3.3 dB of it).
    """

    w: Tuple[float, float] = W_RANGE
    kd_max: float = KD_MAX
    damping: Tuple[float, float] = DAMPING_RANGE
    ratio: Tuple[float, float] = RATIO_RANGE
    inertial: bool = False
    exact: bool = False


#: a PMA arm's ranges (the constants above)
PMA = Ranges()
#: a rigid arm's: kp 25 to 900 1/s^2 (kp 900 on the Panda held a 3 kg payload to 3-4 mrad in
#: process but its commands chattered through the nodes, docs/rigid-payload.md), kd free
#: (critical damping at kp 900 is 60), damping 0.7-1.5, ki_inertial / kp 0.5-30 1/s (the
#: shipped Panda file's 5), within kp kd / 4
RIGID = Ranges((5.0, 30.0), math.inf, (0.7, 1.5), (0.5, 30.0), True, True)


@dataclass(frozen=True)
class Family:
    """
    The gains' shape: `damping` (zeta), `ratio` ki / kp (N s/m), `velocity_filter` (s).

    `ranges`: what is searched (PMA or RIGID).
    """

    damping: float
    ratio: float
    velocity_filter: float
    ranges: Ranges = PMA

    @classmethod
    def of(cls, gains, ranges=PMA):
        """Return the Family of `gains` (their mean over joints) and its w (rad/s)."""
        w = math.sqrt(float(np.mean(gains.kp)))
        family = cls(float(np.mean(gains.kd)) / (2.0 * w),
                     float(np.mean(gains.ki)) / float(np.mean(gains.kp)),
                     gains.velocity_filter, ranges)
        return family, w

    def gains(self, model, w):
        """Return the Gains of this family at natural frequency `w` (rad/s) (`Ranges`)."""
        ranges = self.ranges
        kp = w * w
        kd = min(2.0 * self.damping * w, ranges.kd_max)
        ki = self.ratio * kp
        if ranges.inertial:
            ki = min(ki, INERTIAL_RANGE * kp * kd)
        return uniform(model, kp, kd, ki, self.velocity_filter, ranges.inertial)


def _clip(value, bounds):
    return min(max(value, bounds[0]), bounds[1])


class _Scores:
    """The working set's score and bandwidth of a family at w, each evaluated once."""

    def __init__(self, setup, errors, requirement, working):
        self.setup, self.errors, self.requirement = setup, errors, requirement
        self.working = working
        self.seen = {}

    def __call__(self, family, w):
        """Return ``(score, bandwidth Hz)``: the smallest over the working set."""
        key = (family, round(w, 9))
        if key not in self.seen:
            rows = assess(self.setup, family.gains(self.setup.model, w), self.errors,
                          self.requirement, family.ranges.exact, self.working, SEARCH_POINTS)
            self.seen[key] = (self.requirement.score(rows[0].margins),
                              min(row.margins.bandwidth for row in rows))
        return self.seen[key]

    def met(self, family, w):
        """Return whether the family at `w` meets the requirement on the working set."""
        return self(family, w)[0] >= 1.0


def _edge(scores, family, low, high):
    """Return the largest w in [low, high] that meets the requirement (low does)."""
    for _ in range(HALVINGS):
        middle = math.sqrt(low * high)
        low, high = (middle, high) if scores.met(family, middle) else (low, middle)
    return low


def _peak(scores, family, low, high):
    """Return the w in [low, high] of the largest score (bounded search in log w)."""
    found = minimize_scalar(lambda x: -scores(family, math.exp(x))[0],
                            bounds=(math.log(low), math.log(high)), method='bounded',
                            options={'maxiter': ITERATIONS, 'xatol': 0.01})
    return max((math.exp(found.x), low, high), key=lambda w: scores(family, w)[0])


def _shape(scores, family, w):
    """Return the family of the best score at `w`: its damping, then its ratio, chosen."""
    for name in ('damping', 'ratio'):
        def score(x, name=name):
            return -scores(replace(family, **{name: math.exp(x)}), w)[0]
        found = minimize_scalar(score, bounds=tuple(math.log(b) for b in
                                                    getattr(family.ranges, name)),
                                method='bounded',
                                options={'maxiter': ITERATIONS, 'xatol': 0.02})
        candidate = replace(family, **{name: math.exp(found.x)})
        if scores(candidate, w)[0] > scores(family, w)[0]:
            family = candidate
    return family


def _along(scores, family, grid):
    """Return the best w of `family` over `grid` (sorted): the edge if some meet, else peak."""
    met = [i for i, w in enumerate(grid) if scores.met(family, w)]
    if met:
        i = met[-1]
        return grid[i] if i + 1 == len(grid) else _edge(scores, family, grid[i], grid[i + 1])
    i = int(np.argmax([scores(family, w)[0] for w in grid]))
    return _peak(scores, family, grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)])


def _floor(setup, errors, requirement, family):
    """Return the least w (rad/s) of W_RANGE whose nominal arm reaches the least bandwidth."""
    scores = _Scores(setup, errors, requirement, [(0, 0)])
    low, high = family.ranges.w
    if not requirement.bandwidth or scores(family, low)[1] >= requirement.bandwidth:
        return low
    if scores(family, high)[1] < requirement.bandwidth:
        return high
    for _ in range(HALVINGS + 2):
        middle = math.sqrt(low * high)
        low, high = ((low, middle) if scores(family, middle)[1] >= requirement.bandwidth
                     else (middle, high))
    return high


def _more_integral(scores, family, w):
    """Return `family` with the largest ratio of its range that still meets (it does)."""
    low, high = family.ratio, family.ranges.ratio[1]
    if scores.met(replace(family, ratio=high), w):
        return replace(family, ratio=high)
    for _ in range(HALVINGS):
        middle = math.sqrt(low * high)
        low, high = ((middle, high) if scores.met(replace(family, ratio=middle), w)
                     else (low, middle))
    return replace(family, ratio=low)


def _search_on(scores, start, w0, least):
    """Return ``(family, w)``: the best on the scores' working set (module doc, 1-3)."""
    ranges = start.ranges
    grid = list(np.geomspace(least, ranges.w[1], SCAN))
    family = replace(start, damping=_clip(start.damping, ranges.damping),
                     ratio=_clip(start.ratio, ranges.ratio))
    w = _along(scores, family, grid)
    family = _shape(scores, family, w)
    step = grid[1] / grid[0]
    w = _along(scores, family, [x for x in (w / step, w, w * step, w * step * step)
                                if ranges.w[0] <= x <= ranges.w[1]] or [w])
    if scores.met(family, w):               # the integral sets the bandwidth: as much as met
        family = _more_integral(scores, family, w)

    def merit(candidate):
        score, bandwidth = scores(*candidate)
        return (score >= 1.0, bandwidth if score >= 1.0 else score)
    return max([(family, w), (start, w0)], key=merit)


def every_case(setup, gains, errors, requirement, ranges):
    """Return the rows of `gains`, worst first: `survey`'s, or with `ranges.exact` all exact."""
    if ranges.exact:
        return assess(setup, gains, errors, requirement)
    return survey(setup, gains, errors, requirement, exact=False)


def _rounds(setup, errors, requirement, start, w0, rows=None):
    """Return the Design of the search on growing working sets (module doc)."""
    rows = rows or every_case(setup, start.gains(setup.model, w0), errors, requirement,
                              start.ranges)
    # the nominal arm always: the search must not trade it for the box's corners
    working = sorted(set(index(rows[:WORKING_SET], errors)) | {(0, 0)})
    if start.ranges.exact:
        working = [(p, e) for p in range(len(setup.poses)) for e in range(len(errors))]
    least = _floor(setup, errors, requirement, start)
    for _ in range(ROUNDS):
        family, w = _search_on(_Scores(setup, errors, requirement, working), start, w0, least)
        gains = family.gains(setup.model, w)
        rows = every_case(setup, gains, errors, requirement, start.ranges)
        worst = index(rows[:1], errors)[0]
        if requirement.shortfall(rows[0].margins) >= 1.0 or worst in working:
            break
        working.append(worst)
    return Design(gains, rows, requirement)


def search(setup, errors, requirement, start, w0, rows=None):
    """
    Return the Design of the best gains of the family (module doc); `errors[0]` nominal.

    `start` (Family) at `w0` (rad/s) also stays a candidate; `rows`: its survey, if made.
    When the requirement is out of reach, the errors the best gains leave unstable are
    dropped (not the nominal arm), the requirement is scaled to REACH of the margins reached
    on the rest, and the largest bandwidth that keeps them is searched.
    """
    design = _rounds(setup, errors, requirement, start, w0, rows)
    if design.met:
        return replace(design, rows=exactly(setup, design.gains, errors, requirement,
                                            design.rows))
    unstable = {row.error for row in design.rows if not row.margins.stable}
    held = [e for e in errors if e not in unstable]
    rows = [row for row in design.rows if row.error not in unstable]
    reach = requirement.shortfall(rows[0].margins) if rows else -math.inf
    if errors[0] in unstable or reach <= 0.0:
        return replace(design, rows=exactly(setup, design.gains, errors, requirement,
                                            design.rows))
    relaxed = requirement.scaled(REACH * reach)
    fast = _rounds(setup, held, relaxed, *Family.of(design.gains, start.ranges), rows)
    gains = design.gains
    if fast.stable and relaxed.shortfall(fast.rows[0].margins) >= 1.0:
        gains, rows = fast.gains, fast.rows
    rows = sorted(rows, key=lambda row: requirement.score(row.margins))
    return Design(gains, exactly(setup, gains, held, requirement, rows), requirement,
                  tuple(e for e in errors if e in unstable))
