"""
A calibration of the model's tip kinematics: the gap to the true tip, gravity-aware.

A continuum arm's true tip is not its constant-curvature model's: it sags under gravity, more
the further it reaches out, and its sections do not bend at constant curvature. With gravity
along the base's z axis (the arm's axis at rest) the arm looks the same from every bearing,
so the gap

    g = FK(q) - y                                      [m, base frame; x = FK(q) = (r, phi, z)]

depends on how far out (r) and how high (z) the model puts the tip, not on its bearing phi:
in the tip's cylindrical frame (radial e_r, tangential e_phi, axial e_z)

    g = s P_r(s, w) e_r + s P_phi(s, w) e_phi + P_z(s, w) e_z,   s = r / REACH, w = z / REACH

with P_r, P_phi polynomials of degree d - 1 and P_z of degree d (d: 1 to 3; the factor s
keeps the gap smooth on the axis, where the bearing has no meaning). It is fitted by ridge
regression to a recorded run (identify/kinematics.py, `continuum-ctrl identify --fit
kinematics`). Why this form: it has few coefficients (12 at degree 2), it carries what the
run saw at one bearing to every other (a lookup table, or a polynomial of x, y and z, has to
be filled at every bearing and extrapolates badly into a sector the run missed: the held-out
residual by bearing sector says how well it does), and it is a few multiplications per tick.
What it cannot hold, a gap that differs between bearings (PMAs that differ from each other),
shows as the held-out residual, and `identify` refuses a fit the sectors contradict.

The task-space correction adds ``g(x)`` to every tip reference (control/tip_correction.py),
so the true tip, ``x - g(x)``, lands on it. Parameter `task.calibration.gap` (m): the
coefficients of P_r, P_phi, P_z one after the other, each in `monomials` order (5, 12 or 22
values for degree 1, 2, 3; empty: none).
"""

import math
from typing import Optional

import numpy as np

#: the tip's scale in the polynomials, m (the workspace's reach off the axis, about)
REACH = 0.25
#: the degrees a calibration may have
DEGREES = (1, 2, 3)


def monomials(degree: int):
    """Return the monomials ``s^i w^j`` up to `degree`: ``(i, j)`` pairs."""
    return [(i, order - i) for order in range(degree + 1) for i in range(order, -1, -1)]


def sizes(degree: int):
    """Return the coefficient counts of P_r, P_phi and P_z of `degree`."""
    lateral = len(monomials(degree - 1))
    return lateral, lateral, len(monomials(degree))


def degree_of(count: int) -> Optional[int]:
    """Return the degree whose polynomials take `count` coefficients, else None."""
    return next((degree for degree in DEGREES if sum(sizes(degree)) == count), None)


def design(tips: np.ndarray, degree: int) -> np.ndarray:
    """
    Return the gap's regressors at the model's `tips` (N, 3) m: (N, 3, count).

    ``gap[k] = design[k] @ coefficients``: the Cartesian gap of tip k, linear in the
    coefficients (module doc's order).
    """
    tips = np.asarray(tips, dtype=float)
    r = np.hypot(tips[:, 0], tips[:, 1])
    s, w = r / REACH, tips[:, 2] / REACH
    safe = np.where(r > 0.0, r, 1.0)
    radial = np.stack((tips[:, 0] / safe, tips[:, 1] / safe, np.zeros(len(r))), axis=1)
    tangent = np.stack((-radial[:, 1], radial[:, 0], np.zeros(len(r))), axis=1)
    lateral = np.stack([s ** (i + 1) * w ** j for i, j in monomials(degree - 1)], axis=1)
    axial = np.stack([s ** i * w ** j for i, j in monomials(degree)], axis=1)
    return np.concatenate((radial[:, :, None] * lateral[:, None, :],
                           tangent[:, :, None] * lateral[:, None, :],
                           np.eye(3)[2][None, :, None] * axial[:, None, :]), axis=2)


class KinematicCalibration:
    """The gap map ``g(x)`` (module doc) of `coefficients` (m) in the module doc's order."""

    def __init__(self, coefficients):
        self.coefficients = np.asarray(coefficients, dtype=float).reshape(-1)
        degree = degree_of(self.coefficients.size)
        if degree is None:
            raise ValueError(f'{self.coefficients.size} coefficients are no degree in '
                             f'{DEGREES} (5, 12 or 22)')
        self.degree = degree
        lateral, _, axial = sizes(degree)
        self._radial = self.coefficients[:lateral].tolist()
        self._tangential = self.coefficients[lateral:2 * lateral].tolist()
        self._axial = self.coefficients[2 * lateral:].tolist()
        self._lateral_terms, self._axial_terms = monomials(degree - 1), monomials(degree)

    @classmethod
    def of_parameters(cls, gap) -> Optional['KinematicCalibration']:
        """Return the calibration of `task.calibration.gap`, None when it is empty."""
        return cls(gap) if len(gap) else None

    def __call__(self, tip: np.ndarray) -> np.ndarray:
        """Return the gap (m, (3,)) at the model's tip `tip` (m, base frame): floats, a few us."""
        x, y, z = (float(v) for v in tip)
        r = math.hypot(x, y)
        s, w = r / REACH, z / REACH
        lateral = [s ** (i + 1) * w ** j for i, j in self._lateral_terms]
        radial = math.fsum(c * m for c, m in zip(self._radial, lateral))
        tangential = math.fsum(c * m for c, m in zip(self._tangential, lateral))
        axial = math.fsum(c * s ** i * w ** j for c, (i, j) in zip(self._axial,
                                                                   self._axial_terms))
        cos, sin = (x / r, y / r) if r > 0.0 else (1.0, 0.0)
        return np.array((radial * cos - tangential * sin, radial * sin + tangential * cos,
                         axial))

    def many(self, tips: np.ndarray) -> np.ndarray:
        """Return the gaps (N, 3) m at the model's `tips` (N, 3) m."""
        return design(tips, self.degree) @ self.coefficients
