"""
The compiled task-space sample of a continuum section's tip: `control.task_space`'s method.

`task_step` is one sample of `control.task_space.TaskReference` in one call: the tip path
point (`paths.path_sample`), Newton IK from the previous solution, ``qd_d`` and ``qdd_d``.
Its goal (`goal_layout`, `Goal`) and its scratch (`task_layout`, `TaskWork`) are blocks of
named views, as in `data.layout`.
"""

from collections import namedtuple
import math

import numpy as np

from continuum_ctrl.models.continuum.data import also_compiled, layout, take
from continuum_ctrl.models.continuum.frames import derivative_from_chain
from continuum_ctrl.numerics.jit import compiled
from continuum_ctrl.models.continuum.kinematics import (chain, frame_from_chain, tip_frame,
                                                        WITH_DERIVATIVES)
from continuum_ctrl.models.continuum.paths import path_sample
from continuum_ctrl.numerics.cholesky import cholesky_solve, solve_factored
from continuum_ctrl.numerics.ramps import minimum_jerk_ramp
from continuum_ctrl.numerics.so3 import exp3, log3

#: Newton steps per task sample at most, and the task error they stop at (m; rad times weight)
NEWTON_STEPS, NEWTON_TOLERANCE = 4, 1e-10

#: the orientation of a move: the start orientation R0 (3, 3), the body-frame rotation vector
#: `axis` (3,) [rad] reached at its end, the move's `duration` (1,) [s]; and the `offset` (3,)
#: [m, base frame] added to every path point fed to the IK (the task-space correction,
#: control/tip_correction.py)
Goal = namedtuple('Goal', 'R0 axis duration offset')

#: scratch of one sample for n joints: task error e, task velocity v and acceleration a,
#: ``y = (A A^T)^-1 v`` and a right-hand side `rhs` (6,); the Cholesky factor H (6, 6); the
#: desired, relative and ramped rotations Rd, Rt, E (3, 3) and the ramped rotation vector sw
#: (3,); the task Jacobian A and its rate Ad (6, n); free-joint mask `free`, Newton step dq,
#: ``z = Adot_f^T y``, the previous sample's solution `p` and how far this sample may move
#: each joint from it, `budget` (n,)
TaskWork = namedtuple('TaskWork', 'e v a y rhs H Rd Rt E sw A Ad free dq z p budget')


@also_compiled
def goal_layout(memory):
    """Return ``(size, Goal)``: the named views of a goal block `memory` (None: its size)."""
    at, R0 = take(memory, 0, (3, 3))
    at, axis = take(memory, at, (3,))
    at, duration = take(memory, at, (1,))
    at, offset = take(memory, at, (3,))
    return at, Goal(R0, axis, duration, offset)


def new_goal(R0, axis=(0.0, 0.0, 0.0), duration=1.0):
    """
    Return a goal block: from orientation `R0` (3, 3), turn by `axis` [rad] over `duration`.

    Its `offset` starts at zero.
    """
    block = np.zeros(goal_layout(None)[0])
    named = goal_layout(block)[1]
    named.R0[:], named.axis[:], named.duration[0] = R0, axis, duration
    return block


@also_compiled
def task_layout(memory, n):
    """Return ``(size, TaskWork)``: the named views of `task_step`'s scratch (None: size)."""
    at, e = take(memory, 0, (6,))
    at, v = take(memory, at, (6,))
    at, a = take(memory, at, (6,))
    at, y = take(memory, at, (6,))
    at, rhs = take(memory, at, (6,))
    at, H = take(memory, at, (6, 6))
    at, Rd = take(memory, at, (3, 3))
    at, Rt = take(memory, at, (3, 3))
    at, E = take(memory, at, (3, 3))
    at, sw = take(memory, at, (3,))
    at, A = take(memory, at, (6, n))
    at, Ad = take(memory, at, (6, n))
    at, free = take(memory, at, (n,))
    at, dq = take(memory, at, (n,))
    at, z = take(memory, at, (n,))
    at, p = take(memory, at, (n,))
    at, budget = take(memory, at, (n,))
    return at, TaskWork(e, v, a, y, rhs, H, Rd, Rt, E, sw, A, Ad, free, dq, z, p, budget)


def task_scratch(n):
    """Return the number of scratch floats `task_step` needs for n joints."""
    return task_layout(None, n)[0]


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
        cholesky_solve(H, y, m)
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


@compiled()
def _descent(A, m, q, low, high, e, dq):
    """
    Write into ``dq`` the steepest descent of ``|e - A dq|`` over the joints free to move.

    Only the joints free to move that way, scaled to the minimum along it: the Newton step
    when `_min_norm` holds every joint. A straight arm with all its PMAs at their lower
    bound (vented, or a start the holding bounds keep) cannot follow a tip path out and down
    to first order (the tip falls only as the square of the bend), so no exact step exists,
    but this one bends it, and the next ones follow.
    """
    n = q.shape[0]
    for k in range(n):
        d = 0.0
        for r in range(m):
            d += A[r, k] * e[r]
        dq[k] = 0.0 if (q[k] <= low[k] and d < 0.0) or (q[k] >= high[k] and d > 0.0) else d
    along, size = 0.0, 0.0
    for r in range(m):
        ad = 0.0
        for k in range(n):
            ad += A[r, k] * dq[k]
        along += e[r] * ad
        size += ad * ad
    scale = along / size if size > 0.0 else 0.0
    for k in range(n):
        dq[k] *= scale


@compiled()
def share_within(dq, budget):
    """Return the largest share (0-1) of the change `dq` that moves no joint k over budget[k]."""
    share = 1.0
    for k in range(dq.shape[0]):
        if abs(dq[k]) > budget[k]:
            share = min(share, budget[k] / abs(dq[k]))
    return share


@compiled()
def task_step(arm, memory, sec, t, path, goal, weight, state, clock, bounds, T, J, Jdot,
              sample, buf):
    """
    One task-space reference sample of section `sec`'s tip at `t` [s], in one call.

    Path point ``(x, xd, xdd)`` of the table `path` (`paths.path_sample`, into `sample` rows;
    ``x`` shifted by the goal's `offset`: the point fed to the IK) and desired orientation
    ``R = R0 exp(s axis)``, ``s`` the minimum-jerk ramp over the move (`goal`: a
    `goal_layout` block); then ``q_d`` by Newton steps from the previous solution
    predicted to `t` (`state` rows q, qd, qdd, the previous sample at ``clock[0]``, NaN for
    none), ``qd_d = A^+ xd_d`` and ``qdd_d = A^+ (xdd_d - Adot qd_d) + Adot^T y`` (the exact
    derivative of ``A^T (A A^T)^-1 v``, ``Adot`` from `frames.derivative_from_chain`), all over
    the joints free to move (`_min_norm`); written back into `state` and `clock`. No joint
    moves faster than its catch-up speed, from the previous sample or in ``qd_d`` (the whole
    change scaled, so it keeps its direction; ``qdd_d`` is then 0): where the path outruns
    what the arm reaches to first order (a straight arm asked to lower its tip), the
    near-singular system's step and ``qd_d`` would jump the reference by tens of mm in one
    sample. `weight` > 0 adds the orientation rows
    (`_task_rows`); `bounds` rows: lower, upper limits, catch-up speeds [m/s] (n,); `T`,
    `J`, `Jdot`: the frame's pose, Jacobian and its rate there; `buf`: scratch of
    `task_scratch(n)` floats. Returns the tip's distance to the path point [m].
    """
    n = state.shape[1]
    data = layout(memory, arm.length.shape[0])[1]
    ch, work = data.chain, data.section
    low, high = bounds[0], bounds[1]
    q, qd, qdd = state[0], state[1], state[2]
    x, xd, xdd = sample[0], sample[1], sample[2]
    m = 6 if weight > 0.0 else 3
    # views as locals: Numba 0.68 loses loop writes through a field of a layout made here
    w = task_layout(buf, n)[1]
    e, v, a, y, rhs, H, Rd, Rt, A, Ad = w.e, w.v, w.a, w.y, w.rhs, w.H, w.Rd, w.Rt, w.A, w.Ad
    E, sw, free, dq, z, p, budget = w.E, w.sw, w.free, w.dq, w.z, w.p, w.budget
    path_sample(path, t, x, xd, xdd)
    g = goal_layout(goal)[1]
    for c in range(3):
        x[c] += g.offset[c]
        v[c], a[c] = xd[c], xdd[c]
    R0, axis = g.R0, g.axis
    if m == 6:
        s, ds, dds = minimum_jerk_ramp(t, g.duration[0])
        for c in range(3):
            sw[c] = s * axis[c]
        exp3(sw, E)
        for i in range(3):
            turn = R0[i, 0] * axis[0] + R0[i, 1] * axis[1] + R0[i, 2] * axis[2]
            v[3 + i], a[3 + i] = weight * ds * turn, weight * dds * turn
            for j in range(3):
                Rd[i, j] = R0[i, 0] * E[0, j] + R0[i, 1] * E[1, j] + R0[i, 2] * E[2, j]
    bounded = False             # a sample after the previous one: its move within the speeds
    if not math.isnan(clock[0]):
        dt = t - clock[0]
        bounded = dt > 0.0
        for k in range(n):
            p[k], budget[k] = q[k], bounds[2, k] * dt
            q[k] = min(high[k], max(low[k], q[k] + dt * qd[k] + 0.5 * dt * dt * qdd[k]))
    for _ in range(NEWTON_STEPS):
        tip_frame(arm, q, ch, work, sec, T, J)
        _task_rows(T, J, x, Rd, weight, m, A, e, Rt)
        big = 0.0
        for r in range(m):
            big = max(big, abs(e[r]))
        if big <= NEWTON_TOLERANCE:
            break
        if not _min_norm(A, m, q, low, high, e, free, dq, y, H):
            _descent(A, m, q, low, high, e, dq)
        for k in range(n):
            q[k] = min(high[k], max(low[k], q[k] + dq[k]))
    if bounded:
        for k in range(n):
            dq[k] = q[k] - p[k]
        share = share_within(dq, budget)
        for k in range(n):
            q[k] = p[k] + share * dq[k]
    chain(arm, q, ch, work, WITH_DERIVATIVES)
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
        solve_factored(H, rhs, m)
        for k in range(n):
            if free[k] > 0.0:
                acc = z[k]
                for r in range(m):
                    acc += A[r, k] * rhs[r]
                qdd[k] = acc
    share = share_within(qd, bounds[2])
    if share < 1.0:                     # catching up: qd_d within the speeds, no qdd_d
        for k in range(n):
            qd[k] *= share
            qdd[k] = 0.0
    return math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
