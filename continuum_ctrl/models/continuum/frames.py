"""
Compiled per-tick work on a section's tip frame: its Jacobian rate and one damped IK step.

`tip_frame_rate` is ``Jdot qd`` of `kinematics.tip_frame`'s Jacobian (the point's classical
acceleration at ``qdd = 0``), exact, from the chain's derivative terms. `ik_step` is one step
of `continuum_ctrl.control.ik` (damped least squares with active-set joint limits and a
null-space pull) after `kinematics.tip_frame`, the same arithmetic in one compiled call.
"""

import math

from continuum_ctrl.models.continuum.data import layout
from continuum_ctrl.models.continuum.jit import compiled
from continuum_ctrl.models.continuum.kinematics import (chain, cx, rotate_tensor, section_point,
                                                        tip_frame)
from continuum_ctrl.models.continuum.terms import cumulative_rates, point_rate


@compiled()
def tip_pose(arm, memory, q, sec, T, J):
    """`kinematics.tip_frame` on the model's workspace block `memory` (see `data.layout`)."""
    data = layout(memory, arm.length.shape[0])[1]
    tip_frame(arm, q, data.chain, data.section, sec, T, J)


@compiled()
def tip_frame_rate(arm, memory, q, qd, sec, out):
    """
    Fill ``out`` (6,) with ``Jdot qd`` of section `sec`'s tip frame [m/s^2, rad/s^2].

    Linear part: the tip point's acceleration at ``qdd = 0`` (`terms.point_rate` of the tip's
    point Jacobian); angular: ``sum_l (Wc[s_l] x om_l + sum_b dom[l, b] qd_b) qd_l``, base
    axes (``LOCAL_WORLD_ALIGNED``). `memory`: the model's workspace block.
    """
    n = arm.length.shape[0]
    data = layout(memory, n)[1]
    ch, work, body = data.chain, data.section, data.body
    chain(arm, q, ch, work, True)
    Wc, J, Jd, o = body.Wc, body.J, body.Jd, ch.tip_o[sec]
    cumulative_rates(ch.om, qd, n, Wc)
    N = 3 * sec + 3
    for L in range(N):
        t = cx(ch.om[L, 0], ch.om[L, 1], ch.om[L, 2], o[0], o[1], o[2])
        for c in range(3):
            J[L, c] = ch.v0[L, c] + t[c]
    section_point(arm.length[sec], arm.radius[sec], q[3 * sec:N], 1.0, body.p, body.dp,
                  body.d2p, work)
    rotate_tensor(ch.Rb[sec], body.d2p, body.d2pw)
    point_rate(sec, o, J, ch.om, ch.dom, ch.dv0, body.d2pw, qd, Wc, Jd)
    out[:] = 0.0
    for L in range(N):
        s = L // 3
        w = cx(Wc[s, 0], Wc[s, 1], Wc[s, 2], ch.om[L, 0], ch.om[L, 1], ch.om[L, 2])
        for c in range(3):
            r = w[c]
            for b in range(3):
                r += ch.dom[L, b, c] * qd[3 * s + b]
            out[c] += Jd[L, c] * qd[L]
            out[3 + c] += r * qd[L]


def ik_scratch(n):
    """Return the number of scratch floats `ik_step` needs for n joints."""
    return 57 + 10 * n


@compiled()
def log3(R, w):
    """Fill ``w`` (3,) with the rotation vector of `R` [rad], like Pinocchio's ``log3``."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    c = min(1.0, max(-1.0, 0.5 * (tr - 1.0)))
    theta = math.acos(c)
    v0, v1, v2 = R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]
    if theta < 1e-4:
        k = 0.5 * (1.0 + theta * theta / 6.0)
    elif math.pi - theta > 1e-4:
        k = 0.5 * theta / math.sin(theta)
    else:                               # near pi: the axis from the symmetric part
        for a in range(3):
            d = (R[a, a] - c) / (1.0 - c)
            w[a] = theta * math.sqrt(max(0.0, d))
        sg = (v0, v1, v2)
        big = 0
        for a in range(3):
            if w[a] > w[big]:
                big = a
        if sg[big] < 0.0:
            w[big] = -w[big]
        for a in range(3):
            if a != big:
                off = R[a, big] + R[big, a]
                w[a] = math.copysign(w[a], off * w[big])
        return
    w[0], w[1], w[2] = k * v0, k * v1, k * v2


@compiled()
def ik_step(arm, memory, q0, sec, T, J, target, rotation, weight, settings, bounds, out, buf):
    """
    One IK step of section `sec`'s tip from `q0` (clipped to the limits first) into `out`.

    `target` (3,) [m], `rotation` (3, 3) and `weight` > 0 to weigh the orientation error;
    `settings`: damping, mu, pull factor; `bounds` rows: lower, upper, mid, pull gain, max
    step (n,); `buf`: scratch of `ik_scratch(n)` floats; `memory`: the model's workspace block.
    See `control.ik` for the method. Returns the position error [m] at the clipped `q0`.
    """
    n = q0.shape[0]
    data = layout(memory, arm.length.shape[0])[1]
    ch, work = data.chain, data.section
    lower, upper, mid, gain, max_step = bounds[0], bounds[1], bounds[2], bounds[3], bounds[4]
    q = buf[57 + 9 * n:57 + 10 * n]
    for k in range(n):
        q[k] = min(upper[k], max(lower[k], q0[k]))
    tip_frame(arm, q, ch, work, sec, T, J)
    m = 6 if weight > 0.0 else 3
    e = buf[0:6]
    for c in range(3):
        e[c] = target[c] - T[c, 3]
    if m == 6:
        Rt = buf[6:15].reshape((3, 3))
        for a in range(3):
            for b in range(3):
                Rt[a, b] = (rotation[a, 0] * T[b, 0] + rotation[a, 1] * T[b, 1]
                            + rotation[a, 2] * T[b, 2])
        log3(Rt, e[3:6])
        for c in range(3, 6):
            e[c] *= weight
    A = buf[15:15 + 6 * n].reshape((6, n))
    for r in range(m):
        s = weight if r >= 3 else 1.0
        for k in range(n):
            A[r, k] = s * J[r, k]
    dq = buf[15 + 6 * n:15 + 7 * n]
    z = buf[15 + 7 * n:15 + 8 * n]
    free = buf[15 + 8 * n:15 + 9 * n]
    H = buf[15 + 9 * n:51 + 9 * n].reshape((6, 6))
    y = buf[51 + 9 * n:57 + 9 * n]
    ee = 0.0
    for r in range(m):
        ee += e[r] * e[r]
    lam2 = settings[1] * (settings[0] * settings[0] + ee)
    for k in range(n):
        g = 0.0
        for r in range(m):
            g += A[r, k] * e[r]
        free[k] = 0.0 if (q[k] <= lower[k] and g < 0.0) or (q[k] >= upper[k] and g > 0.0) else 1.0
        z[k] = settings[2] * gain[k] * (mid[k] - q[k])
    for _ in range(n):
        for a in range(m):              # H = Af Af^T + lam2 I, y = e - Af z_f
            acc = e[a]
            for k in range(n):
                acc -= A[a, k] * free[k] * z[k]
            y[a] = acc
            for b in range(a + 1):
                h = 0.0
                for k in range(n):
                    h += A[a, k] * free[k] * A[b, k]
                H[a, b] = h
            H[a, a] += lam2
        _cholesky_solve(H, y, m)
        scale = 1.0
        for k in range(n):
            d = 0.0
            if free[k] > 0.0:
                d = z[k]
                for r in range(m):
                    d += A[r, k] * y[r]
            dq[k] = d
            scale = min(scale, max_step[k] / max(abs(d), 1e-300))
        beyond = False
        for k in range(n):
            dq[k] *= scale
            if free[k] > 0.0 and (q[k] + dq[k] < lower[k] or q[k] + dq[k] > upper[k]):
                free[k] = 0.0
                beyond = True
        if not beyond:
            break
        any_free = False
        for k in range(n):
            any_free = any_free or free[k] > 0.0
        if not any_free:
            break
    for k in range(n):
        out[k] = min(upper[k], max(lower[k], q[k] + dq[k]))
    return math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])


@compiled()
def _cholesky_solve(H, y, m):
    """Solve ``H x = y`` in place (``y`` becomes x) for SPD `H` (m x m, lower triangle)."""
    for j in range(m):
        s = H[j, j]
        for k in range(j):
            s -= H[j, k] * H[j, k]
        H[j, j] = math.sqrt(s)
        for i in range(j + 1, m):
            s = H[i, j]
            for k in range(j):
                s -= H[i, k] * H[j, k]
            H[i, j] = s / H[j, j]
    for i in range(m):
        s = y[i]
        for k in range(i):
            s -= H[i, k] * y[k]
        y[i] = s / H[i, i]
    for i in range(m - 1, -1, -1):
        s = y[i]
        for k in range(i + 1, m):
            s -= H[k, i] * y[k]
        y[i] = s / H[i, i]
