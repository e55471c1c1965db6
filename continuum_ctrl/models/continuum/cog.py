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

from continuum_ctrl.models.continuum.jit import compiled
from continuum_ctrl.models.continuum.kinematics import (chain, cx, rotate_matrix,
                                                        rotate_tensor, section_cog,
                                                        section_rotation)
from continuum_ctrl.models.continuum.model import ContinuumModel, finish, passive
from continuum_ctrl.models.continuum.params import read_spec
from continuum_ctrl.models.continuum.terms import (add_gravity, add_point_term, add_rigid_term,
                                                   add_term, angular_jacobian, angular_rate,
                                                   column_sum, coriolis_from_parts,
                                                   cumulative_rates, local_rate, point_jacobian,
                                                   point_rate)


@compiled()
def relative_jacobian(sec, bbar, J, d2pw, om, dom, deriv, JY, dJY):
    """
    Fill ``JY`` (N, 3), ``dJY`` (N, N, 3) of ``bbar = x - ob``, the CoG relative to the base.

    Upstream columns are ``om[l] x bbar`` (the velocity ``W x bbar``), own columns those of
    the CoG's point Jacobian `J` (the velocity ``cbar``); `d2pw` as for `point_jacobian`.
    """
    nu = 3 * sec
    N = nu + 3
    b0, b1, b2 = bbar[0], bbar[1], bbar[2]
    for L in range(nu):
        JY[L, 0], JY[L, 1], JY[L, 2] = cx(om[L, 0], om[L, 1], om[L, 2], b0, b1, b2)
    for L in range(nu, N):
        for c in range(3):
            JY[L, c] = J[L, c]
    if not deriv:
        return
    for L in range(nu, N):
        for k in range(N):
            if k < nu:
                dJY[L, k, 0], dJY[L, k, 1], dJY[L, k, 2] = cx(om[k, 0], om[k, 1], om[k, 2],
                                                              J[L, 0], J[L, 1], J[L, 2])
            else:
                for c in range(3):
                    dJY[L, k, c] = d2pw[c, L - nu, k - nu]
    for L in range(nu):
        sl = L // 3
        for k in range(N):
            sk = k // 3
            if sk < sl:
                dw = cx(om[k, 0], om[k, 1], om[k, 2], om[L, 0], om[L, 1], om[L, 2])
            elif sk == sl:
                dw = (dom[L, k - 3 * sk, 0], dom[L, k - 3 * sk, 1], dom[L, k - 3 * sk, 2])
            else:
                dw = (0.0, 0.0, 0.0)
            t1 = cx(dw[0], dw[1], dw[2], b0, b1, b2)
            t2 = cx(om[L, 0], om[L, 1], om[L, 2], JY[k, 0], JY[k, 1], JY[k, 2])
            for c in range(3):
                dJY[L, k, c] = t1[c] + t2[c]


@compiled()
def relative_rate(sec, bbar, JY, om, dom, d2pw, qd, Wc, Jd):
    """
    Fill ``Jd[l] = sum_k dJY[l, k] qd_k`` of `relative_jacobian` in O(N), without ``dJY``.

    Upstream rows: ``(Wc[s_l] x om_l + sum_b dom[l, b] qd_b) x bbar + om_l x bbardot``.
    """
    nu = 3 * sec
    N = nu + 3
    y0, y1, y2 = column_sum(JY, qd, 0, N)
    for L in range(nu):
        s = L // 3
        d0, d1, d2 = cx(Wc[s, 0], Wc[s, 1], Wc[s, 2], om[L, 0], om[L, 1], om[L, 2])
        for b in range(3):
            d0 += dom[L, b, 0] * qd[3 * s + b]
            d1 += dom[L, b, 1] * qd[3 * s + b]
            d2 += dom[L, b, 2] * qd[3 * s + b]
        t1 = cx(d0, d1, d2, bbar[0], bbar[1], bbar[2])
        t2 = cx(om[L, 0], om[L, 1], om[L, 2], y0, y1, y2)
        for c in range(3):
            Jd[L, c] = t1[c] + t2[c]
    local_rate(sec, d2pw, qd, Jd)
    for a in range(3):
        L = nu + a
        t = cx(Wc[sec, 0], Wc[sec, 1], Wc[sec, 2], JY[L, 0], JY[L, 1], JY[L, 2])
        for c in range(3):
            Jd[L, c] += t[c]


@compiled()
def cog_evaluate(length, radius, mass, offset, twist, beta, gravity, q, qd, mode, M, C, cq, dM, g,
                 sv, sm, st, nv, nt, nnv, nn):
    """
    Fill M, g and by mode C and ``cq = C qd`` (1), dM (2) or cq alone (3); return ``U_g`` [J].

    The arguments after `g` are the workspace from `terms.new_workspace` and `nn`, two (N, N)
    work matrices.
    """
    n = length.shape[0]
    N = 3 * n
    Rb, ob, om, v0, dom, dv0 = nt[0, :n], nv[0, :n], nv[1], nv[2], nt[1], nt[2]
    J, JW, JO, work = nv[3], nv[4], nv[5], nv[6:12]
    dJ, dJW, dJO, Md, P = nnv[0], nnv[1], nnv[2], nn[0], nn[1]
    x, bbar, wI, ones, pbar = sv[20, :3], sv[21, :3], sv[22, :3], sv[23, :3], sv[24, :3]
    dpbar, dpw, Rl, kap = sm[12], sm[13], sm[14], sm[15]
    d2pbar, d2pw, dkap = st[10], st[11], st[12]
    ones[:] = 1.0
    Wc, Jd = nv[13], nv[14]
    chain(length, radius, offset, twist, q, Rb, ob, om, v0, dom, dv0, sv, sm, st)
    deriv = mode != 0
    rates = mode == 1 or mode == 3     # C or C qd from O(N) Jacobian rates
    shaped_w = beta[3] != 1.0 or beta[4] != 1.0 or beta[5] != 1.0
    cq[:] = 0.0
    if rates:
        cumulative_rates(om, qd, n, Wc)
    M[:] = 0.0
    g[:] = 0.0
    if mode == 1:                       # general terms: C through Md and P
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
        rotate_matrix(B, dpbar, dpw)
        rotate_tensor(B, d2pbar, d2pw)
        point_jacobian(i, x, dpw, d2pw, om, v0, dom, dv0, mode == 2, J, dJ)
        U += add_gravity(m, gravity, x, J, Ni, g)
        if rates:
            point_rate(i, x, J, om, dom, dv0, d2pw, qd, Wc, Jd)
            add_point_term(J, Jd, 0, Ni, m, qd, mode, M, Md, cq)
        else:
            add_term(J, dJ, 0, Ni, J, dJ, 0, Ni, ones, 0.5 * m, qd, Ni, mode, M, Md, P, dM, cq,
                     work)
        if beta[0] != 1.0 or beta[1] != 1.0 or beta[2] != 1.0:
            cross_term = nu > 0 and beta[1] != beta[0]
            relative_jacobian(i, bbar, J, d2pw, om, dom, mode == 2 or (deriv and cross_term),
                              JW, dJW)
            if beta[0] != 1.0:          # m/2 (bv1 - 1) |d bbar/dt|^2
                if rates:
                    relative_rate(i, bbar, JW, om, dom, d2pw, qd, Wc, Jd)
                    add_point_term(JW, Jd, 0, Ni, m * (beta[0] - 1.0), qd, mode, M, Md, cq)
                else:
                    add_term(JW, dJW, 0, Ni, JW, dJW, 0, Ni, ones, 0.5 * m * (beta[0] - 1.0),
                             qd, Ni, mode, M, Md, P, dM, cq, work)
            if cross_term:              # m (bv2 - bv1) (W x bbar).cbar
                add_term(JW, dJW, 0, nu, JW, dJW, nu, Ni, ones, m * (beta[1] - beta[0]),
                         qd, Ni, mode, M, Md, P, dM, cq, work)
            if beta[2] != beta[0]:      # m/2 (bv3 - bv1) |cbar|^2: a local point energy
                if rates:
                    local_rate(i, d2pw, qd, Jd)
                    add_point_term(JW, Jd, nu, Ni, m * (beta[2] - beta[0]), qd, mode, M, Md, cq)
                else:
                    add_term(JW, dJW, nu, Ni, JW, dJW, nu, Ni, ones,
                             0.5 * m * (beta[2] - beta[0]), qd, Ni, mode, M, Md, P, dM, cq, work)
        section_rotation(radius[i], qi, 0.5, Rl, kap, dkap, sv, sm, st)
        angular_jacobian(i, B, Rl, kap, dkap, om, dom, mode == 2 or (deriv and shaped_w),
                         JO, dJO, sm, nv)
        r2 = radius[i] * radius[i]
        wI[0] = wI[1] = 0.25 * m * r2
        wI[2] = 0.5 * m * r2
        if rates:
            angular_rate(i, sm[11], Rl, nv[12], kap, dkap, dom, qd, Jd)
            add_rigid_term(JO, Jd, Ni, wI, qd, mode, M, Md, cq, work)
        else:
            add_term(JO, dJO, 0, Ni, JO, dJO, 0, Ni, wI, 0.5, qd, Ni, mode, M, Md, P, dM, cq, work)
        if beta[5] != 1.0:
            add_term(JO, dJO, nu, Ni, JO, dJO, nu, Ni, wI, 0.5 * (beta[5] - 1.0),
                     qd, Ni, mode, M, Md, P, dM, cq, work)
        if nu > 0 and beta[3] != 1.0:
            add_term(JO, dJO, 0, nu, JO, dJO, 0, nu, wI, 0.5 * (beta[3] - 1.0),
                     qd, Ni, mode, M, Md, P, dM, cq, work)
        if nu > 0 and beta[4] != 1.0:
            add_term(JO, dJO, 0, nu, JO, dJO, nu, Ni, wI, beta[4] - 1.0,
                     qd, Ni, mode, M, Md, P, dM, cq, work)
    if mode == 1:
        coriolis_from_parts(Md, P, C)
        for i in range(N):
            acc = 0.0
            for j in range(N):
                acc += C[i, j] * qd[j]
            cq[i] = acc
    return U


@compiled()
def cog_run(geom, glob, pma, q, qd, mode, task, v, mc, dM, vecs, sv, sm, st, nv, nt, nnv):
    """
    Evaluate the CoG model, the passive forces and a `finish` task in one call.

    `geom` rows: length, radius, mass, offset, twist; `glob`: beta (6), gravity (3); `mc`:
    M, C and two work matrices; `vecs`: g, passive, out, C qd. Returns ``U_g`` [J].
    """
    U = cog_evaluate(geom[0], geom[1], geom[2], geom[3], geom[4], glob[:6], glob[6:], q, qd,
                     mode, mc[0], mc[1], vecs[3], dM, vecs[0], sv, sm, st, nv, nt, nnv, mc[2:])
    passive(q, qd, pma, vecs[1])
    finish(task, mc[0], vecs[0], vecs[1], vecs[3], v, vecs[2])
    return U


class CogModel(ContinuumModel):
    """The CoG continuum model with energy-shaping coefficients ``spec.beta``."""

    def __init__(self, spec):
        super().__init__(spec)
        self.beta = np.ascontiguousarray(spec.beta, dtype=float)
        self._glob = np.concatenate([self.beta, spec.gravity]).astype(float)
        self._head = (self._geom, self._glob, self._pma)
        self._tail = (self._mc, self._dM, self._vecs) + tuple(self._ws)

    def _kernel(self, q, qd, mode, task, v):
        return cog_run(*self._head, q, qd, mode, task, v, *self._tail)


def from_spec(spec):
    """Build the CoG model from the nested `model` namespace (see `params.read_spec`)."""
    return CogModel(read_spec(spec))
