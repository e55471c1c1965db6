"""
Compiled SO(3) maps: `log3` and `exp3`, Pinocchio's ``log3`` and ``exp3`` on output arrays.

Called from the task kernels, which allocate nothing: each fills an array it is given.
"""

import math

from continuum_ctrl.numerics.jit import compiled


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
def exp3(w, R):
    """Fill ``R`` (3, 3) with the rotation of rotation vector `w` [rad] (Rodrigues)."""
    t = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    if t < 1e-8:
        S, A = 1.0 - t / 6.0 * (1.0 - t / 20.0), 0.5 - t / 24.0 * (1.0 - t / 30.0)
    else:
        a = math.sqrt(t)
        S, A = math.sin(a) / a, (1.0 - math.cos(a)) / t
    rodrigues(w, t, S, A, R)


@compiled()
def rodrigues(w, t, S, A, R):
    """
    Fill ``R = I + S [w] + A [w]^2`` (3, 3), with ``[w]^2 = w w^T - t I`` and ``t = |w|^2``.

    With ``S = sin|w| / |w|`` and ``A = (1 - cos|w|) / t`` it is the rotation of `w`; callers
    that have these coefficients already (a series near zero, with derivatives) pass them.
    """
    for i in range(3):
        for j in range(3):
            R[i, j] = A * w[i] * w[j] + (1.0 - A * t if i == j else 0.0)
    R[0, 1] -= S * w[2]
    R[1, 0] += S * w[2]
    R[0, 2] += S * w[1]
    R[2, 0] -= S * w[1]
    R[1, 2] -= S * w[0]
    R[2, 1] += S * w[0]
