"""
Continuum-section kinematics, smooth through the straight pose, with exact q-derivatives.

Contract sections 2 and 3. A section with PMA length changes ``q = (l1, l2, l3)`` [m] has

    s = L + (l1 + l2 + l3)/3,  u = (l2 + l3 - 2 l1)/(3 r),  w = (l3 - l2)/(sqrt(3) r)
    p(xi) = s [xi^2 u A(t), xi^2 w A(t), xi S(t)],   t = xi^2 (u^2 + w^2) = (xi phi)^2
    R(xi) = exp([theta]x),  theta = xi (-w, u, 0)
    pbar  = int_0^1 p dxi = s [u B(phi^2), w B(phi^2), A(phi^2)]

with the entire functions ``f_m(t) = sum_k (-t)^k / (2k + m)!`` of ``t = a^2``: ``S = f_1 =
sin(a)/a``, ``A = f_2 = (1 - cos a)/a^2``, ``B = f_3 = (1 - S)/a^2``. Their t-derivatives are
``f_m' = (m f_{m+2} - f_{m+1})/2``, so every derivative is again a combination of the ``f_m``,
evaluated by series for ``t < 1`` and by the stable upward recursion
``f_{m+2} = (1/m! - f_m)/t`` from ``cos`` and ``sin`` above: no ``1/phi`` anywhere.

Angular Jacobians are in space form: ``dR/dq_a = [kap_a]x R`` (``kap`` in the section base
frame); ``dkap[:, a, b] = d kap_a / d q_b``. All functions are Numba-compiled and also callable
from Python with float64 NumPy arrays.
"""

import math

import numpy as np
from numba import njit

SQRT3 = math.sqrt(3.0)
_TERMS = 12
_INV_FACT = np.array([1.0 / math.factorial(k) for k in range(2 * _TERMS + 8)])


@njit(cache=True)
def entire(t, f):
    """Fill ``f[0..7]`` with ``f_m(t)``, accurate to about 1e-16 relative, for ``t >= 0``."""
    if t < 1.0:
        for m in range(8):
            acc = 0.0
            for k in range(_TERMS - 1, -1, -1):
                acc = _INV_FACT[2 * k + m] - t * acc
            f[m] = acc
    else:
        a = math.sqrt(t)
        f[0] = math.cos(a)
        f[1] = math.sin(a) / a
        for m in range(6):
            f[m + 2] = (_INV_FACT[m] - f[m]) / t


@njit(cache=True)
def entire_derivatives(t, f, d1, d2):
    """Fill ``f`` (8,), ``d1 = f_m'`` (6,) and ``d2 = f_m''`` (4,) at ``t``."""
    entire(t, f)
    for m in range(6):
        d1[m] = 0.5 * (m * f[m + 2] - f[m + 1])
    for m in range(4):
        d2[m] = 0.5 * (m * d1[m + 2] - d1[m + 1])


@njit(cache=True)
def jacobian_map(radius):
    """Return ``E = d(s, u, w)/dq``, (3, 3), constant for a section of PMA radius `radius`."""
    E = np.empty((3, 3))
    E[0, :] = 1.0 / 3.0
    E[1, 0] = -2.0 / (3.0 * radius)
    E[1, 1] = 1.0 / (3.0 * radius)
    E[1, 2] = 1.0 / (3.0 * radius)
    E[2, 0] = 0.0
    E[2, 1] = -1.0 / (SQRT3 * radius)
    E[2, 2] = 1.0 / (SQRT3 * radius)
    return E


@njit(cache=True)
def arc_variables(length, radius, q):
    """Return ``(s, u, w)`` of one section: arc length [m] and bending vector [rad]."""
    s = length + (q[0] + q[1] + q[2]) / 3.0
    u = (q[1] + q[2] - 2.0 * q[0]) / (3.0 * radius)
    w = (q[2] - q[1]) / (SQRT3 * radius)
    return s, u, w


@njit(cache=True)
def _times_f(mval, mu, mw, F, F1, F2, tu, tw, tuu, tww):
    """Value, gradient and Hessian in (u, w) of ``m(u, w) F(t(u, w))``, m linear, t_uw = 0."""
    g_u = mu * F + mval * F1 * tu
    g_w = mw * F + mval * F1 * tw
    g_uu = 2.0 * mu * F1 * tu + mval * (F2 * tu * tu + F1 * tuu)
    g_uw = mu * F1 * tw + mw * F1 * tu + mval * F2 * tu * tw
    g_ww = 2.0 * mw * F1 * tw + mval * (F2 * tw * tw + F1 * tww)
    return mval * F, g_u, g_w, g_uu, g_uw, g_ww


@njit(cache=True)
def _to_q(E, vy, hy, v, dv, d2v):
    """Map the (s, u, w)-gradient (3, 3) and Hessian (3, 3, 3) of a 3-vector to q."""
    for c in range(3):
        for a in range(3):
            acc = 0.0
            for y in range(3):
                acc += vy[c, y] * E[y, a]
            dv[c, a] = acc
        for a in range(3):
            for b in range(3):
                acc = 0.0
                for y in range(3):
                    for z in range(3):
                        acc += hy[c, y, z] * E[y, a] * E[z, b]
                d2v[c, a, b] = acc


@njit(cache=True)
def _section_vector(length, radius, q, c1, c2, tscale, i1, i2, v, dv, d2v):
    """``v = s [c1 u F, c1 w F, c2 G]``, ``F = f_i1(t)``, ``G = f_i2(t)``, ``t = tscale phi^2``."""
    s, u, w = arc_variables(length, radius, q)
    t = tscale * (u * u + w * w)
    f = np.empty(8)
    d1 = np.empty(6)
    d2 = np.empty(4)
    entire_derivatives(t, f, d1, d2)
    tu = 2.0 * tscale * u
    tw = 2.0 * tscale * w
    tt = 2.0 * tscale
    hx = _times_f(c1 * u, c1, 0.0, f[i1], d1[i1], d2[i1], tu, tw, tt, tt)
    hy_ = _times_f(c1 * w, 0.0, c1, f[i1], d1[i1], d2[i1], tu, tw, tt, tt)
    hz = _times_f(c2, 0.0, 0.0, f[i2], d1[i2], d2[i2], tu, tw, tt, tt)
    vy = np.zeros((3, 3))
    hy = np.zeros((3, 3, 3))
    for c, h in enumerate((hx, hy_, hz)):
        v[c] = s * h[0]
        vy[c, 0] = h[0]
        vy[c, 1] = s * h[1]
        vy[c, 2] = s * h[2]
        hy[c, 0, 1] = hy[c, 1, 0] = h[1]
        hy[c, 0, 2] = hy[c, 2, 0] = h[2]
        hy[c, 1, 1] = s * h[3]
        hy[c, 1, 2] = hy[c, 2, 1] = s * h[4]
        hy[c, 2, 2] = s * h[5]
    _to_q(jacobian_map(radius), vy, hy, v, dv, d2v)


@njit(cache=True)
def section_point(length, radius, q, xi, p, dp, d2p):
    """Fill the backbone point ``p(xi)`` (3,) [m], ``dp/dq`` (3, 3), ``d2p/dq2`` (3, 3, 3)."""
    _section_vector(length, radius, q, xi * xi, xi, xi * xi, 2, 1, p, dp, d2p)


@njit(cache=True)
def section_cog(length, radius, q, pbar, dpbar, d2pbar):
    """Fill the section CoG ``pbar`` (3,) [m] and its first and second q-derivatives."""
    _section_vector(length, radius, q, 1.0, 1.0, 1.0, 3, 2, pbar, dpbar, d2pbar)


@njit(cache=True)
def cross(a, b, out):
    """Write ``a x b`` into `out` (3-vectors)."""
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0] = x
    out[1] = y
    out[2] = z


@njit(cache=True)
def section_rotation(radius, q, xi, R, kap, dkap):
    """Fill ``R(xi)`` (3, 3), space angular Jacobian ``kap`` (3, 3) and ``dkap`` (3, 3, 3)."""
    _, u, w = arc_variables(1.0, radius, q)
    th = np.array([-xi * w, xi * u, 0.0])
    t = xi * xi * (u * u + w * w)
    f = np.empty(8)
    d1 = np.empty(6)
    d2 = np.empty(4)
    entire_derivatives(t, f, d1, d2)
    S, A, B = f[1], f[2], f[3]
    # R = I + S [th] + A [th]^2
    K = np.array([[0.0, -th[2], th[1]], [th[2], 0.0, -th[0]], [-th[1], th[0], 0.0]])
    K2 = K @ K
    for i in range(3):
        for j in range(3):
            R[i, j] = (1.0 if i == j else 0.0) + S * K[i, j] + A * K2[i, j]
    thc = np.zeros((2, 3))              # d theta / d(u, w)
    thc[0, 1] = xi
    thc[1, 0] = -xi
    tc = np.array([2.0 * xi * xi * u, 2.0 * xi * xi * w])
    kc = np.zeros((2, 3))
    dkc = np.zeros((2, 2, 3))
    x1 = np.empty(3)
    x2 = np.empty(3)
    y1 = np.empty(3)
    y2 = np.empty(3)
    y3 = np.empty(3)
    for c in range(2):
        cross(th, thc[c], x1)           # th x th_c
        cross(th, x1, x2)               # th x (th x th_c)
        for k in range(3):
            kc[c, k] = thc[c, k] + A * x1[k] + B * x2[k]
        for d in range(2):
            cross(thc[d], thc[c], y1)   # th_d x th_c
            cross(thc[d], x1, y2)       # th_d x (th x th_c)
            cross(th, y1, y3)           # th x (th_d x th_c)
            for k in range(3):
                dkc[c, d, k] = (d1[2] * tc[d] * x1[k] + A * y1[k] + d1[3] * tc[d] * x2[k]
                                + B * (y2[k] + y3[k]))
    E = jacobian_map(radius)
    for k in range(3):
        for a in range(3):
            kap[k, a] = kc[0, k] * E[1, a] + kc[1, k] * E[2, a]
            for b in range(3):
                acc = 0.0
                for c in range(2):
                    for d in range(2):
                        acc += dkc[c, d, k] * E[1 + c, a] * E[1 + d, b]
                dkap[k, a, b] = acc


@njit(cache=True)
def rotate_columns(Rb, local, out):
    """Write ``Rb @ local`` for a (3, m) or (3, m, m) array of local vectors into `out`."""
    flat_in = local.reshape(3, -1)
    flat_out = out.reshape(3, -1)
    for j in range(flat_in.shape[1]):
        for i in range(3):
            flat_out[i, j] = (Rb[i, 0] * flat_in[0, j] + Rb[i, 1] * flat_in[1, j]
                              + Rb[i, 2] * flat_in[2, j])


@njit(cache=True)
def chain(length, radius, offset, twist, q, Rb, ob, om, v0, dom, dv0):
    """
    Fill the section base frames and the tip-frame motion columns of every joint.

    ``Rb[i]``, ``ob[i]``: orientation and origin of section i's base frame (after its fixed
    joint) in the arm base frame. For joint ``l`` of section ``i``: ``(om[l], v0[l])`` is the
    spatial velocity (angular [rad/m], linear at the world origin [m/m]) of section i's tip
    frame per unit ``qd_l``, so a point x attached downstream moves by ``v0[l] + om[l] x x``.
    ``dom[l, b]``, ``dv0[l, b]``: their derivatives in q_(3i+b), the same section's joints.
    """
    n = length.shape[0]
    Rt = np.eye(3)
    ot = np.zeros(3)
    p = np.empty(3)
    dp = np.empty((3, 3))
    d2p = np.empty((3, 3, 3))
    R1 = np.empty((3, 3))
    kap = np.empty((3, 3))
    dkap = np.empty((3, 3, 3))
    dpw = np.empty((3, 3))
    d2pw = np.empty((3, 3, 3))
    kw = np.empty((3, 3))
    dkw = np.empty((3, 3, 3))
    tmp = np.empty(3)
    tmp2 = np.empty(3)
    for i in range(n):
        cg, sg = math.cos(twist[i]), math.sin(twist[i])
        for r in range(3):
            Rb[i, r, 0] = cg * Rt[r, 0] + sg * Rt[r, 1]
            Rb[i, r, 1] = -sg * Rt[r, 0] + cg * Rt[r, 1]
            Rb[i, r, 2] = Rt[r, 2]
            ob[i, r] = ot[r] + Rt[r, 2] * offset[i]
        qi = q[3 * i:3 * i + 3]
        section_point(length[i], radius[i], qi, 1.0, p, dp, d2p)
        section_rotation(radius[i], qi, 1.0, R1, kap, dkap)
        B = Rb[i]
        ot = ob[i] + B @ p
        Rt = B @ R1
        rotate_columns(B, dp, dpw)
        rotate_columns(B, d2p, d2pw)
        rotate_columns(B, kap, kw)
        rotate_columns(B, dkap, dkw)
        for a in range(3):
            L = 3 * i + a
            om[L] = kw[:, a]
            cross(om[L], ot, tmp)
            v0[L] = dpw[:, a] - tmp
            for b in range(3):
                dom[L, b] = dkw[:, a, b]
                cross(dom[L, b], ot, tmp)
                cross(om[L], dpw[:, b], tmp2)
                v0_ab = d2pw[:, a, b] - tmp - tmp2
                dv0[L, b] = v0_ab


def section_pose(length, radius, q, xi):
    """Return ``(p, R)``: the disc at `xi` of one section, relative to its base frame [m]."""
    q = np.ascontiguousarray(q, dtype=float)
    p, dp, d2p = np.empty(3), np.empty((3, 3)), np.empty((3, 3, 3))
    R, kap, dkap = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3, 3))
    section_point(float(length), float(radius), q, float(xi), p, dp, d2p)
    section_rotation(float(radius), q, float(xi), R, kap, dkap)
    return p, R
