"""
A calibration of the model's tip kinematics: the gap to the true tip as a smooth function.

A continuum arm's true tip is not its constant-curvature model's: it sags under gravity, more
the further it reaches out, and its sections do not bend at constant curvature. The gap

    g(x) = FK(q) - y                                   [m, base frame; x = FK(q)]

is a smooth function of where the model puts the tip, nearly symmetric about the arm's axis
under gravity along it. It is taken as a low-order polynomial of the model's tip:

    g(x) = C phi((x - center) / REACH)                 (C: (3, m); phi: the m monomials)

of degree 2 or 3 in the tip's three coordinates, fitted by ridge regression to a recorded
run (identify/kinematics.py, `continuum-ctrl identify --fit kinematics`). Why this form
and not a lookup table or a per-section model: a polynomial of the tip extends smoothly to
the parts of the workspace the run visited least (its held-out residual, by region, says how
well), needs no knowledge of which physics causes the gap, and is a few multiplications per
tick; a table needs data in every cell and holds steps at its edges. It corrects the
kinematics where the IK sends the tip: the task-space correction adds ``g(x)`` to every tip
reference (control/tip_correction.py), so the true tip, ``x - g(x)``, lands on it.

Parameters (`task.calibration.*`, the overlay `identify --fit kinematics` writes): `center`
(m, 3) and `gap` (m, 3 per monomial in `monomials` order, 30 for degree 2, 60 for degree 3).
"""

import itertools
import math
from typing import Optional

import numpy as np

#: the tip's scale in the monomials, m (the workspace's reach off the axis, about)
REACH = 0.25
#: the degrees a calibration may have
DEGREES = (1, 2, 3)


def monomials(degree: int):
    """Return the monomials up to `degree` of three coordinates: tuples of axis indices."""
    return [terms for order in range(degree + 1)
            for terms in itertools.combinations_with_replacement(range(3), order)]


def features(u: np.ndarray, terms) -> np.ndarray:
    """Return the monomials `terms` of the scaled tips `u` ((N, 3) or (3,)): (N, m) or (m,)."""
    u = np.asarray(u, dtype=float)
    return np.stack([np.prod(u[..., list(term)], axis=-1) for term in terms], axis=-1)


def degree_of(count: int) -> Optional[int]:
    """Return the degree whose monomials take `count` coefficients (3 each), else None."""
    for degree in DEGREES:
        if 3 * len(monomials(degree)) == count:
            return degree
    return None


class KinematicCalibration:
    """The gap map ``g(x)`` (module doc): `center` (3,) m, `coefficients` C (3, m) m."""

    def __init__(self, center, coefficients):
        self.center = np.asarray(center, dtype=float).reshape(3)
        self.coefficients = np.asarray(coefficients, dtype=float).reshape(3, -1)
        degree = degree_of(self.coefficients.size)
        if degree is None:
            raise ValueError(f'{self.coefficients.size} coefficients are no degree in '
                             f'{DEGREES} (3 per monomial)')
        self.terms = monomials(degree)
        self.degree = degree

    @classmethod
    def of_parameters(cls, center, gap) -> Optional['KinematicCalibration']:
        """Return the calibration of `task.calibration.*` (`gap` feature-major), None if empty."""
        if not len(gap):
            return None
        return cls(center, np.asarray(gap, dtype=float).reshape(-1, 3).T)

    def parameters(self):
        """Return the `task.calibration.*` values: center and gap (m, feature-major lists)."""
        return self.center.tolist(), self.coefficients.T.reshape(-1).tolist()

    def __call__(self, tip: np.ndarray) -> np.ndarray:
        """Return the gap (m, (3,) or (N, 3)) at the model's tip(s) `tip` (m, base frame)."""
        u = (np.asarray(tip, dtype=float) - self.center) / REACH
        if u.ndim == 1:                 # the loop's tick: floats, a few us
            u = u.tolist()
            phi = np.array([math.prod(u[i] for i in term) for term in self.terms])
        else:
            phi = features(u, self.terms)
        return phi @ self.coefficients.T
