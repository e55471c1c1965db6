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
K, ``C`` from M's Christoffel symbols, gravity is exact. One compiled call, ``cog_run(arm, memory,
...)`` with the model's `data.Arm` and workspace block, fills everything.
"""

import numpy as np

from continuum_ctrl.models.continuum.data import layout
from continuum_ctrl.models.continuum.kinematics import (chain, cx, rotate_matrix,
                                                        rotate_tensor, section_cog,
                                                        section_rotation)
from continuum_ctrl.models.continuum.model import (add_damping, ContinuumModel, factor, finish,
                                                   forward_factored, passive)
from continuum_ctrl.models.continuum.modes import CORIOLIS, CQ_ALONE, MASS, MASS_DERIVATIVE
from continuum_ctrl.models.continuum.params import read_spec
from continuum_ctrl.models.continuum.terms import (add_gravity, add_point_term, add_rigid_term,
                                                   add_term, angular_jacobian, angular_rate,
                                                   COLUMN0, column_sum, coriolis_from_parts,
                                                   cumulative_rates, local_rate, point_jacobian,
                                                   point_rate)
from continuum_ctrl.numerics.jit import compiled, entry_point


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
def cog_evaluate(arm, data, q, qd, mode):
    """
    Fill ``data.sums``: M, g and by `mode` C and ``cq = C qd``, dM or cq alone.

    `mode` (modes.py): CORIOLIS gives C and cq, MASS_DERIVATIVE dM, CQ_ALONE cq.

    Returns ``U_g`` [J]. `arm`: the `data.Arm`; `data`: the model's `data.ContinuumData`.
    """
    n = arm.length.shape[0]
    N = 3 * n
    beta, ch, body, sums, tw = arm.beta, data.chain, data.body, data.sums, data.terms
    J, JW, JO, dJ, dJW, dJO = body.J, body.JW, body.JO, body.dJ, body.dJW, body.dJO
    x, bbar, wI, ones, pbar, dpw, d2pw = (body.x, body.bbar, body.wI, body.ones, body.p,
                                          body.dpw, body.d2pw)
    om, v0, dom, dv0, Wc, Jd = ch.om, ch.v0, ch.dom, ch.dv0, body.Wc, body.Jd
    M, Md, C, cq, g = sums.M, sums.Md, sums.C, sums.cq, sums.g
    deriv = mode != MASS
    rates = mode == CORIOLIS or mode == CQ_ALONE     # C or C qd from O(N) Jacobian rates
    chain(arm, q, ch, data.section, deriv)
    shaped_w = beta[3] != 1.0 or beta[4] != 1.0 or beta[5] != 1.0
    cq[:] = 0.0
    if rates:
        cumulative_rates(om, qd, n, Wc)
    M[:] = 0.0
    g[:] = 0.0
    if mode == CORIOLIS:                # general terms: C through Md and P
        sums.Md[:] = 0.0
        sums.P[:] = 0.0
    if mode == MASS_DERIVATIVE:
        sums.dM[:] = 0.0
    U = 0.0
    for i in range(n):
        nu = 3 * i
        Ni = nu + 3
        m = arm.mass[i]
        qi = q[nu:Ni]
        B = ch.Rb[i]
        section_cog(arm.length[i], arm.radius[i], qi, pbar, body.dp, body.d2p, data.section)
        for c in range(3):
            bbar[c] = B[c, 0] * pbar[0] + B[c, 1] * pbar[1] + B[c, 2] * pbar[2]
            x[c] = ch.ob[i, c] + bbar[c]
        rotate_matrix(B, body.dp, dpw)
        if deriv:
            rotate_tensor(B, body.d2p, d2pw)
        point_jacobian(i, x, dpw, d2pw, om, v0, dom, dv0, mode == MASS_DERIVATIVE, J, dJ)
        U += add_gravity(m, arm.gravity, x, J, Ni, g)
        if rates:
            point_rate(i, x, J, om, dom, dv0, d2pw, qd, Wc, Jd)
            add_point_term(J, Jd, COLUMN0, Ni, m, qd, mode, M, Md, cq)
        else:
            add_term((J, dJ, COLUMN0, Ni), (J, dJ, COLUMN0, Ni), ones, 0.5 * m, qd, Ni, mode,
                     sums, tw)
        if beta[0] != 1.0 or beta[1] != 1.0 or beta[2] != 1.0:
            cross_term = nu > 0 and beta[1] != beta[0]
            relative_jacobian(i, bbar, J, d2pw, om, dom,
                              mode == MASS_DERIVATIVE or (deriv and cross_term), JW, dJW)
            if beta[0] != 1.0:          # m/2 (bv1 - 1) |d bbar/dt|^2
                if rates:
                    relative_rate(i, bbar, JW, om, dom, d2pw, qd, Wc, Jd)
                    add_point_term(JW, Jd, COLUMN0, Ni, m * (beta[0] - 1.0), qd, mode, M, Md, cq)
                else:
                    add_term((JW, dJW, COLUMN0, Ni), (JW, dJW, COLUMN0, Ni), ones,
                             0.5 * m * (beta[0] - 1.0), qd, Ni, mode, sums, tw)
            if cross_term:              # m (bv2 - bv1) (W x bbar).cbar
                add_term((JW, dJW, COLUMN0, nu), (JW, dJW, nu, Ni), ones, m * (beta[1] - beta[0]),
                         qd, Ni, mode, sums, tw)
            if beta[2] != beta[0]:      # m/2 (bv3 - bv1) |cbar|^2: a local point energy
                if rates:
                    local_rate(i, d2pw, qd, Jd)
                    add_point_term(JW, Jd, nu, Ni, m * (beta[2] - beta[0]), qd, mode, M, Md, cq)
                else:
                    add_term((JW, dJW, nu, Ni), (JW, dJW, nu, Ni), ones,
                             0.5 * m * (beta[2] - beta[0]), qd, Ni, mode, sums, tw)
        section_rotation(arm.radius[i], qi, 0.5, body.R, body.kap, body.dkap, data.section)
        angular_jacobian(i, B, body.R, body.kap, body.dkap, om, dom,
                         mode == MASS_DERIVATIVE or (deriv and shaped_w), JO, dJO, body.Rw,
                         body.omt)
        r2 = arm.radius[i] * arm.radius[i]
        wI[0] = wI[1] = 0.25 * m * r2
        wI[2] = 0.5 * m * r2
        if rates:
            angular_rate(i, body.Rw, body.R, body.omt, body.kap, body.dkap, dom, qd, Jd)
            add_rigid_term(JO, Jd, Ni, wI, qd, mode, M, Md, cq, tw.b)
        else:
            add_term((JO, dJO, COLUMN0, Ni), (JO, dJO, COLUMN0, Ni), wI, 0.5, qd, Ni, mode,
                     sums, tw)
        if beta[5] != 1.0:
            add_term((JO, dJO, nu, Ni), (JO, dJO, nu, Ni), wI, 0.5 * (beta[5] - 1.0),
                     qd, Ni, mode, sums, tw)
        if nu > 0 and beta[3] != 1.0:
            add_term((JO, dJO, COLUMN0, nu), (JO, dJO, COLUMN0, nu), wI, 0.5 * (beta[3] - 1.0),
                     qd, Ni, mode, sums, tw)
        if nu > 0 and beta[4] != 1.0:
            add_term((JO, dJO, COLUMN0, nu), (JO, dJO, nu, Ni), wI, beta[4] - 1.0,
                     qd, Ni, mode, sums, tw)
    if mode == CORIOLIS:
        coriolis_from_parts(sums.Md, sums.P, C)
        for i in range(N):
            acc = 0.0
            for j in range(N):
                acc += C[i, j] * qd[j]
            cq[i] = acc
    return U


@compiled()
def cog_run(arm, memory, q, qd, mode, task, v):
    """
    Evaluate the CoG model, the passive forces and a `finish` task in one call; ``U_g``.

    `memory`: the model's workspace block, carved into its `data.ContinuumData` by `layout`.
    """
    data = layout(memory, arm.length.shape[0])[1]
    U = cog_evaluate(arm, data, q, qd, mode)
    finish(arm, data.sums, q, qd, task, v)
    return U


@compiled()
def cog_damped_steps(arm, memory, q, qd, forces, dt, hold, out, at, gain, y, kept, low, high,
                     gate):
    """
    Run ``forces.shape[0]`` implicit-damping Euler steps of `dt` s from `q`, `qd`.

    Each step as `models.integrators.implicit_damping_euler_step`, with ``forces[k]`` [N] held:
    ``(M + dt D) qdd = forces[k] - C qd - passive - g``, ``qd += dt qdd``, ``q += dt qd``;
    ``M``, ``g`` and ``C qd`` are evaluated every `hold` steps and held in between (and so is
    the factor of ``M + dt D``, D being constant), the passive forces every step. Fills `out`
    (2, n) with the final q [m] and qd [m/s]. Before step `at` (-1: none) the state takes a
    linear correction by the positions `y` (n,) with `gain` (k n, n),
    ``(q, qd) += gain (y - q)``, and is copied into `kept` (k, n), which may be `q` and `qd`
    (they are read first): an observer's update (control/observer.py; `correct`, whose
    `low`, `high` (n,) bound where a coordinate is off its end stops and `gate` (n,) the
    innovation the further rows take).
    """
    data = layout(memory, arm.length.shape[0])[1]
    sums = data.sums
    x, v = out[0], out[1]
    n = q.shape[0]
    for i in range(n):
        x[i] = q[i]
        v[i] = qd[i]
    for k in range(forces.shape[0]):
        if k == at:
            correct(x, v, gain, y, kept, low, high, gate)
        # calls: subscripted writes to a `layout` view, in the function that made it, were
        # not seen by the reads after them (Numba 0.68 without its runtime)
        if k % hold == 0:
            cog_evaluate(arm, data, x, v, CQ_ALONE)
            add_damping(sums.M, arm.pma, dt)
            factor(sums.M)
        passive(x, v, arm.pma, sums.passive)
        forward_factored(sums.M, sums.g, sums.passive, sums.cq, forces[k], sums.out)
        for i in range(n):
            v[i] += dt * sums.out[i]
            x[i] += dt * v[i]


@compiled()
def correct(x, v, gain, y, kept, low, high, gate):
    """
    ``(x, v) += gain (y - x)``, the result copied into the first rows of `kept` (k, n).

    `gain` (k n, n): its first 2n rows correct `x` and `v`, further rows the rows of `kept`
    after the second in place (an observer's force bias, control/observer.py), from the
    innovation of the coordinates whose sample lies within ``(low, high)`` (n,) only: one
    outside rests on its end stop (a PMA at its rest length), whose reaction the model
    lacks, and the bias learnt from it would push the prediction off once the PMA leaves.
    That innovation is clipped to ``[-gate, gate]`` (n,): a push moves the arm by far more
    than a slow model error does, and the bias learnt from it would outlast the push.
    """
    n = x.shape[0]
    innovation = kept[0]            # scratch: the result overwrites it
    for j in range(n):
        innovation[j] = (min(max(y[j] - x[j], -gate[j]), gate[j]) if low[j] < y[j] < high[j]
                         else 0.0)
    for i in range(2 * n, gain.shape[0]):
        change = 0.0
        for j in range(n):
            change += gain[i, j] * innovation[j]
        kept[i // n, i % n] += change
    for j in range(n):
        innovation[j] = y[j] - x[j]
    for i in range(n):
        dx, dv = 0.0, 0.0
        for j in range(n):
            dx += gain[i, j] * innovation[j]
            dv += gain[n + i, j] * innovation[j]
        x[i] += dx
        v[i] += dv
    for i in range(n):
        kept[0, i] = x[i]
        kept[1, i] = v[i]


class CogModel(ContinuumModel):
    """The CoG continuum model with energy-shaping coefficients ``spec.beta``."""

    kernel = staticmethod(cog_run)
    _damped_steps = None

    def for_thread(self):
        """Return this arm with a workspace of its own (see base), its steps not compiled yet."""
        model = super().for_thread()
        model._damped_steps = None
        return model

    def compiled_damped_steps(self):
        """Return the compiled `cog_damped_steps` on this model's data (see the base)."""
        if self._damped_steps is None:
            self._damped_steps = self._compile_damped_steps()
        return self._damped_steps

    def _compile_damped_steps(self):
        kernel = entry_point(cog_damped_steps, self.arm, self.memory, self._zero, self._zero,
                             np.zeros((1, self.n)), 1e-3, 1, np.zeros((2, self.n)), -1,
                             np.zeros((2 * self.n, self.n)), self._zero,
                             np.zeros((2, self.n)), self._zero, self._zero, self._zero)
        arm, memory = self.arm, self.memory

        def steps(q, qd, forces, dt, hold, out, at, gain, y, kept, low, high, gate):
            kernel(arm, memory, q, qd, forces, dt, hold, out, at, gain, y, kept, low, high,
                   gate)
        return steps

    @property
    def beta(self):
        """Energy-shaping coefficients ``(bv1, bv2, bv3, bw1, bw2, bw3)``, read-only (6,)."""
        return self.arm.beta


def from_spec(spec):
    """Build the CoG model from the nested `model` namespace (see `params.read_spec`)."""
    return CogModel(read_spec(spec))
