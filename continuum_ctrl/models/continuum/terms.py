"""
Kinetic-energy terms of a continuum chain: body Jacobians and their exact q-derivatives.

A body is a point (CoG or disc centre, world velocity ``J qd``) or an orientation (body-frame
angular velocity ``JO qd``) carried by section ``sec``. Its N = 3 sec + 3 columns are the joints
up to and including its own section. Layouts: ``J[l]`` (3,) is column l; ``dJ[l, k]`` (3,) is
``dJ[l]/dq_k``.

A term is ``coef * uA^T diag(w) uB`` with ``uA = sum_(i in A) JA[i] qd_i`` over a column range
A (and likewise B); an operand is ``(J, dJ, first, stop)``, columns first..stop-1. The
functions write named buffers of `data.py`: the `Body` arrays they are given, the `TermWork`
``tw`` and the `Sums` ``sums`` they add to. `add_term` adds its contribution to ``M``, and
either to ``dM`` or to the two pieces of the Christoffel matrix: ``Mdot`` and
``P[i, j] = d(M qd)_i / dq_j``, from which ``C = (Mdot + P - P^T)/2`` (`coriolis_from_parts`),
the same as ``c_ijk qd_k`` of contract section 4 without forming ``dM``.
"""

import numpy as np

from continuum_ctrl.models.continuum.kinematics import cx
from continuum_ctrl.models.continuum.modes import CORIOLIS, CQ_ALONE, MASS_DERIVATIVE
from continuum_ctrl.numerics.jit import compiled

#: column 0, where an operand's range starts at the first joint (int64: numerics.jit, no
#: literal arguments from compiled callers)
COLUMN0 = np.int64(0)


@compiled()
def point_jacobian(sec, x, dpw, d2pw, om, v0, dom, dv0, deriv, J, dJ):
    """
    Fill ``J`` (N, 3) and, if `deriv`, ``dJ`` (N, N, 3) of the world point `x` [m].

    `dpw`, `d2pw`: first and second q-derivatives of x in the own section's joints, (3, 3) and
    (3, 3, 3), world frame. `om`, `v0`, `dom`, `dv0`: joint motion columns of the `Chain`.
    """
    nu = 3 * sec
    N = nu + 3
    x0, x1, x2 = x[0], x[1], x[2]
    for L in range(nu):
        t = cx(om[L, 0], om[L, 1], om[L, 2], x0, x1, x2)
        for c in range(3):
            J[L, c] = v0[L, c] + t[c]
    for a in range(3):
        for c in range(3):
            J[nu + a, c] = dpw[c, a]
    if not deriv:
        return
    for L in range(N):
        sl = L // 3
        for k in range(N):
            sk = k // 3
            if sk < sl:
                t = cx(om[k, 0], om[k, 1], om[k, 2], J[L, 0], J[L, 1], J[L, 2])
            elif sk > sl:
                t = cx(om[L, 0], om[L, 1], om[L, 2], J[k, 0], J[k, 1], J[k, 2])
            elif sl < sec:
                b = k - 3 * sk
                t1 = cx(dom[L, b, 0], dom[L, b, 1], dom[L, b, 2], x0, x1, x2)
                t2 = cx(om[L, 0], om[L, 1], om[L, 2], J[k, 0], J[k, 1], J[k, 2])
                t = (dv0[L, b, 0] + t1[0] + t2[0], dv0[L, b, 1] + t1[1] + t2[1],
                     dv0[L, b, 2] + t1[2] + t2[2])
            else:
                t = (d2pw[0, L - nu, k - nu], d2pw[1, L - nu, k - nu], d2pw[2, L - nu, k - nu])
            dJ[L, k, 0], dJ[L, k, 1], dJ[L, k, 2] = t


@compiled()
def angular_jacobian(sec, Rb, Rloc, kap, dkap, om, dom, deriv, JO, dJO, Rw, omt):
    """
    Fill ``JO`` (N, 3) and, if `deriv`, ``dJO`` (N, N, 3): body angular velocity of a frame.

    The frame is ``Rb @ Rloc`` on section `sec`; `kap`, `dkap` are the space angular Jacobian
    of `Rloc` in the section base frame and its derivative (from `section_rotation`). Also
    fills the frame's world orientation `Rw` (3, 3) and world angular columns `omt` (N, 3),
    which `angular_rate` reads.
    """
    nu = 3 * sec
    N = nu + 3
    for r in range(3):
        for c in range(3):
            Rw[r, c] = Rb[r, 0] * Rloc[0, c] + Rb[r, 1] * Rloc[1, c] + Rb[r, 2] * Rloc[2, c]
    for L in range(nu):
        for c in range(3):
            omt[L, c] = om[L, c]
    for a in range(3):
        for c in range(3):
            omt[nu + a, c] = Rb[c, 0] * kap[0, a] + Rb[c, 1] * kap[1, a] + Rb[c, 2] * kap[2, a]
    for L in range(N):
        for c in range(3):
            JO[L, c] = Rw[0, c] * omt[L, 0] + Rw[1, c] * omt[L, 1] + Rw[2, c] * omt[L, 2]
    if not deriv:
        return
    for L in range(N):
        sl = L // 3
        for k in range(N):
            sk = k // 3
            if sk < sl:
                dJO[L, k, 0] = dJO[L, k, 1] = dJO[L, k, 2] = 0.0
                continue
            R = Rw
            if sk > sl:
                t = cx(omt[L, 0], omt[L, 1], omt[L, 2], omt[k, 0], omt[k, 1], omt[k, 2])
            elif sl < sec:
                b = k - 3 * sk
                t1 = cx(omt[k, 0], omt[k, 1], omt[k, 2], omt[L, 0], omt[L, 1], omt[L, 2])
                t = (dom[L, b, 0] - t1[0], dom[L, b, 1] - t1[1], dom[L, b, 2] - t1[2])
            else:
                a, b = L - nu, k - nu
                t1 = cx(kap[0, b], kap[1, b], kap[2, b], kap[0, a], kap[1, a], kap[2, a])
                t = (dkap[0, a, b] - t1[0], dkap[1, a, b] - t1[1], dkap[2, a, b] - t1[2])
                R = Rloc
            for c in range(3):
                dJO[L, k, c] = R[0, c] * t[0] + R[1, c] * t[1] + R[2, c] * t[2]


@compiled(inline='always')
def column_sum(J, qd, k0, k1):
    """Return ``sum_(k0 <= k < k1) J[k] qd_k`` as three floats: a velocity from columns of J."""
    a0, a1, a2 = 0.0, 0.0, 0.0
    for k in range(k0, k1):
        a0 += J[k, 0] * qd[k]
        a1 += J[k, 1] * qd[k]
        a2 += J[k, 2] * qd[k]
    return a0, a1, a2


@compiled(inline='always')
def _rates(J, dJ, a0, a1, N, qd, u, Jd, G):
    """``u = J qd``, ``Jd[i] = sum_k dJ[i, k] qd_k`` (i in A), ``G[j] = du/dq_j`` (j < N)."""
    u[:] = 0.0
    for i in range(a0, a1):
        for c in range(3):
            u[c] += J[i, c] * qd[i]
            acc = 0.0
            for k in range(N):
                acc += dJ[i, k, c] * qd[k]
            Jd[i, c] = acc
    for j in range(N):
        for c in range(3):
            acc = 0.0
            for i in range(a0, a1):
                acc += dJ[i, j, c] * qd[i]
            G[j, c] = acc


@compiled(inline='always')
def _term_cq(JA, a0, a1, JB, b0, b1, w, coef, qd, N, tw, cq):
    """
    Add a term's ``C qd`` to `cq` from the `_rates` of A and B in `tw`.

    ``(Md qd)_i = (P qd)_i = coef (Jd_i . W uB + J_i . W vB)`` on A (and A, B swapped on B),
    with ``vB = sum_(j in B) JdB[j] qd_j``; ``(P^T qd)_j = 2 coef (GA_j . W uB + GB_j . W uA)``.
    """
    JdA, GA, JdB, GB, uA, uB = tw.JdA, tw.GA, tw.JdB, tw.GB, tw.uA, tw.uB
    vA0, vA1, vA2 = column_sum(JdA, qd, a0, a1)
    vB0, vB1, vB2 = column_sum(JdB, qd, b0, b1)
    w0, w1, w2 = coef * w[0], coef * w[1], coef * w[2]
    for i in range(a0, a1):
        cq[i] += (w0 * (JdA[i, 0] * uB[0] + JA[i, 0] * vB0) + w1 * (JdA[i, 1] * uB[1]
                  + JA[i, 1] * vB1) + w2 * (JdA[i, 2] * uB[2] + JA[i, 2] * vB2))
    for j in range(b0, b1):
        cq[j] += (w0 * (JdB[j, 0] * uA[0] + JB[j, 0] * vA0) + w1 * (JdB[j, 1] * uA[1]
                  + JB[j, 1] * vA1) + w2 * (JdB[j, 2] * uA[2] + JB[j, 2] * vA2))
    for j in range(N):
        cq[j] -= (w0 * (GA[j, 0] * uB[0] + GB[j, 0] * uA[0]) + w1 * (GA[j, 1] * uB[1]
                  + GB[j, 1] * uA[1]) + w2 * (GA[j, 2] * uB[2] + GB[j, 2] * uA[2]))


@compiled()
def add_term(A, B, w, coef, qd, N, mode, sums, tw):
    """
    Add the term ``coef uA^T diag(w) uB`` to ``sums.M`` and, by `mode`, its derivatives.

    `A`, `B`: operands ``(J, dJ, first, stop)``. `mode` (modes.py) MASS: M only; CORIOLIS: also
    ``Mdot`` (``sums.Md``) and ``sums.P``; MASS_DERIVATIVE: also ``sums.dM[i, j, k] =
    dM_ij/dq_k``; CQ_ALONE: also its share of ``C qd = (Md + P - P^T) qd / 2`` into
    ``sums.cq``, without Md and P.
    """
    JA, dJA, a0, a1 = A
    JB, dJB, b0, b1 = B
    M, Md, P, dM, cq = sums.M, sums.Md, sums.P, sums.dM, sums.cq
    for i in range(a0, a1):
        for j in range(b0, b1):
            val = coef * (JA[i, 0] * w[0] * JB[j, 0] + JA[i, 1] * w[1] * JB[j, 1]
                          + JA[i, 2] * w[2] * JB[j, 2])
            M[i, j] += val
            M[j, i] += val
    if mode == MASS_DERIVATIVE:
        for i in range(a0, a1):
            for j in range(b0, b1):
                for k in range(N):
                    val = 0.0
                    for c in range(3):
                        val += w[c] * (dJA[i, k, c] * JB[j, c] + JA[i, c] * dJB[j, k, c])
                    val *= coef
                    dM[i, j, k] += val
                    dM[j, i, k] += val
    if mode != CORIOLIS and mode != CQ_ALONE:
        return
    uA, uB, JdA, GA, JdB, GB = tw.uA, tw.uB, tw.JdA, tw.GA, tw.JdB, tw.GB
    _rates(JA, dJA, a0, a1, N, qd, uA, JdA, GA)
    _rates(JB, dJB, b0, b1, N, qd, uB, JdB, GB)
    if mode == CQ_ALONE:
        _term_cq(JA, a0, a1, JB, b0, b1, w, coef, qd, N, tw, cq)
        return
    for i in range(a0, a1):
        for j in range(b0, b1):
            val = 0.0
            for c in range(3):
                val += w[c] * (JdA[i, c] * JB[j, c] + JA[i, c] * JdB[j, c])
            val *= coef
            Md[i, j] += val
            Md[j, i] += val
    wuA, wuB = tw.wuA, tw.wuB
    for c in range(3):
        wuA[c] = coef * w[c] * uA[c]
        wuB[c] = coef * w[c] * uB[c]
    for i in range(a0, a1):
        for j in range(N):
            P[i, j] += (dJA[i, j, 0] * wuB[0] + dJA[i, j, 1] * wuB[1] + dJA[i, j, 2] * wuB[2]
                        + coef * (JA[i, 0] * w[0] * GB[j, 0] + JA[i, 1] * w[1] * GB[j, 1]
                                  + JA[i, 2] * w[2] * GB[j, 2]))
    for i in range(b0, b1):
        for j in range(N):
            P[i, j] += (dJB[i, j, 0] * wuA[0] + dJB[i, j, 1] * wuA[1] + dJB[i, j, 2] * wuA[2]
                        + coef * (JB[i, 0] * w[0] * GA[j, 0] + JB[i, 1] * w[1] * GA[j, 1]
                                  + JB[i, 2] * w[2] * GA[j, 2]))


@compiled()
def cumulative_rates(om, qd, n, Wc):
    """Fill ``Wc[s] = sum_(k in sections < s) om[k] qd_k`` (s = 0..n): base angular velocities."""
    Wc[0, :] = 0.0
    for s in range(n):
        for c in range(3):
            Wc[s + 1, c] = Wc[s, c] + (om[3 * s, c] * qd[3 * s] + om[3 * s + 1, c] * qd[3 * s + 1]
                                       + om[3 * s + 2, c] * qd[3 * s + 2])


@compiled()
def point_rate(sec, x, J, om, dom, dv0, d2pw, qd, Wc, Jd):
    """
    Fill ``Jd[l] = sum_k dJ[l, k] qd_k`` of the point `x` in O(N), without forming ``dJ``.

    From the structure of `point_jacobian`: ``Jd_l = Wc[s_l] x J_l + om_l x V_l`` plus the
    same-section terms, with ``V_l`` the velocity from the joints of sections >= s_l and `Wc`
    from `cumulative_rates`.
    """
    nu = 3 * sec
    v0_, v1_, v2_ = 0.0, 0.0, 0.0
    for s in range(sec, -1, -1):
        w0, w1, w2 = column_sum(J, qd, 3 * s, 3 * s + 3)
        v0_, v1_, v2_ = v0_ + w0, v1_ + w1, v2_ + w2
        for a in range(3):
            L = 3 * s + a
            t = cx(Wc[s, 0], Wc[s, 1], Wc[s, 2], J[L, 0], J[L, 1], J[L, 2])
            r0, r1, r2 = t
            if s < sec:
                t = cx(om[L, 0], om[L, 1], om[L, 2], v0_, v1_, v2_)
                r0, r1, r2 = r0 + t[0], r1 + t[1], r2 + t[2]
                for b in range(3):
                    k = 3 * s + b
                    t = cx(dom[L, b, 0], dom[L, b, 1], dom[L, b, 2], x[0], x[1], x[2])
                    r0 += (dv0[L, b, 0] + t[0]) * qd[k]
                    r1 += (dv0[L, b, 1] + t[1]) * qd[k]
                    r2 += (dv0[L, b, 2] + t[2]) * qd[k]
            else:
                for b in range(3):
                    k = nu + b
                    r0 += d2pw[0, a, b] * qd[k]
                    r1 += d2pw[1, a, b] * qd[k]
                    r2 += d2pw[2, a, b] * qd[k]
            Jd[L, 0], Jd[L, 1], Jd[L, 2] = r0, r1, r2


@compiled()
def local_rate(sec, d2pw, qd, Jd):
    """Fill ``Jd[l] = sum_(k own) d2pw[:, l, k] qd_k`` for the own joints l of section `sec`."""
    nu = 3 * sec
    for a in range(3):
        for c in range(3):
            Jd[nu + a, c] = (d2pw[c, a, 0] * qd[nu] + d2pw[c, a, 1] * qd[nu + 1]
                             + d2pw[c, a, 2] * qd[nu + 2])


@compiled()
def angular_rate(sec, Rw, Rloc, omt, kap, dkap, dom, qd, Jd):
    """
    Fill ``Jd[l] = sum_k dJO[l, k] qd_k`` of `angular_jacobian` in O(N), without ``dJO``.

    `Rw`, `omt`: the frame's world orientation and world angular columns from
    `angular_jacobian`.
    """
    nu = 3 * sec
    S0, S1, S2 = 0.0, 0.0, 0.0
    for s in range(sec, -1, -1):
        w0, w1, w2 = column_sum(omt, qd, 3 * s, 3 * s + 3)
        S0, S1, S2 = S0 + w0, S1 + w1, S2 + w2
        if s == sec:
            k0, k1, k2 = 0.0, 0.0, 0.0
            for b in range(3):
                k0 += kap[0, b] * qd[nu + b]
                k1 += kap[1, b] * qd[nu + b]
                k2 += kap[2, b] * qd[nu + b]
        for a in range(3):
            L = 3 * s + a
            if s < sec:
                r0, r1, r2 = cx(omt[L, 0], omt[L, 1], omt[L, 2], S0, S1, S2)
                for b in range(3):
                    k = 3 * s + b
                    r0 += dom[L, b, 0] * qd[k]
                    r1 += dom[L, b, 1] * qd[k]
                    r2 += dom[L, b, 2] * qd[k]
                R = Rw
            else:
                r0, r1, r2 = cx(kap[0, a], kap[1, a], kap[2, a], k0, k1, k2)
                for b in range(3):
                    r0 += dkap[0, a, b] * qd[nu + b]
                    r1 += dkap[1, a, b] * qd[nu + b]
                    r2 += dkap[2, a, b] * qd[nu + b]
                R = Rloc
            for c in range(3):
                Jd[L, c] = R[0, c] * r0 + R[1, c] * r1 + R[2, c] * r2


@compiled()
def add_gravity(m, gravity, x, J, Ni, g):
    """
    Add the gravity force of a point mass `m` [kg] at `x` [m] to `g` [N]; return its ``U_g``.

    `J[:Ni]`: the point's linear Jacobian rows; `gravity` [m/s^2] in the base frame; the
    potential is ``-m gravity . x`` [J].
    """
    for L in range(Ni):
        g[L] -= m * (J[L, 0] * gravity[0] + J[L, 1] * gravity[1] + J[L, 2] * gravity[2])
    return -m * (gravity[0] * x[0] + gravity[1] * x[1] + gravity[2] * x[2])


@compiled()
def add_point_term(J, Jd, o, N, mass, qd, mode, M, Md, cq):
    """
    Add a point mass `mass` [kg] with velocity ``J qd`` over columns o..N-1.

    `Jd`: ``sum_k dJ[:, k] qd_k``. A position's Hessian is symmetric, so its Christoffel matrix
    is ``m J^T Jd`` exactly. CORIOLIS: it goes into ``Md`` twice, since
    ``C = (Md + P - P^T)/2``; CQ_ALONE: ``m J^T (Jd qd)`` goes into ``cq = C qd`` directly.
    """
    for i in range(o, N):
        for j in range(o, N):
            M[i, j] += mass * (J[i, 0] * J[j, 0] + J[i, 1] * J[j, 1] + J[i, 2] * J[j, 2])
    if mode == CORIOLIS:
        for i in range(o, N):
            for j in range(o, N):
                Md[i, j] += 2.0 * mass * (J[i, 0] * Jd[j, 0] + J[i, 1] * Jd[j, 1]
                                          + J[i, 2] * Jd[j, 2])
        return
    a0, a1, a2 = column_sum(Jd, qd, o, N)
    for i in range(o, N):
        cq[i] += mass * (J[i, 0] * a0 + J[i, 1] * a1 + J[i, 2] * a2)


@compiled()
def add_rigid_term(JO, Jd, N, inertia, qd, mode, M, Md, cq, b):
    """
    Add a body of principal inertia `inertia` (3,) [kg m^2], body angular velocity ``JO qd``.

    With columns ``w_i = JO[i]``, ``Om = JO qd``, ``Omd_j = Jd[j] = sum_k dJO[j, k] qd_k`` and
    the structure equation ``dw_i/dq_j - dw_j/dq_i = w_i x w_j``, the Christoffel symbols give
    ``C_ij = w_i . b_j``, ``b_j = I Omd_j + (w_j x I Om + Om x I w_j - I (w_j x Om))/2``;
    CORIOLIS: it goes into ``Md`` twice; CQ_ALONE: ``JO (b^T qd)`` goes into ``cq = C qd``.
    """
    o0, o1, o2 = column_sum(JO, qd, 0, N)
    I0, I1, I2 = inertia[0], inertia[1], inertia[2]
    for j in range(N):
        w0, w1, w2 = JO[j, 0], JO[j, 1], JO[j, 2]
        t1 = cx(w0, w1, w2, I0 * o0, I1 * o1, I2 * o2)
        t2 = cx(o0, o1, o2, I0 * w0, I1 * w1, I2 * w2)
        t3 = cx(w0, w1, w2, o0, o1, o2)
        for c in range(3):
            b[j, c] = inertia[c] * (Jd[j, c] - 0.5 * t3[c]) + 0.5 * (t1[c] + t2[c])
    for i in range(N):
        for j in range(N):
            M[i, j] += (JO[i, 0] * inertia[0] * JO[j, 0] + JO[i, 1] * inertia[1] * JO[j, 1]
                        + JO[i, 2] * inertia[2] * JO[j, 2])
    if mode == CORIOLIS:
        for i in range(N):
            for j in range(N):
                Md[i, j] += 2.0 * (JO[i, 0] * b[j, 0] + JO[i, 1] * b[j, 1] + JO[i, 2] * b[j, 2])
        return
    s0, s1, s2 = column_sum(b, qd, 0, N)
    for i in range(N):
        cq[i] += JO[i, 0] * s0 + JO[i, 1] * s1 + JO[i, 2] * s2


@compiled()
def coriolis_from_parts(Md, P, C):
    """Fill ``C = (Mdot + P - P^T)/2``, the Christoffel Coriolis matrix."""
    n = C.shape[0]
    for i in range(n):
        for j in range(n):
            C[i, j] = 0.5 * (Md[i, j] + P[i, j] - P[j, i])
