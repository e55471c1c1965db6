"""
Compiled per-tick work on a section's tip frame: its Jacobian's rate, IK, task-space samples.

`tip_frame_derivative` is the exact time derivative ``Jdot`` of `kinematics.tip_frame`'s
Jacobian, from the chain's q-derivatives. `ik_step` is one step of `continuum_ctrl.control.ik`
(damped least squares with active-set joint limits and a null-space pull) after
`kinematics.tip_frame`, the same arithmetic in one compiled call. `task_step` is one sample of
`control.task_space.TaskReference` (tip path point, Newton IK from the previous solution,
``qd_d``, ``qdd_d``) in one call, its path given as a table of polynomial segments
(`path_segment`, `path_sample`).
"""

import math

import numpy as np

from continuum_ctrl.models.continuum.data import layout
from continuum_ctrl.numerics.jit import compiled
from continuum_ctrl.models.continuum.kinematics import (chain, cx, frame_from_chain,
                                                        rotate_tensor, section_point, tip_frame)
from continuum_ctrl.models.continuum.terms import cumulative_rates, point_rate


@compiled()
def tip_pose(arm, memory, q, sec, T, J):
    """`kinematics.tip_frame` on the model's workspace block `memory` (see `data.layout`)."""
    data = layout(memory, arm.length.shape[0])[1]
    tip_frame(arm, q, data.chain, data.section, sec, T, J)


@compiled()
def tip_frame_derivative(arm, memory, q, qd, sec, T, J, Jdot):
    """
    Fill section `sec`'s tip pose ``T``, Jacobian ``J`` and ``Jdot = dJ/dt`` (6, 3n) at (q, qd).

    `kinematics.tip_frame`'s ``T`` and ``J``, and their exact time derivative along ``qd``
    from the chain's q-derivatives. `memory`: the model's workspace block.
    """
    data = layout(memory, arm.length.shape[0])[1]
    chain(arm, q, data.chain, data.section, True)
    frame_from_chain(data.chain, sec, T, J)
    derivative_from_chain(arm, data, q, qd, sec, J, Jdot)


@compiled()
def derivative_from_chain(arm, data, q, qd, sec, J, Jdot):
    """
    Fill ``Jdot`` (6, 3n) of section `sec`'s tip frame from a chain filled with derivatives.

    Linear column l: the rate of the tip's point-Jacobian column (`terms.point_rate`);
    angular: ``Wc[s_l] x om_l + sum_b dom[l, b] qd_(3 s_l + b)``, base axes
    (``LOCAL_WORLD_ALIGNED``); the columns of later sections are zero. `J`: the frame's
    Jacobian (`kinematics.frame_from_chain`).
    """
    n = arm.length.shape[0]
    ch, work, body = data.chain, data.section, data.body
    Wc, P, Jd, o = body.Wc, body.J, body.Jd, ch.tip_o[sec]
    cumulative_rates(ch.om, qd, n, Wc)
    N = 3 * sec + 3
    for L in range(N):
        for c in range(3):
            P[L, c] = J[c, L]
    section_point(arm.length[sec], arm.radius[sec], q[3 * sec:N], 1.0, body.p, body.dp,
                  body.d2p, work)
    rotate_tensor(ch.Rb[sec], body.d2p, body.d2pw)
    point_rate(sec, o, P, ch.om, ch.dom, ch.dv0, body.d2pw, qd, Wc, Jd)
    for L in range(Jdot.shape[1]):
        if L >= N:
            for c in range(6):
                Jdot[c, L] = 0.0
            continue
        s = L // 3
        w = cx(Wc[s, 0], Wc[s, 1], Wc[s, 2], ch.om[L, 0], ch.om[L, 1], ch.om[L, 2])
        for c in range(3):
            r = w[c]
            for b in range(3):
                r += ch.dom[L, b, c] * qd[3 * s + b]
            Jdot[c, L] = Jd[L, c]
            Jdot[3 + c, L] = r


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
    _cholesky(H, m)
    _solve_factored(H, y, m)


@compiled()
def _cholesky(H, m):
    """Overwrite the lower triangle of SPD `H` (m x m) with its Cholesky factor."""
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


@compiled()
def _solve_factored(H, y, m):
    """Solve ``L L^T x = y`` in place for the factor `L` that `_cholesky` left in `H`."""
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


#: tip path tables (`path_segment`, `path_sample`): polynomial coefficients per segment
PATH_COEFFICIENTS = 8
#: one segment row: start [s], circle radius [m], x, y, z and phase coefficients, u, v
PATH_ROW = 2 + 4 * PATH_COEFFICIENTS + 6
#: Newton steps per task sample at most, and the task error they stop at (m; rad times weight)
NEWTON_STEPS, NEWTON_TOLERANCE = 4, 1e-10


def path_segment(start, coefficients, radius=0.0, phase=(0.0,), u=(1.0, 0.0, 0.0),
                 v=(0.0, 1.0, 0.0)):
    """
    Return one row of a tip path table, from `start` [s] until the next row's start.

    The tip at ``tau = t - start``: ``P(tau) + radius (cos th u + sin th v)``, ``P`` the
    polynomial of ascending `coefficients` (k, 3) [m, m/s^k] and ``th`` that of `phase` [rad,
    rad/s^k] (k <= PATH_COEFFICIENTS each). Polynomial paths, minimum-jerk moves and circles
    with a polynomial phase all take this form.
    """
    row = np.zeros(PATH_ROW)
    row[0], row[1] = start, radius
    c = np.asarray(coefficients, dtype=float).reshape(-1, 3)
    for axis in range(3):
        row[2 + axis * PATH_COEFFICIENTS:2 + axis * PATH_COEFFICIENTS + len(c)] = c[:, axis]
    row[2 + 3 * PATH_COEFFICIENTS:2 + 3 * PATH_COEFFICIENTS + len(phase)] = phase
    row[PATH_ROW - 6:PATH_ROW - 3], row[PATH_ROW - 3:] = u, v
    return row


@compiled()
def _polynomial(row, first, tau):
    """Return the value and two tau-derivatives of the PATH_COEFFICIENTS at `row[first:]`."""
    p, dp, ddp = 0.0, 0.0, 0.0
    for k in range(PATH_COEFFICIENTS - 1, -1, -1):
        ddp = ddp * tau + 2.0 * dp
        dp = dp * tau + p
        p = p * tau + row[first + k]
    return p, dp, ddp


@compiled()
def path_sample(path, t, x, xd, xdd):
    """
    Fill the tip position, velocity and acceleration (3,) of the path table `path` at `t` [s].

    Rows in increasing start times (`path_segment`); before the first, its start point at rest.
    """
    i = 0
    while i + 1 < path.shape[0] and path[i + 1, 0] <= t:
        i += 1
    row = path[i]
    before = t < row[0]
    tau = 0.0 if before else t - row[0]
    r = row[1]
    th, dth, ddth = _polynomial(row, 2 + 3 * PATH_COEFFICIENTS, tau)
    ct, st = math.cos(th), math.sin(th)
    for c in range(3):
        p, dp, ddp = _polynomial(row, 2 + c * PATH_COEFFICIENTS, tau)
        u, v = row[PATH_ROW - 6 + c], row[PATH_ROW - 3 + c]
        radial, tangent = ct * u + st * v, ct * v - st * u
        x[c] = p + r * radial
        xd[c] = 0.0 if before else dp + r * dth * tangent
        xdd[c] = 0.0 if before else ddp + r * ddth * tangent - r * dth * dth * radial


@compiled()
def exp3(w, R):
    """Fill ``R`` (3, 3) with the rotation of rotation vector `w` [rad] (Rodrigues)."""
    t = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    if t < 1e-8:
        S, A = 1.0 - t / 6.0 * (1.0 - t / 20.0), 0.5 - t / 24.0 * (1.0 - t / 30.0)
    else:
        a = math.sqrt(t)
        S, A = math.sin(a) / a, (1.0 - math.cos(a)) / t
    for i in range(3):
        for j in range(3):
            R[i, j] = A * w[i] * w[j] + (1.0 - A * t if i == j else 0.0)
    R[0, 1] -= S * w[2]
    R[1, 0] += S * w[2]
    R[0, 2] += S * w[1]
    R[2, 0] -= S * w[1]
    R[1, 2] -= S * w[0]
    R[2, 1] += S * w[0]


@compiled()
def _ramp(elapsed, duration):
    """`control.references.minimum_jerk_ramp`: ``(s, s', s'')`` from 0 to 1 over `duration`."""
    x = min(max(elapsed / duration, 0.0), 1.0)
    return (x ** 3 * (10.0 + x * (-15.0 + 6.0 * x)),
            x ** 2 * (30.0 + x * (-60.0 + 30.0 * x)) / duration,
            x * (60.0 + x * (-180.0 + 120.0 * x)) / duration ** 2)


@compiled()
def _task_rows(T, J, x, Rd, weight, m, A, e, Rt):
    """Task error ``e`` (m,) and Jacobian ``A`` (m, n): position, then weighted orientation."""
    n = J.shape[1]
    for c in range(3):
        e[c] = x[c] - T[c, 3]
        for k in range(n):
            A[c, k] = J[c, k]
    if m == 6:
        for a in range(3):
            for b in range(3):
                Rt[a, b] = Rd[a, 0] * T[b, 0] + Rd[a, 1] * T[b, 1] + Rd[a, 2] * T[b, 2]
        log3(Rt, e[3:6])
        for c in range(3, 6):
            e[c] *= weight
            for k in range(n):
                A[c, k] = weight * J[c, k]


@compiled()
def _min_norm(A, m, q, low, high, b, free, dq, y, H):
    """
    Minimum-norm ``dq`` with ``A_f dq_f = b`` over the joints `free` to move that way.

    Joints at a limit that the solution would push beyond are held (active set, ``free`` 0).
    Leaves ``y = (A_f A_f^T)^-1 b`` and the Cholesky factor of ``A_f A_f^T`` in `H`; returns
    False (and ``dq = 0``) when every joint is held.
    """
    n = q.shape[0]
    at_limit = False
    for k in range(n):
        free[k] = 1.0
        at_limit = at_limit or q[k] <= low[k] or q[k] >= high[k]
    for _ in range(n):
        for a in range(m):
            y[a] = b[a]
            for c in range(a + 1):
                h = 0.0
                for k in range(n):
                    h += A[a, k] * free[k] * A[c, k]
                H[a, c] = h
            H[a, a] += 1e-12
        _cholesky_solve(H, y, m)
        for k in range(n):
            d = 0.0
            if free[k] > 0.0:
                for r in range(m):
                    d += A[r, k] * y[r]
            dq[k] = d
        if not at_limit:
            return True
        blocked, any_free = False, False
        for k in range(n):
            if free[k] > 0.0 and ((q[k] <= low[k] and dq[k] < 0.0)
                                  or (q[k] >= high[k] and dq[k] > 0.0)):
                free[k] = 0.0
                blocked = True
            any_free = any_free or free[k] > 0.0
        if not blocked:
            return True
        if not any_free:
            for k in range(n):
                dq[k] = 0.0
            return False
    return True


def task_scratch(n):
    """Return the number of scratch floats `task_step` needs for n joints."""
    return 120 + 15 * n


@compiled()
def task_step(arm, memory, sec, t, path, goal, weight, state, clock, bounds, T, J, Jdot,
              sample, buf):
    """
    One task-space reference sample of section `sec`'s tip at `t` [s], in one call.

    Path point ``(x, xd, xdd)`` of the table `path` (`path_sample`, into `sample` rows) and
    desired orientation ``R = R0 exp(s w)``, ``s`` the minimum-jerk ramp over the move
    (`goal`: R0 row-major (9), body rotation vector w (3) [rad], duration (1) [s]); then
    ``q_d`` by Newton steps from the previous solution predicted to `t` (`state` rows q, qd,
    qdd, the previous sample at ``clock[0]``, NaN for none), ``qd_d = A^+ xd_d`` and ``qdd_d
    = A^+ (xdd_d - Adot qd_d) + Adot^T y`` (the exact derivative of ``A^T (A A^T)^-1 v``, ``Adot``
    from `derivative_from_chain`), all over the joints free to move (`_min_norm`); written
    back into `state` and `clock`. `weight` > 0 adds the orientation rows (`_task_rows`);
    `bounds` rows: lower, upper limits (n,); `T`, `J`, `Jdot`: the frame's pose, Jacobian and
    its rate there; `buf`: scratch of `task_scratch(n)` floats. Returns the tip's distance to
    the path point [m]. `control.task_space.TaskReference` is the same method in NumPy.
    """
    n = state.shape[1]
    data = layout(memory, arm.length.shape[0])[1]
    ch, work = data.chain, data.section
    low, high = bounds[0], bounds[1]
    q, qd, qdd = state[0], state[1], state[2]
    x, xd, xdd = sample[0], sample[1], sample[2]
    m = 6 if weight > 0.0 else 3
    e, v, a, y, rhs = buf[0:6], buf[6:12], buf[12:18], buf[18:24], buf[24:30]
    H, Rd, Rt, E = (buf[30:66].reshape((6, 6)), buf[66:75].reshape((3, 3)),
                    buf[75:84].reshape((3, 3)), buf[84:93].reshape((3, 3)))
    sw = buf[93:96]
    A, Ad = buf[120:120 + 6 * n].reshape((6, n)), buf[120 + 6 * n:120 + 12 * n].reshape((6, n))
    free, dq, z = (buf[120 + 12 * n:120 + 13 * n], buf[120 + 13 * n:120 + 14 * n],
                   buf[120 + 14 * n:120 + 15 * n])
    path_sample(path, t, x, xd, xdd)
    for c in range(3):
        v[c], a[c] = xd[c], xdd[c]
    R0 = goal[0:9].reshape((3, 3))
    if m == 6:
        s, ds, dds = _ramp(t, goal[12])
        for c in range(3):
            sw[c] = s * goal[9 + c]
        exp3(sw, E)
        for i in range(3):
            axis = R0[i, 0] * goal[9] + R0[i, 1] * goal[10] + R0[i, 2] * goal[11]
            v[3 + i], a[3 + i] = weight * ds * axis, weight * dds * axis
            for j in range(3):
                Rd[i, j] = R0[i, 0] * E[0, j] + R0[i, 1] * E[1, j] + R0[i, 2] * E[2, j]
    if not math.isnan(clock[0]):
        dt = t - clock[0]
        for k in range(n):
            q[k] = min(high[k], max(low[k], q[k] + dt * qd[k] + 0.5 * dt * dt * qdd[k]))
    for _ in range(NEWTON_STEPS):
        tip_frame(arm, q, ch, work, sec, T, J)
        _task_rows(T, J, x, Rd, weight, m, A, e, Rt)
        big = 0.0
        for r in range(m):
            big = max(big, abs(e[r]))
        if big <= NEWTON_TOLERANCE:
            break
        _min_norm(A, m, q, low, high, e, free, dq, y, H)
        for k in range(n):
            q[k] = min(high[k], max(low[k], q[k] + dq[k]))
    chain(arm, q, ch, work, True)
    frame_from_chain(ch, sec, T, J)
    _task_rows(T, J, x, Rd, weight, m, A, e, Rt)
    clock[0] = t
    for k in range(n):
        qdd[k] = 0.0
    if _min_norm(A, m, q, low, high, v, free, qd, y, H):
        derivative_from_chain(arm, data, q, qd, sec, J, Jdot)
        for k in range(n):              # z = Adot_f^T y
            acc = 0.0
            for r in range(m):
                Ad[r, k] = Jdot[r, k] if r < 3 else weight * Jdot[r, k]
                acc += Ad[r, k] * y[r]
            z[k] = free[k] * acc
        for r in range(m):              # rhs = a - Adot qd - A_f z
            acc = a[r]
            for k in range(n):
                acc -= Ad[r, k] * qd[k] + A[r, k] * z[k]
            rhs[r] = acc
        _solve_factored(H, rhs, m)
        for k in range(n):
            if free[k] > 0.0:
                acc = z[k]
                for r in range(m):
                    acc += A[r, k] * rhs[r]
                qdd[k] = acc
    return math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
