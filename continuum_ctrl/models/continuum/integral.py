"""
`type: continuum_integral`: the disc-stack reference model (contract section 4).

Each section is a stack of thin discs (mass ``m dxi``, radius r) along ``xi`` in [0, 1]; the
kinetic-energy integral is evaluated by Gauss-Legendre quadrature (``model.quadrature`` points
per section) of the exact, smooth integrand. ``dM/dq`` is exact (analytic Jacobian
derivatives at each node) and ``C`` comes from the shared Christoffel routine
`continuum_ctrl.models.christoffel.coriolis_from_dM`. Gravity uses the closed-form CoG, so it
is exact.
"""

import numpy as np

from continuum_ctrl.models.christoffel import coriolis_from_dM
from continuum_ctrl.models.continuum.jit import compiled
from continuum_ctrl.models.continuum.kinematics import (chain, rotate_matrix, rotate_tensor,
                                                        section_cog, section_point,
                                                        section_rotation)
from continuum_ctrl.models.continuum.model import ContinuumModel, finish, passive
from continuum_ctrl.models.continuum.params import read_spec
from continuum_ctrl.models.continuum.terms import (add_gravity, add_term, angular_jacobian,
                                                   point_jacobian)


@compiled()
def _point_vector(B, ob, p, x):
    for c in range(3):
        x[c] = ob[c] + B[c, 0] * p[0] + B[c, 1] * p[1] + B[c, 2] * p[2]


@compiled()
def integral_evaluate(length, radius, mass, offset, twist, nodes, weights, gravity, q, qd,
                      mode, M, dM, g, sv, sm, st, nv, nt, nnv):
    """
    Fill M, g and (mode 0 or 2) dM of the disc-stack model; return ``U_g`` [J].

    The last six arguments are the workspace from `terms.new_workspace`.
    """
    n = length.shape[0]
    Rb, ob, om, v0, dom, dv0 = nt[0, :n], nv[0, :n], nv[1], nv[2], nt[1], nt[2]
    J, JO, work, dJ, dJO = nv[3], nv[5], nv[6:12], nnv[0], nnv[2]
    x, wI, ones, p = sv[20, :3], sv[22, :3], sv[23, :3], sv[24, :3]
    dp, dpw, Rl, kap = sm[12], sm[13], sm[14], sm[15]
    d2p, d2pw, dkap = st[10], st[11], st[12]
    ones[:] = 1.0
    chain(length, radius, offset, twist, q, Rb, ob, om, v0, dom, dv0, sv, sm, st)
    deriv = mode == 2
    M[:] = 0.0
    g[:] = 0.0
    if deriv:
        dM[:] = 0.0
    U = 0.0
    for i in range(n):
        nu = 3 * i
        Ni = nu + 3
        m = mass[i]
        qi = q[nu:Ni]
        B = Rb[i]
        section_cog(length[i], radius[i], qi, p, dp, d2p, sv, sm, st)
        _point_vector(B, ob[i], p, x)
        rotate_matrix(B, dp, dpw)
        point_jacobian(i, x, dpw, d2pw, om, v0, dom, dv0, False, J, dJ)
        U += add_gravity(m, gravity, x, J, Ni, g)
        r2 = radius[i] * radius[i]
        for k in range(nodes.shape[0]):
            mk = m * weights[k]
            section_point(length[i], radius[i], qi, nodes[k], p, dp, d2p, sv, sm, st)
            _point_vector(B, ob[i], p, x)
            rotate_matrix(B, dp, dpw)
            rotate_tensor(B, d2p, d2pw)
            point_jacobian(i, x, dpw, d2pw, om, v0, dom, dv0, deriv, J, dJ)
            add_term(J, dJ, 0, Ni, J, dJ, 0, Ni, ones, 0.5 * mk, qd, Ni, mode, M, M, M, dM, g,
                     work)
            section_rotation(radius[i], qi, nodes[k], Rl, kap, dkap, sv, sm, st)
            angular_jacobian(i, B, Rl, kap, dkap, om, dom, deriv, JO, dJO, sm, nv)
            wI[0] = wI[1] = 0.25 * mk * r2
            wI[2] = 0.5 * mk * r2
            add_term(JO, dJO, 0, Ni, JO, dJO, 0, Ni, wI, 0.5, qd, Ni, mode, M, M, M, dM, g,
                     work)
    return U


def gauss_legendre(points):
    """Return Gauss-Legendre nodes and weights on [0, 1], (points,) each."""
    x, w = np.polynomial.legendre.leggauss(points)
    return np.ascontiguousarray(0.5 * (x + 1.0)), np.ascontiguousarray(0.5 * w)


class IntegralModel(ContinuumModel):
    """The disc-stack continuum model, by quadrature of the exact integrand."""

    def __init__(self, spec):
        super().__init__(spec)
        self.nodes, self.weights = gauss_legendre(spec.quadrature)

    def _kernel(self, q, qd, mode, task, v):
        M, C = self._mc[0], self._mc[1]
        g, pas, out, cq = self._vecs
        U = integral_evaluate(*self._geom, self.nodes, self.weights, self.spec.gravity, q, qd,
                              2 if mode else 0, M, self._dM, g, *self._ws)
        if mode in (1, 3):
            C[:] = coriolis_from_dM(self._dM, qd)
            cq[:] = C @ qd
        passive(q, qd, self._pma, pas)
        finish(task, M, g, pas, cq, v, out)
        return U


def from_spec(spec):
    """Build the integral model from the nested `model` namespace (see `params.read_spec`)."""
    return IntegralModel(read_spec(spec))
