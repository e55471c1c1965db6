"""
`type: continuum_cog`: one disc at each section's CoG with energy shaping (contract section 5).

Section i's CoG is ``x = ob + bbar``, ``bbar = Rb pbar``; its world velocity splits into
``a + W x bbar`` (upstream joints) and ``cbar`` (own joints, the own-column part of x's
Jacobian). With ``beta = (bv1, bv2, bv3, bw1, bw2, bw3)`` the contract's kinetic energy is

    Kv = m/2 |xdot|^2 + m/2 (bv1 - 1)|W x bbar|^2 + m (bv2 - 1)(W x bbar).cbar
         + m/2 (bv3 - 1)|cbar|^2
       = m/2 |xdot|^2 + m/2 (bv1 - 1)|bbardot|^2 + m (bv2 - bv1)(W x bbar).cbar
         + m/2 (bv3 - bv1)|cbar|^2
    Kw = 1/2 |Om|_I^2 + 1/2 (bw1 - 1)|Om_W|_I^2 + (bw2 - 1) Om_W^T I Om_own
         + 1/2 (bw3 - 1)|Om_own|_I^2

where ``Om = Om_W + Om_own`` is the body angular velocity of the mid-arc frame
``Rhat = Rb R(1/2)`` split into its upstream part ``Rhat^T W`` and own part
``R(1/2)^T w_mid``, and ``I = m diag(r^2/4, r^2/4, r^2/2)``. This is the contract's
expression rearranged so that all betas = 1 leaves the plain disc-at-CoG terms only, and so
that the largest terms are energies of positions (``x``, ``bbar``) or of a rigid body,
whose Christoffel matrices have cheap closed forms (`terms.add_point_term`,
`terms.add_rigid_term`); the rest go through the general `terms.add_term`. ``M`` follows from
K, ``C`` from M's Christoffel symbols, gravity is exact. One compiled call fills everything.
"""

import numpy as np
from numba import njit

from continuum_ctrl.models.continuum.kinematics import (chain, cx, rotate_matrix,
                                                        rotate_tensor, section_cog,
                                                        section_rotation)
from continuum_ctrl.models.continuum.model import ContinuumModel
from continuum_ctrl.models.continuum.params import read_spec
from continuum_ctrl.models.continuum.terms import (add_point_term, add_rigid_term, add_term,
                                                   angular_jacobian,
                                                   coriolis_from_parts,
                                                   point_jacobian)


@njit(cache=True)
def relative_jacobian(sec, bbar, J, dJ, om, dom, deriv, JY, dJY):
    """
    Fill ``JY`` (N, 3), ``dJY`` (N, N, 3) of ``bbar = x - ob``, the CoG relative to the base.

    Upstream columns are ``om[l] x bbar`` (the velocity ``W x bbar``), own columns those of
    the CoG's point Jacobian `J` (the velocity ``cbar``).
    """
    nu = 3 * sec
    N = nu + 3
    b0, b1, b2 = bbar[0], bbar[1], bbar[2]
    for L in range(nu):
        JY[L, 0], JY[L, 1], JY[L, 2] = cx(om[L, 0], om[L, 1], om[L, 2], b0, b1, b2)
    JY[nu:N] = J[nu:N]
    if not deriv:
        return
    dJY[nu:N, :N] = dJ[nu:N, :N]
    for L in range(nu):
        sl = L // 3
        for k in range(N):
            sk = k // 3
            if k < nu:
                db = cx(om[k, 0], om[k, 1], om[k, 2], b0, b1, b2)
            else:
                db = (J[k, 0], J[k, 1], J[k, 2])
            if sk < sl:
                dw = cx(om[k, 0], om[k, 1], om[k, 2], om[L, 0], om[L, 1], om[L, 2])
            elif sk == sl:
                dw = (dom[L, k - 3 * sk, 0], dom[L, k - 3 * sk, 1], dom[L, k - 3 * sk, 2])
            else:
                dw = (0.0, 0.0, 0.0)
            t1 = cx(dw[0], dw[1], dw[2], b0, b1, b2)
            t2 = cx(om[L, 0], om[L, 1], om[L, 2], db[0], db[1], db[2])
            for c in range(3):
                dJY[L, k, c] = t1[c] + t2[c]


@njit(cache=True)
def cog_evaluate(length, radius, mass, offset, twist, beta, gravity, q, qd, mode, M, C, dM, g,
                 sv, sm, st, nv, nt, nnv, nn):
    """
    Fill M, g and (mode 1) C or (mode 2) dM of the CoG model; return ``U_g`` [J].

    The last seven arguments are the workspace from `terms.new_workspace`.
    """
    n = length.shape[0]
    Rb, ob, om, v0, dom, dv0 = nt[0, :n], nv[0, :n], nv[1], nv[2], nt[1], nt[2]
    J, JW, JO, work = nv[3], nv[4], nv[5], nv[6:12]
    dJ, dJW, dJO, Md, P = nnv[0], nnv[1], nnv[2], nn[0], nn[1]
    x, bbar, wI, ones, pbar = sv[20, :3], sv[21, :3], sv[22, :3], sv[23, :3], sv[24, :3]
    dpbar, dpw, Rl, kap = sm[12], sm[13], sm[14], sm[15]
    d2pbar, d2pw, dkap = st[10], st[11], st[12]
    ones[:] = 1.0
    chain(length, radius, offset, twist, q, Rb, ob, om, v0, dom, dv0, sv, sm, st)
    deriv = mode != 0
    M[:] = 0.0
    g[:] = 0.0
    Md[:] = 0.0
    P[:] = 0.0
    if mode == 2:
        dM[:] = 0.0
    U = 0.0
    for i in range(n):
        nu = 3 * i
        Ni = nu + 3
        m = mass[i]
        qi = q[nu:Ni]
        B = Rb[i]
        section_cog(length[i], radius[i], qi, pbar, dpbar, d2pbar, sv, sm, st)
        for c in range(3):
            bbar[c] = B[c, 0] * pbar[0] + B[c, 1] * pbar[1] + B[c, 2] * pbar[2]
            x[c] = ob[i, c] + bbar[c]
            U -= m * gravity[c] * x[c]
        rotate_matrix(B, dpbar, dpw)
        rotate_tensor(B, d2pbar, d2pw)
        point_jacobian(i, x, dpw, d2pw, om, v0, dom, dv0, deriv, J, dJ)
        for L in range(Ni):
            g[L] -= m * (J[L, 0] * gravity[0] + J[L, 1] * gravity[1] + J[L, 2] * gravity[2])
        if mode == 1:
            add_point_term(J, dJ, Ni, m, qd, M, Md, work)
        else:
            add_term(J, dJ, 0, Ni, J, dJ, 0, Ni, ones, 0.5 * m, qd, Ni, mode, M, Md, P, dM,
                     work)
        if beta[0] != 1.0 or beta[1] != 1.0 or beta[2] != 1.0:
            relative_jacobian(i, bbar, J, dJ, om, dom, deriv, JW, dJW)
            if beta[0] != 1.0:          # m/2 (bv1 - 1) |d bbar/dt|^2
                if mode == 1:
                    add_point_term(JW, dJW, Ni, m * (beta[0] - 1.0), qd, M, Md, work)
                else:
                    add_term(JW, dJW, 0, Ni, JW, dJW, 0, Ni, ones, 0.5 * m * (beta[0] - 1.0),
                             qd, Ni, mode, M, Md, P, dM, work)
            if nu > 0 and beta[1] != beta[0]:   # m (bv2 - bv1) (W x bbar).cbar
                add_term(JW, dJW, 0, nu, JW, dJW, nu, Ni, ones, m * (beta[1] - beta[0]),
                         qd, Ni, mode, M, Md, P, dM, work)
            if beta[2] != beta[0]:      # m/2 (bv3 - bv1) |cbar|^2
                add_term(JW, dJW, nu, Ni, JW, dJW, nu, Ni, ones, 0.5 * m * (beta[2] - beta[0]),
                         qd, Ni, mode, M, Md, P, dM, work)
        section_rotation(radius[i], qi, 0.5, Rl, kap, dkap, sv, sm, st)
        angular_jacobian(i, B, Rl, kap, dkap, om, dom, deriv, JO, dJO, sm, nv)
        r2 = radius[i] * radius[i]
        wI[0] = wI[1] = 0.25 * m * r2
        wI[2] = 0.5 * m * r2
        if mode == 1:
            add_rigid_term(JO, dJO, Ni, wI, qd, M, Md, work)
        else:
            add_term(JO, dJO, 0, Ni, JO, dJO, 0, Ni, wI, 0.5, qd, Ni, mode, M, Md, P, dM, work)
        if beta[5] != 1.0:
            add_term(JO, dJO, nu, Ni, JO, dJO, nu, Ni, wI, 0.5 * (beta[5] - 1.0),
                     qd, Ni, mode, M, Md, P, dM, work)
        if nu > 0 and beta[3] != 1.0:
            add_term(JO, dJO, 0, nu, JO, dJO, 0, nu, wI, 0.5 * (beta[3] - 1.0),
                     qd, Ni, mode, M, Md, P, dM, work)
        if nu > 0 and beta[4] != 1.0:
            add_term(JO, dJO, 0, nu, JO, dJO, nu, Ni, wI, beta[4] - 1.0,
                     qd, Ni, mode, M, Md, P, dM, work)
    if mode == 1:
        coriolis_from_parts(Md, P, C)
    return U


class CogModel(ContinuumModel):
    """The CoG continuum model with energy-shaping coefficients ``spec.beta``."""

    def __init__(self, spec):
        super().__init__(spec)
        self.beta = np.ascontiguousarray(spec.beta, dtype=float)

    def _evaluate(self, q, qd, mode, M, C, dM, g):
        return cog_evaluate(*self._geom, self.beta, self._gravity, q, qd, mode, M, C, dM, g,
                            *self._ws)


def from_spec(spec):
    """Build the CoG model from the nested `model` namespace (see `params.read_spec`)."""
    return CogModel(read_spec(spec))
