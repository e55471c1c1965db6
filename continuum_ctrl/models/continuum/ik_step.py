"""
The compiled IK step of a continuum section's tip: `control.ik`'s step in one call.

Damped least squares with active-set joint limits and a null-space pull, after
`kinematics.tip_frame`; see `control.ik` for the method. Its scratch is one block of
`ik_scratch(n)` floats whose named views `ik_layout` carves (as `data.layout` does), its
settings and bounds name their entries by the constants below.
"""

from collections import namedtuple
import math

import numpy as np

from continuum_ctrl.models.continuum.data import also_compiled, layout, take
from continuum_ctrl.numerics.jit import compiled
from continuum_ctrl.models.continuum.kinematics import tip_frame
from continuum_ctrl.numerics.cholesky import cholesky_solve
from continuum_ctrl.numerics.so3 import log3

#: entries of the settings (3,): damping, the Levenberg-Marquardt mu, the pull's factor
DAMPING, MU, PULL_FACTOR = range(3)
#: rows of the bounds (5, n): lower and upper limits, mid-stroke, pull gain, largest step
LOWER, UPPER, MID, PULL, MAX_STEP = range(5)

#: scratch of one step for n joints: task error e (6,) (position, then weighted rotation),
#: relative rotation Rt (3, 3), task Jacobian A (6, n), step dq, pull z, free-joint mask
#: `free` (n,), the damped normal matrix H (6, 6) and its solution y (6,), the clipped start q
IKWork = namedtuple('IKWork', 'e Rt A dq z free H y q')


@also_compiled
def ik_layout(memory, n):
    """Return ``(size, IKWork)``: the named views of `ik_step`'s scratch `memory` (None: size)."""
    at, e = take(memory, 0, (6,))
    at, Rt = take(memory, at, (3, 3))
    at, A = take(memory, at, (6, n))
    at, dq = take(memory, at, (n,))
    at, z = take(memory, at, (n,))
    at, free = take(memory, at, (n,))
    at, H = take(memory, at, (6, 6))
    at, y = take(memory, at, (6,))
    at, q = take(memory, at, (n,))
    return at, IKWork(e, Rt, A, dq, z, free, H, y, q)


def ik_settings(damping, mu=1.0, pull_factor=1.0):
    """Return the settings (3,) of `ik_step`: `damping`, `mu` and the pull's factor."""
    settings = np.zeros(3)
    settings[DAMPING], settings[MU], settings[PULL_FACTOR] = damping, mu, pull_factor
    return settings


def ik_bounds(lower, upper, mid, pull, max_step):
    """Return the bounds (5, n) of `ik_step` from its five rows (n,) each."""
    bounds = np.zeros((5, len(lower)))
    for row, value in ((LOWER, lower), (UPPER, upper), (MID, mid), (PULL, pull),
                       (MAX_STEP, max_step)):
        bounds[row] = value
    return bounds


def ik_scratch(n):
    """Return the number of scratch floats `ik_step` needs for n joints."""
    return ik_layout(None, n)[0]


@compiled()
def ik_step(arm, memory, q0, sec, T, J, target, rotation, weight, settings, bounds, out, buf):
    """
    One IK step of section `sec`'s tip from `q0` (clipped to the limits first) into `out`.

    `target` (3,) [m], `rotation` (3, 3) and `weight` > 0 to weigh the orientation error;
    `settings` (DAMPING, MU, PULL_FACTOR); `bounds` rows LOWER, UPPER, MID, PULL, MAX_STEP
    (n,); `buf`: scratch of `ik_scratch(n)` floats; `memory`: the model's workspace block.
    Returns the position error [m] at the clipped `q0`.
    """
    n = q0.shape[0]
    data = layout(memory, arm.length.shape[0])[1]
    ch, work = data.chain, data.section
    lower, upper, mid, gain = bounds[LOWER], bounds[UPPER], bounds[MID], bounds[PULL]
    max_step = bounds[MAX_STEP]
    # views as locals: Numba 0.68 loses loop writes through a field of a layout made here
    w = ik_layout(buf, n)[1]
    q, e, Rt, A, dq, z, free, H, y = w.q, w.e, w.Rt, w.A, w.dq, w.z, w.free, w.H, w.y
    for k in range(n):
        q[k] = min(upper[k], max(lower[k], q0[k]))
    tip_frame(arm, q, ch, work, sec, T, J)
    m = 6 if weight > 0.0 else 3
    for c in range(3):
        e[c] = target[c] - T[c, 3]
    if m == 6:
        for a in range(3):
            for b in range(3):
                Rt[a, b] = (rotation[a, 0] * T[b, 0] + rotation[a, 1] * T[b, 1]
                            + rotation[a, 2] * T[b, 2])
        log3(Rt, e[3:6])
        for c in range(3, 6):
            e[c] *= weight
    for r in range(m):
        s = weight if r >= 3 else 1.0
        for k in range(n):
            A[r, k] = s * J[r, k]
    ee = 0.0
    for r in range(m):
        ee += e[r] * e[r]
    lam2 = settings[MU] * (settings[DAMPING] * settings[DAMPING] + ee)
    for k in range(n):
        g = 0.0
        for r in range(m):
            g += A[r, k] * e[r]
        free[k] = 0.0 if (q[k] <= lower[k] and g < 0.0) or (q[k] >= upper[k] and g > 0.0) else 1.0
        z[k] = settings[PULL_FACTOR] * gain[k] * (mid[k] - q[k])
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
        cholesky_solve(H, y, m)
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
