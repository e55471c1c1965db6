"""
A calibration of the model's tip kinematics: the gap to the true tip, from the arm's shape.

A continuum arm's true tip is not its constant-curvature model's: its sections do not bend at
constant curvature. Each PMA's length is measured, which fixes a section's mean bend; gravity
then bends the section more where its moment is larger (near the section's base) and less
further out. Take a section's bending compliance ``c_i / EI_i`` (``EI_i = 3/2 k_i r_i^2 L_i``:
the model's PMAs' bending stiffness, ``k_i`` their mean stiffness N/m, ``r_i`` their radius,
``L_i`` the length; ``c_i`` the calibration's share of it, 1 for the model's PMAs). Along the
backbone, at the middles ``p_k`` of P pieces per section (frames ``R_k``, length ``h_i``),
the moment of the masses beyond a piece about it (the model's section masses spread evenly,
its gravity vector ``gamma``)

    M_k = sum_{j > k} m_j (p_j - p_k) x gamma                 [N m, base frame]

bends the piece by ``c_i h_i / EI_i`` times its bending part in the piece's frame, less that
part's mean over the section (the measured PMA lengths keep the mean bend):

    mu_k = B R_k^T M_k - mean_{section i}(B R_k^T M_k),   B = diag(1, 1, 0)

and to first order the frame's tip `p_t` (the task frame: the tip of section f) moves by
``sum_{k in sections <= f} (c_i h_i / EI_i) (R_k mu_k) x (p_t - p_k)``. A backbone of
two-axis joints (a disc stack's universal joints, hinges about x then y) also twists each
piece about its axis by ``a b / 2`` as it bends by ``a`` and ``b`` about its x and y axes
(second order in the bend: 0.1 rad over an arm bent 60 degrees); with the twist's share `t`
(0: an arm that bends without it) the piece turns the tip by ``t (a b / 2) R_k e_z x (p_t -
p_k)``, ``(a, b)`` its constant-curvature bend. The gap is

    g(q) = FK(q) - y = sum_i c_i S_i(q) + t T(q) + P(FK(q))      [m, base frame]

(`shape_design` gives the columns ``S_i`` and ``T``: the tip's moves per unit ``c_i`` and
``t``, negated), linear in the compliances
(`task.calibration.compliance`, one per section; empty: no shape part) and the twist
(`task.calibration.twist`). Why this form: the gap depends on the whole shape, not on the tip
alone (one tip is reached by many shapes; on the MuJoCo arm the gaps at similar tips differ by
2-7 mm between bearings and poses), and these are the shape's own mechanics, with one number
per section and one for the arm, so what a run saw at some poses holds at every other.

`P` is what the shape leaves, a smooth function of the model's tip: with gravity along the
base's z axis the arm looks the same from every bearing, so it depends on how far out (r) and
how high (z) the model puts the tip, not on its bearing phi; in the tip's cylindrical frame
(radial e_r, tangential e_phi, axial e_z)

    P = s P_r(s, w) e_r + s P_phi(s, w) e_phi + P_z(s, w) e_z,   s = r / REACH, w = z / REACH

with P_r, P_phi polynomials of degree d - 1 and P_z of degree d (d: 1 to 3; the factor s
keeps it smooth on the axis, where the bearing has no meaning). Parameter
`task.calibration.gap` (m): the coefficients of P_r, P_phi, P_z one after the other, each in
`monomials` order (5, 12 or 22 values for degree 1, 2, 3; empty: none). All are fitted by
least squares to a recorded run (identify/kinematics.py, `continuum-ctrl identify --fit
kinematics`), which keeps the parts whose held-out residual is least.

The task-space correction adds ``g(q)`` to every tip reference (control/tip_correction.py),
so the true tip, ``FK(q) - g(q)``, lands on it.
"""

import math
from typing import Optional

import numpy as np

#: the tip's scale in the polynomials, m (the workspace's reach off the axis, about)
REACH = 0.25
#: the degrees a polynomial part may have
DEGREES = (1, 2, 3)
#: pieces per section of the shape's sums (the module doc's P)
PIECES = 8
#: the PMAs' angles about a section's z axis, rad (contract section 1)
PMA_ANGLES = 2.0 * np.pi * np.arange(3) / 3.0


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


def frame_section(model, frame) -> int:
    """Return the section (1..n) whose tip is `frame` (``section{i}_tip``)."""
    return model.frame_names().index(frame) + 1


def shape_design(model, q, frame) -> np.ndarray:
    """
    Return the shape's regressors at joints `q` (m): (3, n + 1) (module doc).

    Columns: the frame's gap per unit compliance ``c_i`` of each section, then per unit
    twist ``t``. `model`: a continuum model (its `backbone_frames` and `spec`), `frame` its
    task frame.
    """
    spec = model.spec
    n = spec.sections
    p, R = model.backbone_frames(q, PIECES)
    weight = np.repeat(np.asarray(spec.mass, dtype=float) / PIECES, PIECES)[:, None] * \
        np.asarray(spec.gravity, dtype=float)[None, :]
    # sum_{j > k} (p_j - p_k) x W_j = sum_{j > k} p_j x W_j - p_k x sum_{j > k} W_j
    after = np.vstack((np.cumsum(weight[::-1], axis=0)[::-1][1:], np.zeros((1, 3))))
    moment = np.vstack((np.cumsum(np.cross(p, weight)[::-1], axis=0)[::-1][1:],
                        np.zeros((1, 3)))) - np.cross(p, after)
    local = np.einsum('kji,kj->ki', R, moment)[:, :2].reshape(n, PIECES, 2)
    local -= local.mean(axis=1, keepdims=True)          # the PMA lengths keep the mean bend
    stiffness = np.asarray(spec.stiffness, dtype=float).reshape(n, 3).mean(axis=1)
    radius = np.asarray(spec.radius, dtype=float)
    bend = (1.0 / (1.5 * stiffness * radius ** 2 * PIECES))[:, None, None] * local  # rad
    # each piece's constant-curvature bend (a, b) about its x and y axes, rad
    lengths = np.asarray(q, dtype=float).reshape(n, 3)
    arc = (2.0 / (3.0 * PIECES * radius))[:, None] * np.stack(
        (lengths @ np.sin(PMA_ANGLES), -lengths @ np.cos(PMA_ANGLES)), axis=1)
    sections = frame_section(model, frame)                          # those below the frame
    last = sections * PIECES
    reach = model.frame_pose(q, frame)[:3, 3] - p[:last]            # piece to the frame's tip
    turn = np.einsum('kij,kj->ki', R[:last, :, :2], bend[:sections].reshape(-1, 2))
    columns = np.zeros((3, n + 1))
    columns[:, :sections] = -np.cross(turn, reach).reshape(sections, PIECES, 3).sum(axis=1).T
    twist = 0.5 * np.repeat(arc[:sections, 0] * arc[:sections, 1], PIECES)
    columns[:, n] = -np.sum(np.cross(R[:last, :, 2] * twist[:, None], reach), axis=0)
    return columns


class KinematicCalibration:
    """
    The gap ``g(q)`` of the task frame `frame` (module doc).

    `compliance` (n values, or empty: no shape part), `twist`, `gap` (m, or empty: no
    polynomial part).
    """

    def __init__(self, frame, gap=(), compliance=(), twist=0.0):
        self.frame = frame
        self.coefficients = np.asarray(gap, dtype=float).reshape(-1)
        self.compliance = np.asarray(compliance, dtype=float).reshape(-1)
        self.twist = float(twist)
        self._shape = np.append(self.compliance, self.twist)
        self.degree = None
        if self.coefficients.size:
            self.degree = degree_of(self.coefficients.size)
            if self.degree is None:
                raise ValueError(f'{self.coefficients.size} coefficients are no degree in '
                                 f'{DEGREES} (5, 12 or 22)')
            lateral, _, _ = sizes(self.degree)
            self._radial = self.coefficients[:lateral].tolist()
            self._tangential = self.coefficients[lateral:2 * lateral].tolist()
            self._axial = self.coefficients[2 * lateral:].tolist()
            self._lateral_terms = monomials(self.degree - 1)
            self._axial_terms = monomials(self.degree)

    @classmethod
    def of_parameters(cls, frame, gap, compliance, twist) -> Optional['KinematicCalibration']:
        """Return the calibration of `task.calibration.*`, None when it has no part."""
        return cls(frame, gap, compliance, twist) if len(gap) or len(compliance) else None

    def __call__(self, model, q, tip=None) -> np.ndarray:
        """
        Return the gap (m, (3,)) at joints `q` (m): `model` the caller thread's own.

        `tip`: the model's tip at `q` where the caller has it (m, base frame). A few
        hundred us with the shape part, a few us without.
        """
        gap = np.zeros(3)
        if self.compliance.size:
            gap += shape_design(model, q, self.frame) @ self._shape
        if self.degree is not None:
            if tip is None:
                tip = model.frame_pose(q, self.frame)[:3, 3]
            gap += self.polynomial(tip)
        return gap

    def polynomial(self, tip: np.ndarray) -> np.ndarray:
        """Return the polynomial part (m, (3,)) at the model's tip `tip` (m, base frame)."""
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
