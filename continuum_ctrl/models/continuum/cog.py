"""
`type: continuum_cog`: one disc at each section's CoG with energy shaping (contract section 5).

Section i's CoG is ``x = ob + bbar``, ``bbar = Rb pbar``; its world velocity splits into
``a + W x bbar`` (upstream joints) and ``cbar`` (own joints, the own-column part of x's
Jacobian). With ``beta = (bv1, bv2, bv3, bw1, bw2, bw3)`` the contract's kinetic energy is

    Kv = m/2 |xdot|^2 + m/2 (bv1 - 1)|W x bbar|^2 + m (bv2 - 1)(W x bbar).cbar
         + m/2 (bv3 - 1)|cbar|^2
    Kw = 1/2 |Om|_I^2 + 1/2 (bw1 - 1)|Om_W|_I^2 + (bw2 - 1) Om_W^T I Om_own
         + 1/2 (bw3 - 1)|Om_own|_I^2

where ``Om = Om_W + Om_own`` is the body angular velocity of the mid-arc frame
``Rhat = Rb R(1/2)`` split into its upstream part ``Rhat^T W`` and own part
``R(1/2)^T w_mid``, and ``I = m diag(r^2/4, r^2/4, r^2/2)``. This is the contract's
expression rearranged so that all betas = 1 leaves the plain disc-at-CoG terms only.
``M`` follows from K, ``C`` from M's Christoffel symbols (exact, via `terms.add_term`),
gravity is exact. One compiled call fills everything.
"""

import numpy as np
from numba import njit

from continuum_ctrl.models.continuum.kinematics import (chain, cross, rotate_columns,
                                                        section_cog, section_rotation)
from continuum_ctrl.models.continuum.model import ContinuumModel
from continuum_ctrl.models.continuum.params import read_spec
from continuum_ctrl.models.continuum.terms import (add_term, angular_jacobian,
                                                   coriolis_from_parts, point_jacobian)


@njit(cache=True)
def arm_jacobian(sec, bbar, J, om, dom, deriv, JW, dJW):
    """
    Fill ``JW[l] = om[l] x bbar`` (the velocity ``W x bbar``) for the upstream joints.

    `J` is the CoG's point Jacobian, whose own columns are ``d bbar/dq`` of the own joints.
    """
    nu = 3 * sec
    N = nu + 3
    for L in range(nu):
        cross(om[L], bbar, JW[L])
    if not deriv:
        return
    db = np.empty(3)
    dw = np.empty(3)
    t1 = np.empty(3)
    t2 = np.empty(3)
    for L in range(nu):
        sl = L // 3
        for k in range(N):
            sk = k // 3
            if k < nu:
                cross(om[k], bbar, db)
            else:
                db[:] = J[k]
            if sk < sl:
                cross(om[k], om[L], dw)
            elif sk == sl:
                dw[:] = dom[L, k - 3 * sk]
            else:
                dw[:] = 0.0
            cross(dw, bbar, t1)
            cross(om[L], db, t2)
            for c in range(3):
                dJW[L, k, c] = t1[c] + t2[c]


@njit(cache=True)
def cog_evaluate(length, radius, mass, offset, twist, beta, gravity, q, qd, mode, M, C, dM, g):
    """Fill M, g and (mode 1) C or (mode 2) dM of the CoG model; return ``U_g`` [J]."""
    n = length.shape[0]
    N = 3 * n
    Rb = np.empty((n, 3, 3))
    ob = np.empty((n, 3))
    om = np.empty((N, 3))
    v0 = np.empty((N, 3))
    dom = np.empty((N, 3, 3))
    dv0 = np.empty((N, 3, 3))
    chain(length, radius, offset, twist, q, Rb, ob, om, v0, dom, dv0)
    deriv = mode != 0
    M[:] = 0.0
    g[:] = 0.0
    Md = np.zeros((N, N))
    P = np.zeros((N, N))
    if mode == 2:
        dM[:] = 0.0
    work = np.empty((6, N, 3))
    J = np.empty((N, 3))
    dJ = np.empty((N, N, 3))
    JW = np.empty((N, 3))
    dJW = np.empty((N, N, 3))
    JO = np.empty((N, 3))
    dJO = np.empty((N, N, 3))
    pbar = np.empty(3)
    dpbar = np.empty((3, 3))
    d2pbar = np.empty((3, 3, 3))
    dpw = np.empty((3, 3))
    d2pw = np.empty((3, 3, 3))
    Rl = np.empty((3, 3))
    kap = np.empty((3, 3))
    dkap = np.empty((3, 3, 3))
    ones = np.ones(3)
    wI = np.empty(3)
    bbar = np.empty(3)
    x = np.empty(3)
    U = 0.0
    for i in range(n):
        nu = 3 * i
        Ni = nu + 3
        m = mass[i]
        qi = q[nu:Ni]
        B = Rb[i]
        section_cog(length[i], radius[i], qi, pbar, dpbar, d2pbar)
        for c in range(3):
            bbar[c] = B[c, 0] * pbar[0] + B[c, 1] * pbar[1] + B[c, 2] * pbar[2]
            x[c] = ob[i, c] + bbar[c]
            U -= m * gravity[c] * x[c]
        rotate_columns(B, dpbar, dpw)
        rotate_columns(B, d2pbar, d2pw)
        point_jacobian(i, x, dpw, d2pw, om, v0, dom, dv0, deriv, J, dJ)
        for L in range(Ni):
            g[L] -= m * (J[L, 0] * gravity[0] + J[L, 1] * gravity[1] + J[L, 2] * gravity[2])
        add_term(J, dJ, 0, Ni, J, dJ, 0, Ni, ones, 0.5 * m, qd, Ni, mode, M, Md, P, dM, work)
        if beta[2] != 1.0:
            add_term(J, dJ, nu, Ni, J, dJ, nu, Ni, ones, 0.5 * m * (beta[2] - 1.0),
                     qd, Ni, mode, M, Md, P, dM, work)
        if nu > 0 and (beta[0] != 1.0 or beta[1] != 1.0):
            arm_jacobian(i, bbar, J, om, dom, deriv, JW, dJW)
            if beta[0] != 1.0:
                add_term(JW, dJW, 0, nu, JW, dJW, 0, nu, ones, 0.5 * m * (beta[0] - 1.0),
                         qd, Ni, mode, M, Md, P, dM, work)
            if beta[1] != 1.0:
                add_term(JW, dJW, 0, nu, J, dJ, nu, Ni, ones, m * (beta[1] - 1.0),
                         qd, Ni, mode, M, Md, P, dM, work)
        section_rotation(radius[i], qi, 0.5, Rl, kap, dkap)
        angular_jacobian(i, B, Rl, kap, dkap, om, dom, deriv, JO, dJO)
        r2 = radius[i] * radius[i]
        wI[0] = wI[1] = 0.25 * m * r2
        wI[2] = 0.5 * m * r2
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
        return cog_evaluate(*self._geom, self.beta, self._gravity, q, qd, mode, M, C, dM, g)


def from_spec(spec):
    """Build the CoG model from the nested `model` namespace (see `params.read_spec`)."""
    return CogModel(read_spec(spec))
