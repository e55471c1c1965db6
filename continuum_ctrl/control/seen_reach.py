"""
The lengths the arm was seen not to pass: bounds a task-space reference learns from its loop.

    seen = SeenReach(lower, upper)       # the joint limits (n,), m or rad
    seen.watch(t, dt, q, q_des, effort, low, high, largest)  # each active tick, after the effort
    seen.bound(nominal, bounds)          # the IK's bounds (2, n) within what was seen
    seen.bounded                         # joints bounded now (0..n)

The IK's bounds on PMA arms are the lengths the model's pressures hold (control/holding.py).
A real arm holds others: stiffer, sagging more under gravity, with a dead zone, a PMA may not
shorten to a length the model says it reaches vented. The IK then asks for it, the effort
sits at its bound, the error stays, and the tip misses by what the other joints would have
made up (through the nodes on the disc stack 20 % off: 1 run in 4 ended with a PMA 1.1 mm
above its reference at 0 kPa and the true tip 15.5 mm from its target, the others 0.5 mm).

So a joint whose effort has sat at its bound for SETTLE s while its error pushed beyond it
(effort at ``low`` with ``q > q_des``, or at ``high`` with ``q < q_des``: the integral's
anti-windup condition, control/integral.py) bounds the reference where it is, at the measured
``q``, and the IK moves the other joints to reach the tip instead. Only while the error is at
most `largest`: the loop passes the saturation guard's error (control/saturation.py), and 0
through its episodes, so that a push, which pins the effort far from the reference, bounds
nothing (a 20 N push on the MuJoCo arm holding a tip target pinned two PMAs 33 and 14 mm
long; bounded there, the arm kept a contorted pose for seconds after). A bound only tightens while
the joint stays pinned; once its effort is back inside its range by RELAX_MARGIN of it, the
bound relaxes at RELAX_SPEED of the joint's range per second, so a push or a load that passes
leaves no lasting bound, and a pose the arm reaches again is asked for again. A joint with an
unbounded effort is never pinned.

Shared by `watch` (the loop's thread, after the tick's effort) and `bound` (the reference's
sample, the same thread).
"""

import numpy as np

from continuum_ctrl.numerics.jit import cached_entry_point, compiled

#: s a joint's effort must stay pinned at its bound before the reference is bounded there
#: (the blend's and a fast move's transients pin for less)
SETTLE = 0.2
#: the share of its effort range a pinned joint's effort must regain before its bound relaxes
RELAX_MARGIN = 0.05
#: how fast a bound relaxes, in shares of the joint's range per second (40 mm PMAs: 0.8 mm/s)
RELAX_SPEED = 0.02


class SeenReach:
    """The bounds seen (2, n) and when each side was first pinned; see the module doc."""

    def __init__(self, lower, upper):
        """`lower`, `upper`: the joint limits (n,), m or rad (infinite: unbounded)."""
        lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        n = lower.shape[0]
        self.limits = np.vstack((lower, upper))
        span = upper - lower
        #: per joint: the relax speed (m/s or rad/s; infinite for an unbounded joint)
        self.speed = np.where(np.isfinite(span), RELAX_SPEED * span, np.inf)
        #: rows: the lowest and highest the reference may go as seen (infinite: nothing seen)
        self.seen = np.vstack((np.full(n, -np.inf), np.full(n, np.inf)))
        #: rows: since when each side has been pinned, s (NaN: not pinned)
        self.since = np.full((2, n), np.nan)
        self.bounded = 0
        self._watch, self._bound = load()

    def watch(self, t, dt, q, q_des, effort, low, high, largest=np.inf):
        """
        Take one tick at `t` (s, `dt` s long); return how many sides were first bounded.

        `q`, `q_des`: the joints and the reference (m or rad), `effort`: the effort sent,
        `low`, `high`: its bounds (N or N m); model order. `largest`: the error (m or rad)
        beyond which a joint is not pinned.
        """
        fresh, self.bounded = self._watch(float(t), float(dt), q, q_des, effort, low, high,
                                          float(largest), self.limits, self.speed, self.seen,
                                          self.since)
        return fresh

    def bound(self, nominal, bounds):
        """Write `nominal` (2, n) narrowed to what was seen into `bounds`' first two rows."""
        self._bound(nominal, self.seen, bounds)


@compiled()
def watch_pinned(t, dt, q, q_des, effort, low, high, largest, limits, speed, seen, since):
    """`SeenReach.watch`'s arithmetic; return (sides first bounded this tick, joints bounded)."""
    fresh, bounded = 0, 0
    for k in range(q.shape[0]):
        room = RELAX_MARGIN * (high[k] - low[k])
        near = abs(q[k] - q_des[k]) <= largest
        for side in range(2):
            if side == 0:
                pinned = near and effort[k] <= low[k] and q[k] > q_des[k]
                free = effort[k] >= low[k] + room
            else:
                pinned = near and effort[k] >= high[k] and q[k] < q_des[k]
                free = effort[k] <= high[k] - room
            if pinned:
                if since[side, k] != since[side, k]:
                    since[side, k] = t
                elif t - since[side, k] >= SETTLE:
                    unseen = not abs(seen[side, k]) < np.inf
                    seen[side, k] = (max(seen[side, k], q[k]) if side == 0
                                     else min(seen[side, k], q[k]))
                    fresh += unseen
                continue
            since[side, k] = np.nan
            if free and abs(seen[side, k]) < np.inf:
                step = speed[k] * dt
                if side == 0:
                    seen[0, k] = seen[0, k] - step if seen[0, k] - step > limits[0, k] else -np.inf
                else:
                    seen[1, k] = seen[1, k] + step if seen[1, k] + step < limits[1, k] else np.inf
        bounded += abs(seen[0, k]) < np.inf or abs(seen[1, k]) < np.inf
    return fresh, bounded


@compiled()
def bound_within(nominal, seen, bounds):
    """`SeenReach.bound`'s arithmetic: each side of `nominal` narrowed to `seen`, in order."""
    for k in range(nominal.shape[1]):
        a = min(max(nominal[0, k], seen[0, k]), nominal[1, k])
        bounds[0, k] = a
        bounds[1, k] = max(min(nominal[1, k], seen[1, k]), a)


def load():
    """Return the two kernels' entry points, compiled or loaded (a task space's set-up)."""
    return _watch_entry(), _bound_entry()


_ONE, _ROWS = np.zeros(1), np.zeros((2, 1))
_watch_entry = cached_entry_point(watch_pinned, 0.0, 0.0, _ONE, _ONE, _ONE, _ONE, _ONE, 0.0,
                                  _ROWS, _ONE, _ROWS, _ROWS)
_bound_entry = cached_entry_point(bound_within, _ROWS, _ROWS, np.zeros((3, 1)))
