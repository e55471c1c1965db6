"""
PMA friction and hysteresis as a Maxwell-slip bank, acting on each PMA's length coordinate.

    bank = MaxwellSlip(breakaway, stiffness)    # (n, k): k elements per PMA, N and N/m
    bank.reset(q)                               # relaxed at the length changes q (m)
    f = bank.force(q)                           # the bank's force on each PMA, N (> 0 extends)

The simulator's PMAs rub through one (sim/pma_traits.py); the controller's friction
feed-forward (`output.friction`) runs one along the reference and pushes against it
(control/computed_torque.py), so both use this one model.

Each element is a spring of stiffness ``k_e`` in series with a slider that slips at the
break-away force ``f_e``: its slider sits at ``z_e``, its spring holds ``k_e (q - z_e)``, and
once that force would exceed ``f_e`` the slider follows ``q`` at ``f_e / k_e`` behind. The
elements act in parallel against the motion, so the force on the PMA is
``-sum k_e (q - z_e)``. The bank is rate independent (its force depends on the path of ``q``,
not on its speed): under a triangle of amplitude ``A`` (every element slipping) the force
against displacement runs a loop ``2 sum f_e`` wide, of area ``4 sum f_e (A - f_e / k_e)``,
the energy its sliders dissipate. Unlike a Coulomb ``sign(qd)``, it is a finite stiffness
at every velocity, so a fixed step takes it without chatter (sim/pma_traits.py bounds it).
The update is exact for a length that moves monotonically between samples.
"""

import numpy as np

from continuum_ctrl.numerics.jit import cached_entry_point, compiled


@compiled()
def slip_kernel(q, slip, stiffness, play, out):
    """
    Move the sliders `slip` (n, k), m, to length changes `q` (n,), m; fill `out` (n,), N.

    `stiffness` (n, k), N/m; `play` (n, k), m: each spring's stretch at break-away. `out`
    takes the bank's force on each PMA (minus the sum of its springs' forces).
    """
    for i in range(slip.shape[0]):
        total = 0.0
        for e in range(slip.shape[1]):
            stretch = q[i] - slip[i, e]
            if stretch > play[i, e]:
                stretch = play[i, e]
                slip[i, e] = q[i] - stretch
            elif stretch < -play[i, e]:
                stretch = -play[i, e]
                slip[i, e] = q[i] - stretch
            total += stiffness[i, e] * stretch
        out[i] = -total


_slip = cached_entry_point(slip_kernel, np.zeros(1), np.zeros((1, 1)), np.zeros((1, 1)),
                           np.zeros((1, 1)), np.zeros(1))


class MaxwellSlip:
    """
    The Maxwell-slip banks of `n` PMAs, `k` elements each (see the module).

    `breakaway` (n, k): each element's break-away force, N (>= 0); `stiffness` (n, k): its
    spring's, N/m (> 0, or 0 with no break-away force). `slip` (n, k): the sliders'
    positions, m (the state); `out` (n,): the force of the last move, N.
    """

    def __init__(self, breakaway, stiffness):
        self.breakaway = np.array(breakaway, dtype=float)
        self.stiffness = np.array(stiffness, dtype=float)
        # a PMA scaled to no friction has neither force nor stiffness: no play either
        self.play = np.divide(self.breakaway, self.stiffness,
                              out=np.zeros_like(self.breakaway), where=self.stiffness > 0.0)
        self.slip = np.zeros_like(self.breakaway)
        self.out = np.zeros(len(self.breakaway))
        self._kernel = _slip()

    def reset(self, q):
        """Relax every spring at the length changes `q` (n,), m."""
        self.slip[:] = np.asarray(q, dtype=float)[:, None]

    def move(self, q):
        """Move the sliders to `q` (n,), m; return the bank's force on each PMA, N (a buffer)."""
        self._kernel(np.ascontiguousarray(q, dtype=float), self.slip, self.stiffness,
                     self.play, self.out)
        return self.out

    def force(self, q):
        """Move the sliders to `q` (n,), m; return the bank's force on each PMA, N (a copy)."""
        return self.move(q).copy()
