"""
The PMAs' friction in the identification: one Maxwell-slip element per PMA on its length.

The plant's friction (sim/pma_traits.py) and the controller's feed-forward (`output.friction`)
are Maxwell-slip elements (actuation/maxwell_slip.py). With a slip force ``f`` and a stiffness
``s``, one element's force on its PMA is ``f u(q; play)``, ``play = f / s``: ``u`` is the
unit element's (slip force 1 N, stiffness ``1 / play``) on the path of the PMA's length ``q``,
a play operator in [-1, 1] that turns round over ``2 play`` of travel. For a given play the
friction is linear in ``f``: one more column of the regression (identify/fit.py), and a
1-D search over the play (`PLAY_RANGE`) minimises the residual on a fixed sample set.

One play for every PMA (the loop turns round over the same travel on each; the plant's
`pma.friction.scale` scales force and stiffness together, which keeps it), a slip force for
all or per PMA (`--per-pma`) as the area's.
"""

import numpy as np

from continuum_ctrl.actuation.maxwell_slip import MaxwellSlip, slip_kernel
from continuum_ctrl.numerics.jit import compiled

#: the play's search range, m: from a few times the smoothed positions' noise to half a mm
#: beyond the 0.27 mm a 2 N, 15 kN/m element turns round over
PLAY_RANGE = (1e-5, 2e-3)
#: coarse grid of the play search (log-spaced over PLAY_RANGE)
PLAY_GRID = 15
#: a reversal counts when the length travels this many plays between turning points: the
#: element turns round over 2 plays, and the slip beyond tells its force from its stiffness
REVERSAL_PLAYS = 4.0
#: fewest such reversals of each PMA's length in the fitted part of the runs
MIN_REVERSALS = 10
#: the friction's (and the stiffness's) standard error must stay within this share of it
FRICTION_SE_LIMIT = 0.25


@compiled()
def _slip_path(q, slip, stiffness, play, row, out):
    """Fill `out` (N, n) with the bank's force along the lengths `q` (N, n) from `slip`."""
    for t in range(q.shape[0]):
        slip_kernel(q[t], slip, stiffness, play, row)
        for i in range(row.shape[0]):
            out[t, i] = row[i]


def unit_friction(q, play):
    """
    Return the unit element's force (N, n) along the lengths `q` (N, n), m, of a run.

    Slip force 1 N, play `play` (n,), m (stiffness ``1 / play``); relaxed at ``q[0]``.
    """
    q = np.ascontiguousarray(q, dtype=float)
    play = np.broadcast_to(np.asarray(play, dtype=float), q.shape[1:])
    bank = MaxwellSlip(np.ones((q.shape[1], 1)), 1.0 / play[:, None])
    bank.reset(q[0])
    out = np.empty_like(q)
    _slip_path(q, bank.slip, bank.stiffness, bank.play, bank.out, out)
    return out


def reversals(q, travel):
    """
    Return how often each length of `q` (N, n) reverses after travelling `travel` m, (n,).

    The turning points of a play operator of half that width: its output sits at +-1 while
    the length moves on, and a reversal is a change from one side to the other.
    """
    u = unit_friction(q, 0.5 * travel)
    count = np.zeros(q.shape[1], dtype=int)
    for j in range(q.shape[1]):
        side = np.sign(u[:, j])[np.abs(u[:, j]) >= 1.0 - 1e-9]
        count[j] = int(np.count_nonzero(np.diff(side) != 0.0)) if side.size else 0
    return count


def nominal_friction(setup):
    """Return the file's friction per PMA, ``(force N, play m)`` (n,) each (play 0: none)."""
    if setup.friction is None:
        n = setup.model.n
        return np.zeros(n), np.zeros(n)
    force, stiffness = setup.friction
    return force, force / stiffness
