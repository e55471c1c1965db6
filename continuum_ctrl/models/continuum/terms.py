"""
Kinetic-energy terms of a continuum chain: body Jacobians and their exact q-derivatives.

A body is a point (CoG or disc centre, world velocity ``J qd``) or an orientation (body-frame
angular velocity ``JO qd``) carried by section ``sec``. Its N = 3 sec + 3 columns are the joints
up to and including its own section. Layouts: ``J[l]`` (3,) is column l; ``dJ[l, k]`` (3,) is
``dJ[l]/dq_k``.

A term is ``coef * uA^T diag(w) uB`` with ``uA = sum_(i in A) JA[i] qd_i`` over a column range
A (and likewise B). `add_term` adds its contribution to ``M``, and either to ``dM`` or to the
two pieces of the Christoffel matrix: ``Mdot`` and ``P[i, j] = d(M qd)_i / dq_j``, from which
``C = (Mdot + P - P^T)/2`` (`coriolis_from_parts`), the same as ``c_ijk qd_k`` of contract
section 4 without forming ``dM``.
"""

import numpy as np
from numba import njit

from continuum_ctrl.models.continuum.kinematics import cross


@njit(cache=True)
def point_jacobian(sec, x, dpw, d2pw, om, v0, dom, dv0, deriv, J, dJ):
    """
    Fill ``J`` (N, 3) and, if `deriv`, ``dJ`` (N, N, 3) of the world point `x` [m].

    `dpw`, `d2pw`: first and second q-derivatives of x in the own section's joints, (3, 3) and
    (3, 3, 3), world frame. `om`, `v0`, `dom`, `dv0`: joint motion columns from `chain`.
    """
    nu = 3 * sec
    N = nu + 3
    tmp = np.empty(3)
    for L in range(nu):
        cross(om[L], x, tmp)
        for c in range(3):
            J[L, c] = v0[L, c] + tmp[c]
    for a in range(3):
        for c in range(3):
            J[nu + a, c] = dpw[c, a]
    if not deriv:
        return
    tmp2 = np.empty(3)
    for L in range(N):
        sl = L // 3
        for k in range(N):
            sk = k // 3
            if sk < sl:
                cross(om[k], J[L], dJ[L, k])
            elif sk > sl:
                cross(om[L], J[k], dJ[L, k])
            elif sl < sec:
                cross(dom[L, k - 3 * sk], x, tmp)
                cross(om[L], J[k], tmp2)
                for c in range(3):
                    dJ[L, k, c] = dv0[L, k - 3 * sk, c] + tmp[c] + tmp2[c]
            else:
                for c in range(3):
                    dJ[L, k, c] = d2pw[c, L - nu, k - nu]


@njit(cache=True)
def angular_jacobian(sec, Rb, Rloc, kap, dkap, om, dom, deriv, JO, dJO):
    """
    Fill ``JO`` (N, 3) and, if `deriv`, ``dJO`` (N, N, 3): body angular velocity of a frame.

    The frame is ``Rb @ Rloc`` on section `sec`; `kap`, `dkap` are the space angular Jacobian
    of `Rloc` in the section base frame and its derivative (from `section_rotation`).
    """
    nu = 3 * sec
    N = nu + 3
    Rw = Rb @ Rloc
    omt = np.empty((N, 3))
    omt[:nu] = om[:nu]
    for a in range(3):
        for c in range(3):
            omt[nu + a, c] = Rb[c, 0] * kap[0, a] + Rb[c, 1] * kap[1, a] + Rb[c, 2] * kap[2, a]
    for L in range(N):
        for c in range(3):
            JO[L, c] = Rw[0, c] * omt[L, 0] + Rw[1, c] * omt[L, 1] + Rw[2, c] * omt[L, 2]
    if not deriv:
        return
    tmp = np.empty(3)
    kb = np.empty(3)
    ka = np.empty(3)
    for L in range(N):
        sl = L // 3
        for k in range(N):
            sk = k // 3
            if sk < sl:
                dJO[L, k, :] = 0.0
                continue
            if sk > sl:
                cross(omt[L], omt[k], tmp)
                R = Rw
            elif sl < sec:
                cross(omt[k], omt[L], tmp)
                for c in range(3):
                    tmp[c] = dom[L, k - 3 * sk, c] - tmp[c]
                R = Rw
            else:
                for c in range(3):
                    kb[c] = kap[c, k - nu]
                    ka[c] = kap[c, L - nu]
                cross(kb, ka, tmp)
                for c in range(3):
                    tmp[c] = dkap[c, L - nu, k - nu] - tmp[c]
                R = Rloc
            for c in range(3):
                dJO[L, k, c] = R[0, c] * tmp[0] + R[1, c] * tmp[1] + R[2, c] * tmp[2]


@njit(cache=True)
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


@njit(cache=True)
def add_term(JA, dJA, a0, a1, JB, dJB, b0, b1, w, coef, qd, N, mode, M, Md, P, dM, work):
    """
    Add the term ``coef uA^T diag(w) uB`` to ``M`` and, by `mode`, its derivatives.

    mode 0: M only; 1: also ``Mdot`` (`Md`) and ``P``; 2: also ``dM[i, j, k] = dM_ij/dq_k``.
    `work`: scratch of shape (6, >= N, 3).
    """
    for i in range(a0, a1):
        for j in range(b0, b1):
            val = coef * (JA[i, 0] * w[0] * JB[j, 0] + JA[i, 1] * w[1] * JB[j, 1]
                          + JA[i, 2] * w[2] * JB[j, 2])
            M[i, j] += val
            M[j, i] += val
    if mode == 2:
        for i in range(a0, a1):
            for j in range(b0, b1):
                for k in range(N):
                    val = 0.0
                    for c in range(3):
                        val += w[c] * (dJA[i, k, c] * JB[j, c] + JA[i, c] * dJB[j, k, c])
                    val *= coef
                    dM[i, j, k] += val
                    dM[j, i, k] += val
    if mode != 1:
        return
    uA = work[0, 0]
    uB = work[0, 1]
    JdA, GA, JdB, GB = work[1], work[2], work[3], work[4]
    _rates(JA, dJA, a0, a1, N, qd, uA, JdA, GA)
    _rates(JB, dJB, b0, b1, N, qd, uB, JdB, GB)
    for i in range(a0, a1):
        for j in range(b0, b1):
            val = 0.0
            for c in range(3):
                val += w[c] * (JdA[i, c] * JB[j, c] + JA[i, c] * JdB[j, c])
            val *= coef
            Md[i, j] += val
            Md[j, i] += val
    wuA = work[0, 2]
    wuB = work[0, 3]
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


@njit(cache=True)
def coriolis_from_parts(Md, P, C):
    """Fill ``C = (Mdot + P - P^T)/2``, the Christoffel Coriolis matrix."""
    n = C.shape[0]
    for i in range(n):
        for j in range(n):
            C[i, j] = 0.5 * (Md[i, j] + P[i, j] - P[j, i])
