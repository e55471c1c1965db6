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
evaluated for ``t < 1`` by series (f_6, f_7) and the stable downward recursion
``f_m = 1/m! - t f_{m+2}``, above by the stable upward recursion ``f_{m+2} = (1/m! - f_m)/t``
from ``cos`` and ``sin``: no ``1/phi`` anywhere.

Angular Jacobians are in space form: ``dR/dq_a = [kap_a]x R`` (``kap`` in the section base
frame); ``dkap[:, a, b] = d kap_a / d q_b``. All functions are Numba-compiled and also callable
from Python with float64 NumPy arrays; their work arrays are named buffers (`SectionWork`,
`Chain`, see `data.py`) created once.
"""

import math

import numpy as np

from continuum_ctrl.models.continuum.data import section_work
from continuum_ctrl.numerics.jit import compiled
from continuum_ctrl.numerics.so3 import rodrigues

SQRT3 = math.sqrt(3.0)
#: `chain`'s `deriv` for compiled callers (NumPy booleans: numerics.jit, no literal arguments)
WITH_DERIVATIVES, WITHOUT_DERIVATIVES = np.True_, np.False_
_TERMS = 12
_INV_FACT = np.array([1.0 / math.factorial(k) for k in range(2 * _TERMS + 8)])


@compiled(inline='always')
def entire(t, f):
    """Fill ``f[0..7]`` with ``f_m(t)``, accurate to about 1e-16 relative, for ``t >= 0``."""
    if t < 1.0:
        for m in range(6, 8):           # series for the last two, then downward (stable)
            acc = 0.0
            for k in range(_TERMS - 1, -1, -1):
                acc = _INV_FACT[2 * k + m] - t * acc
            f[m] = acc
        for m in range(5, -1, -1):
            f[m] = _INV_FACT[m] - t * f[m + 2]
    else:
        a = math.sqrt(t)
        f[0] = math.cos(a)
        f[1] = math.sin(a) / a
        for m in range(6):
            f[m + 2] = (_INV_FACT[m] - f[m]) / t


@compiled(inline='always')
def entire_derivatives(t, f, d1, d2):
    """Fill ``f`` (8,), ``d1 = f_m'`` (6,) and ``d2 = f_m''`` (4,) at ``t``."""
    entire(t, f)
    for m in range(6):
        d1[m] = 0.5 * (m * f[m + 2] - f[m + 1])
    for m in range(4):
        d2[m] = 0.5 * (m * d1[m + 2] - d1[m + 1])


@compiled(inline='always')
def jacobian_map(radius, E):
    """Fill ``E = d(s, u, w)/dq``, (3, 3), constant for a section of PMA radius `radius`."""
    E[0, :] = 1.0 / 3.0
    E[1, 0] = -2.0 / (3.0 * radius)
    E[1, 1] = 1.0 / (3.0 * radius)
    E[1, 2] = 1.0 / (3.0 * radius)
    E[2, 0] = 0.0
    E[2, 1] = -1.0 / (SQRT3 * radius)
    E[2, 2] = 1.0 / (SQRT3 * radius)


@compiled(inline='always')
def arc_variables(length, radius, q):
    """Return ``(s, u, w)`` of one section: arc length [m] and bending vector [rad]."""
    s = length + (q[0] + q[1] + q[2]) / 3.0
    u = (q[1] + q[2] - 2.0 * q[0]) / (3.0 * radius)
    w = (q[2] - q[1]) / (SQRT3 * radius)
    return s, u, w


@compiled(inline='always')
def _times_f(mval, mu, mw, F, F1, F2, tu, tw, tuu, tww):
    """Value, gradient and Hessian in (u, w) of ``m(u, w) F(t(u, w))``, m linear, t_uw = 0."""
    g_u = mu * F + mval * F1 * tu
    g_w = mw * F + mval * F1 * tw
    g_uu = 2.0 * mu * F1 * tu + mval * (F2 * tu * tu + F1 * tuu)
    g_uw = mu * F1 * tw + mw * F1 * tu + mval * F2 * tu * tw
    g_ww = 2.0 * mw * F1 * tw + mval * (F2 * tw * tw + F1 * tww)
    return mval * F, g_u, g_w, g_uu, g_uw, g_ww


@compiled(inline='always')
def _to_q(E, vy, hy, T, v, dv, d2v):
    """Map the (s, u, w)-gradient (3, 3) and Hessian (3, 3, 3) of a 3-vector to q."""
    for c in range(3):
        for a in range(3):
            dv[c, a] = vy[c, 0] * E[0, a] + vy[c, 1] * E[1, a] + vy[c, 2] * E[2, a]
            for y in range(3):
                T[c, y, a] = hy[c, y, 0] * E[0, a] + hy[c, y, 1] * E[1, a] + hy[c, y, 2] * E[2, a]
        for a in range(3):
            for b in range(a, 3):
                d2v[c, a, b] = d2v[c, b, a] = (E[0, a] * T[c, 0, b] + E[1, a] * T[c, 1, b]
                                               + E[2, a] * T[c, 2, b])


@compiled(inline='always')
def _fill_row(c, h, s, v, vy, hy):
    """Component c of ``s h(u, w)``: value, (s, u, w)-gradient and Hessian from `_times_f`."""
    v[c] = s * h[0]
    vy[c, 0] = h[0]
    vy[c, 1] = s * h[1]
    vy[c, 2] = s * h[2]
    hy[c, 0, 0] = 0.0
    hy[c, 0, 1] = hy[c, 1, 0] = h[1]
    hy[c, 0, 2] = hy[c, 2, 0] = h[2]
    hy[c, 1, 1] = s * h[3]
    hy[c, 1, 2] = hy[c, 2, 1] = s * h[4]
    hy[c, 2, 2] = s * h[5]


@compiled(inline='always')
def _section_vector(length, radius, q, c1, c2, tscale, i1, i2, v, dv, d2v, work):
    """``v = s [c1 u F, c1 w F, c2 G]``, ``F = f_i1(t)``, ``G = f_i2(t)``, ``t = tscale phi^2``."""
    s, u, w = arc_variables(length, radius, q)
    t = tscale * (u * u + w * w)
    f, d1, d2, vy, E, hy, T = work.f, work.d1, work.d2, work.vy, work.E, work.hy, work.T
    entire_derivatives(t, f, d1, d2)
    tu = 2.0 * tscale * u
    tw = 2.0 * tscale * w
    tt = 2.0 * tscale
    hx = _times_f(c1 * u, c1, 0.0, f[i1], d1[i1], d2[i1], tu, tw, tt, tt)
    hy_ = _times_f(c1 * w, 0.0, c1, f[i1], d1[i1], d2[i1], tu, tw, tt, tt)
    hz = _times_f(c2, 0.0, 0.0, f[i2], d1[i2], d2[i2], tu, tw, tt, tt)
    _fill_row(0, hx, s, v, vy, hy)
    _fill_row(1, hy_, s, v, vy, hy)
    _fill_row(2, hz, s, v, vy, hy)
    jacobian_map(radius, E)
    _to_q(E, vy, hy, T, v, dv, d2v)


@compiled()
def section_point(length, radius, q, xi, p, dp, d2p, work):
    """
    Fill the backbone point ``p(xi)`` (3,) [m], ``dp/dq`` (3, 3), ``d2p/dq2`` (3, 3, 3).

    `work`: a `SectionWork`.
    """
    _section_vector(length, radius, q, xi * xi, xi, xi * xi, 2, 1, p, dp, d2p, work)


@compiled()
def section_cog(length, radius, q, pbar, dpbar, d2pbar, work):
    """Fill the section CoG ``pbar`` (3,) [m] and its first and second q-derivatives."""
    _section_vector(length, radius, q, 1.0, 1.0, 1.0, 3, 2, pbar, dpbar, d2pbar, work)


@compiled(inline='always')
def cx(a0, a1, a2, b0, b1, b2):
    """Return the cross product ``a x b`` of two 3-vectors given by components, as a tuple."""
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@compiled(inline='always')
def cross(a, b, out):
    """Write ``a x b`` into `out` (3-vectors)."""
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0] = x
    out[1] = y
    out[2] = z


@compiled()
def section_rotation(radius, q, xi, R, kap, dkap, work):
    """
    Fill ``R(xi)`` (3, 3), space angular Jacobian ``kap`` (3, 3) and ``dkap`` (3, 3, 3).

    `work`: a `SectionWork`.
    """
    _, u, w = arc_variables(1.0, radius, q)
    f, d1, d2, E = work.f, work.d1, work.d2, work.E
    th, x1, x2, y1, y2, y3 = work.th, work.x1, work.x2, work.y1, work.y2, work.y3
    thc, kc, dkc = work.thc, work.kc, work.dkc     # d theta/d(u, w), d kap/d(u, w), its derivative
    th[0] = -xi * w
    th[1] = xi * u
    th[2] = 0.0
    t = xi * xi * (u * u + w * w)
    entire_derivatives(t, f, d1, d2)
    S, A, B = f[1], f[2], f[3]
    rodrigues(th, t, S, A, R)
    thc[:] = 0.0
    thc[0, 1] = xi
    thc[1, 0] = -xi
    tc0 = 2.0 * xi * xi * u
    tc1 = 2.0 * xi * xi * w
    for c in range(2):
        cross(th, thc[c], x1)           # th x th_c
        cross(th, x1, x2)               # th x (th x th_c)
        for k in range(3):
            kc[c, k] = thc[c, k] + A * x1[k] + B * x2[k]
        for d in range(2):
            td = tc0 if d == 0 else tc1
            cross(thc[d], thc[c], y1)   # th_d x th_c
            cross(thc[d], x1, y2)       # th_d x (th x th_c)
            cross(th, y1, y3)           # th x (th_d x th_c)
            for k in range(3):
                dkc[c, d, k] = (d1[2] * td * x1[k] + A * y1[k] + d1[3] * td * x2[k]
                                + B * (y2[k] + y3[k]))
    jacobian_map(radius, E)
    T = work.dkq                        # T[c, k, b] = sum_d dkc[c, d, k] E[1 + d, b]
    for c in range(2):
        for k in range(3):
            for b in range(3):
                T[c, k, b] = dkc[c, 0, k] * E[1, b] + dkc[c, 1, k] * E[2, b]
    for k in range(3):
        for a in range(3):
            kap[k, a] = kc[0, k] * E[1, a] + kc[1, k] * E[2, a]
            for b in range(3):
                dkap[k, a, b] = E[1, a] * T[0, k, b] + E[2, a] * T[1, k, b]


@compiled(inline='always')
def rotate_matrix(Rb, local, out):
    """Write ``Rb @ local`` for a (3, 3) array `local` into `out`."""
    for j in range(3):
        for i in range(3):
            out[i, j] = Rb[i, 0] * local[0, j] + Rb[i, 1] * local[1, j] + Rb[i, 2] * local[2, j]


@compiled(inline='always')
def rotate_tensor(Rb, local, out):
    """Write ``out[:, j, k] = Rb @ local[:, j, k]`` for (3, 3, 3) arrays."""
    for j in range(3):
        for k in range(3):
            for i in range(3):
                out[i, j, k] = (Rb[i, 0] * local[0, j, k] + Rb[i, 1] * local[1, j, k]
                                + Rb[i, 2] * local[2, j, k])


@compiled()
def chain(arm, q, ch, work, deriv):
    """
    Fill the section frames of `Chain` `ch` and the tip-frame motion columns of every joint.

    ``ch.Rb[i]``, ``ch.ob[i]``: orientation and origin of section i's base frame (after its
    fixed joint) in the arm base frame; ``ch.tip_R[i]``, ``ch.tip_o[i]``: its tip frame. For
    joint ``l`` of section ``i``: ``(ch.om[l], ch.v0[l])`` is the spatial velocity (angular
    [rad/m], linear at the world origin [m/m]) of section i's tip frame per unit ``qd_l``, so a
    point x attached downstream moves by ``v0[l] + om[l] x x``. If `deriv`, ``ch.dom[l, b]``,
    ``ch.dv0[l, b]``: their derivatives in q_(3i+b), the same section's joints. `arm`: the
    model (`data.Arm`); `work`: a `SectionWork`.
    """
    n = arm.length.shape[0]
    p, dp, d2p, R1, kap, dkap = ch.p, ch.dp, ch.d2p, ch.R, ch.kap, ch.dkap
    dpw, d2pw, kw, dkw = ch.dpw, ch.d2pw, ch.kw, ch.dkw
    for i in range(n):
        cg, sg = math.cos(arm.twist[i]), math.sin(arm.twist[i])
        B = ch.Rb[i]
        for r in range(3):
            up0 = 1.0 * (r == 0) if i == 0 else ch.tip_R[i - 1, r, 0]
            up1 = 1.0 * (r == 1) if i == 0 else ch.tip_R[i - 1, r, 1]
            up2 = 1.0 * (r == 2) if i == 0 else ch.tip_R[i - 1, r, 2]
            upo = 0.0 if i == 0 else ch.tip_o[i - 1, r]
            B[r, 0] = cg * up0 + sg * up1
            B[r, 1] = -sg * up0 + cg * up1
            B[r, 2] = up2
            ch.ob[i, r] = upo + up2 * arm.offset[i]
        qi = q[3 * i:3 * i + 3]
        section_point(arm.length[i], arm.radius[i], qi, 1.0, p, dp, d2p, work)
        section_rotation(arm.radius[i], qi, 1.0, R1, kap, dkap, work)
        Rt, ot = ch.tip_R[i], ch.tip_o[i]
        for r in range(3):
            ot[r] = ch.ob[i, r] + B[r, 0] * p[0] + B[r, 1] * p[1] + B[r, 2] * p[2]
            for c in range(3):
                Rt[r, c] = B[r, 0] * R1[0, c] + B[r, 1] * R1[1, c] + B[r, 2] * R1[2, c]
        rotate_matrix(B, dp, dpw)
        rotate_matrix(B, kap, kw)
        if deriv:
            rotate_tensor(B, d2p, d2pw)
            rotate_tensor(B, dkap, dkw)
        o0, o1, o2 = ot[0], ot[1], ot[2]
        for a in range(3):
            L = 3 * i + a
            w0, w1, w2 = kw[0, a], kw[1, a], kw[2, a]
            ch.om[L, 0], ch.om[L, 1], ch.om[L, 2] = w0, w1, w2
            t = cx(w0, w1, w2, o0, o1, o2)
            for c in range(3):
                ch.v0[L, c] = dpw[c, a] - t[c]
            if not deriv:
                continue
            for b in range(3):
                d0, d1, d2 = dkw[0, a, b], dkw[1, a, b], dkw[2, a, b]
                ch.dom[L, b, 0], ch.dom[L, b, 1], ch.dom[L, b, 2] = d0, d1, d2
                t = cx(d0, d1, d2, o0, o1, o2)
                t2 = cx(w0, w1, w2, dpw[0, b], dpw[1, b], dpw[2, b])
                for c in range(3):
                    ch.dv0[L, b, c] = d2pw[c, a, b] - t[c] - t2[c]


@compiled()
def tip_frame(arm, q, ch, work, sec, T, J):
    """
    Fill section `sec`'s tip frame: pose ``T`` (4, 4) and Jacobian ``J`` (6, 3n) [m, rad/m].

    ``J``: linear rows then angular rows, base-frame axes at the tip's origin (Pinocchio's
    ``LOCAL_WORLD_ALIGNED``); the columns of later sections are zero. Exact and smooth
    through the straight pose, from the motion columns of `chain` (without q-derivatives).
    """
    chain(arm, q, ch, work, WITHOUT_DERIVATIVES)
    frame_from_chain(ch, sec, T, J)


@compiled()
def frame_from_chain(ch, sec, T, J):
    """Fill `tip_frame`'s ``T`` and ``J`` of section `sec` from a filled `Chain` `ch`."""
    R, o = ch.tip_R[sec], ch.tip_o[sec]
    for r in range(3):
        for c in range(3):
            T[r, c] = R[r, c]
        T[r, 3] = o[r]
        T[3, r] = 0.0
    T[3, 3] = 1.0
    for L in range(J.shape[1]):
        if L < 3 * sec + 3:
            w0, w1, w2 = ch.om[L, 0], ch.om[L, 1], ch.om[L, 2]
            t = cx(w0, w1, w2, o[0], o[1], o[2])
            for c in range(3):
                J[c, L] = ch.v0[L, c] + t[c]
            J[3, L], J[4, L], J[5, L] = w0, w1, w2
        else:
            for c in range(6):
                J[c, L] = 0.0


@compiled()
def backbone_points(arm, q, ch, work, body, xi, out):
    """
    Fill ``out`` (1 + n len(xi), 3) [m]: the base origin, then each section's backbone at `xi`.

    Uses ``body.p``, ``body.dp``, ``body.d2p`` of a `Body` as scratch.
    """
    chain(arm, q, ch, work, WITHOUT_DERIVATIVES)
    for c in range(3):
        out[0, c] = 0.0
    P = xi.shape[0]
    for i in range(arm.length.shape[0]):
        B, ob = ch.Rb[i], ch.ob[i]
        for k in range(P):
            section_point(arm.length[i], arm.radius[i], q[3 * i:3 * i + 3], xi[k], body.p,
                          body.dp, body.d2p, work)
            p = body.p
            for c in range(3):
                out[1 + i * P + k, c] = ob[c] + B[c, 0] * p[0] + B[c, 1] * p[1] + B[c, 2] * p[2]


@compiled()
def backbone_frames(arm, q, ch, work, body, xi, points, frames):
    """
    Fill each section's backbone points and frames at `xi`, base frame.

    `points` (n len(xi), 3) [m], `frames` (n len(xi), 3, 3).

    Uses ``body.p``, ``body.dp``, ``body.d2p``, ``body.R``, ``body.kap``, ``body.dkap`` of a
    `Body` as scratch.
    """
    chain(arm, q, ch, work, WITHOUT_DERIVATIVES)
    P = xi.shape[0]
    for i in range(arm.length.shape[0]):
        B, ob = ch.Rb[i], ch.ob[i]
        for k in range(P):
            qi = q[3 * i:3 * i + 3]
            section_point(arm.length[i], arm.radius[i], qi, xi[k], body.p, body.dp, body.d2p,
                          work)
            section_rotation(arm.radius[i], qi, xi[k], body.R, body.kap, body.dkap, work)
            p, R, row = body.p, body.R, i * P + k
            for c in range(3):
                points[row, c] = ob[c] + B[c, 0] * p[0] + B[c, 1] * p[1] + B[c, 2] * p[2]
                for d in range(3):
                    frames[row, c, d] = B[c, 0] * R[0, d] + B[c, 1] * R[1, d] + B[c, 2] * R[2, d]


def section_pose(length, radius, q, xi):
    """Return ``(p, R)``: the disc at `xi` of one section, relative to its base frame [m]."""
    q = np.ascontiguousarray(q, dtype=float)
    p, dp, d2p = np.empty(3), np.empty((3, 3)), np.empty((3, 3, 3))
    R, kap, dkap = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3, 3))
    work = section_work()
    section_point(float(length), float(radius), q, float(xi), p, dp, d2p, work)
    section_rotation(float(radius), q, float(xi), R, kap, dkap, work)
    return p, R
