"""
The lengths the pressures can hold: the task-space IK's joint bounds on PMA arms.

A pose ``q`` (PMA length changes, m) is held still by the static force per PMA
``tau_s = K q + g(q)`` [N]: its elastic force (``K`` the PMA stiffness, the model's passive
force at rest, linear within the strokes) and gravity's generalized force. A PMA makes
``F(p, q) = area (1 - f q) (p - deadzone)`` at gauge pressure ``p`` above its dead zone
(actuation/pressure_map.py, ``f`` the area's fall per metre), so within ``[p_min, p_max]`` its
force lies in ``[F_lo (1 - f q), F_hi (1 - f q)]`` (`ActuationMap.force_range` at rest:
``F_lo, F_hi``). Keeping a margin ``m`` (a share `margin` of ``F_hi - F_lo``) on both sides
for the loop's own corrections and the model's error, and freezing gravity at a pose ``q0``
(its change from there is second order against the margin), each PMA's length lies in

    (F_lo + m - g_i(q0)) / (K_i + F_lo f_i)  <=  q_i  <=  (F_hi - m - g_i(q0)) / (K_i + F_hi f_i)

which `HoldingRange.bounds` intersects with the joint limits. Refreshed at the pose itself
(the task reference does every `REFRESH` s, the IK's search after each descent), the bounds
hold a pose the IK stays at to its own gravity: a fixed point, exact there.
"""

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from continuum_ctrl.numerics.jit import compiled

#: how often a task reference refreshes its bounds' gravity, s of its time
REFRESH = 0.02


@dataclass(frozen=True)
class HoldingRange:
    """
    The PMAs' force range, for the IK's joint bounds (module doc); tuples, so it compares.

    `force_low`, `force_high`: the force at ``p_min``, ``p_max`` at rest [N] (n,);
    `falloff`: the area's relative fall per metre of length change [1/m] (n,); `margin`:
    the share of each PMA's force range kept free on both sides.
    """

    force_low: Tuple[float, ...]
    force_high: Tuple[float, ...]
    falloff: Tuple[float, ...]
    margin: float

    @classmethod
    def of(cls, actuation, margin: float) -> Optional['HoldingRange']:
        """Return the range of an `ActuationMap` (None: no PMAs, no range)."""
        if actuation is None:
            return None
        low, high = actuation.force_range()
        return cls(tuple(map(float, low)), tuple(map(float, high)),
                   tuple(map(float, actuation.falloff())), float(margin))

    def bounds(self, model) -> 'HoldingBounds':
        """Return the bounds of this range on `model` (its stiffness, limits and gravity)."""
        return HoldingBounds(model, self)


class HoldingBounds:
    """`HoldingRange`'s joint bounds on one model: `at(q, out)` fills them (module doc)."""

    def __init__(self, model, holding: HoldingRange):
        self.model = model
        self.lower, self.upper = (np.asarray(x, dtype=float) for x in model.joint_limits())
        mid = 0.5 * (self.lower + self.upper)
        stiffness = model.passive_forces(mid, np.zeros(model.n)) / mid
        low, high = np.array(holding.force_low), np.array(holding.force_high)
        falloff = np.array(holding.falloff)
        margin = holding.margin * (high - low)
        self._low, self._high = low + margin, high - margin
        self._low_slope, self._high_slope = stiffness + low * falloff, stiffness + high * falloff

    def at(self, q, out, keep=None):
        """
        Fill `out` (2, n) with the lower and upper bounds [m], gravity taken at `q`.

        `keep` (n,): lengths the bounds are widened to include (a reference's start
        pose, so that a bound never cuts it and the reference never jumps).
        """
        _fill(self.model.gravity_vector(q), self._low, self._low_slope, self._high,
              self._high_slope, self.lower, self.upper, self.lower if keep is None else keep,
              keep is not None, out)
        return out


@compiled()
def _fill(g, low, low_slope, high, high_slope, lower, upper, keep, keeping, out):
    """`HoldingBounds.at`'s arithmetic: the bounds at gravity `g` (N), into `out` (2, n)."""
    for k in range(g.shape[0]):
        a = min(upper[k], max(lower[k], (low[k] - g[k]) / low_slope[k]))
        b = min(upper[k], max(lower[k], (high[k] - g[k]) / high_slope[k]))
        a = min(a, b)
        if keeping:
            a, b = min(a, keep[k]), max(b, keep[k])
        out[0, k], out[1, k] = a, b
