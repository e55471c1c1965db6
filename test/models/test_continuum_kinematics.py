"""Continuum-section kinematics: arc form, smoothness through straight, exact derivatives."""

from support.continuum_reference import arc_parameters, arc_transform, local_cog, REFERENCE_ARM
import mpmath as mp
import numpy as np
import pytest

from continuum_ctrl.models.continuum.data import section_work
from continuum_ctrl.models.continuum.kinematics import (entire, section_cog, section_point,
                                                        section_pose, section_rotation)

L, R = 0.2, 0.013


def point(q, xi, length=L, radius=R):
    """Return p, dp, d2p of one section."""
    out = np.empty(3), np.empty((3, 3)), np.empty((3, 3, 3))
    section_point(length, radius, np.asarray(q, dtype=float), xi, *out, section_work())
    return out


def rotation(q, xi, radius=R):
    """Return R, kap, dkap of one section."""
    out = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3, 3))
    section_rotation(radius, np.asarray(q, dtype=float), xi, *out, section_work())
    return out


def cog(q, length=L, radius=R):
    """Return pbar, dpbar, d2pbar of one section."""
    out = np.empty(3), np.empty((3, 3)), np.empty((3, 3, 3))
    section_cog(length, radius, np.asarray(q, dtype=float), *out, section_work())
    return out


def test_pose_and_cog_match_the_arc_form():
    rng = np.random.default_rng(1)
    sections = {'length': [L], 'radius': [R]}
    for _ in range(60):
        q = rng.uniform(0.0, 0.04, 3)
        xi = rng.uniform()
        p, Rm = section_pose(L, R, q, xi)
        T = arc_transform(L, R, q, xi)
        assert np.allclose(p, T[:3, 3], rtol=0, atol=1e-15)
        assert np.allclose(Rm, T[:3, :3], rtol=0, atol=1e-14)
        assert np.allclose(cog(q)[0], local_cog(sections, q, 0), rtol=0, atol=1e-15)


def test_entire_functions_against_mpmath_on_both_branches():
    mp.mp.dps = 40
    f = np.empty(8)
    for t in (0.0, 1e-12, 1e-4, 0.3, 0.999999, 1.0, 1.000001, 2.5, 9.0, 30.0):
        entire(t, f)
        for m in range(8):
            exact = mp.nsum(lambda k: (-mp.mpf(t)) ** k / mp.factorial(2 * k + m), [0, mp.inf])
            assert abs(f[m] - float(exact)) <= 2e-16 * max(1.0, abs(float(exact))), (t, m)


def test_smooth_and_differentiable_through_the_straight_pose():
    rng = np.random.default_rng(2)
    q0 = np.full(3, 0.02)                       # straight: all PMAs alike
    for _ in range(5):
        d = rng.normal(size=3)
        d -= d.mean()                           # a pure bending direction
        d /= np.linalg.norm(d)
        ts = np.linspace(-1e-6, 1e-6, 21)       # metres; includes t = 0
        for xi in (0.3, 1.0):
            vals = [point(q0 + t * d, xi) for t in ts]
            rots = [rotation(q0 + t * d, xi) for t in ts]
            assert all(np.isfinite(np.concatenate([a.ravel() for a in v + r]))
                       .all() for v, r in zip(vals, rots))
            p0, dp0, d2p0 = vals[10]
            h = ts[11] - ts[10]
            slope = (vals[11][0] - vals[9][0]) / (2 * h)
            assert np.allclose(slope, dp0 @ d, rtol=0, atol=1e-6 * np.abs(dp0).max())
            curv = (vals[11][1] - vals[9][1]) / (2 * h)
            assert np.allclose(curv, d2p0 @ d, rtol=0, atol=1e-6 * np.abs(d2p0).max())
            kslope = (rots[11][1] - rots[9][1]) / (2 * h)
            assert np.allclose(kslope, rots[10][2] @ d, rtol=0,
                               atol=1e-6 * np.abs(rots[10][2]).max())
            for (p, dp, d2p), t in zip(vals, ts):   # Lipschitz through zero: no blow-up
                assert np.abs(dp - dp0).max() <= 50 * abs(t) * max(1, np.abs(d2p0).max())


def _mp_section(q, xi, length=L, radius=R):
    """Arc-form p (3) and R (3x3) at high precision."""
    th, lam, phi = arc_parameters(length, radius, q, mp.sqrt, mp.atan2)

    def rz(a):
        return mp.matrix([[mp.cos(a), -mp.sin(a), 0, 0], [mp.sin(a), mp.cos(a), 0, 0],
                          [0, 0, 1, 0], [0, 0, 0, 1]])

    def px(d):
        return mp.matrix([[1, 0, 0, d], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])

    a = xi * phi
    ry = mp.matrix([[mp.cos(a), 0, mp.sin(a), 0], [0, 1, 0, 0], [-mp.sin(a), 0, mp.cos(a), 0],
                    [0, 0, 0, 1]])
    return rz(th) * px(lam) * ry * px(-lam) * rz(-th)


#: a bent pose and a pose with one PMA at rest run with the slow tests (high-precision
#: differences take seconds each); the pose 1e-4 rad from straight, the delicate one, always
@pytest.mark.parametrize('q', [pytest.param([0.031, 0.004, 0.017], marks=pytest.mark.slow),
                               pytest.param([0.0, 0.04, 0.01], marks=pytest.mark.slow),
                               [0.020001, 0.02, 0.019999]])
def test_derivatives_against_high_precision_differences(q):
    mp.mp.dps = 40
    xi = 0.7
    qm = [mp.mpf(v) for v in q]
    p, dp, d2p = point(q, xi)
    Rm, kap, dkap = rotation(q, xi)

    def entry(r, c):
        return lambda a, b, e: _mp_section([a, b, e], xi)[r, c]

    def deriv(r, c, order):
        return float(mp.diff(entry(r, c), qm, order))

    scale = 1.0 / R                             # rotation derivatives scale as 1/r
    for a in range(3):
        e = [0, 0, 0]
        e[a] = 1
        for c in range(3):
            assert abs(dp[c, a] - deriv(c, 3, tuple(e))) <= 1e-12
        dR = np.array([[deriv(r, c, tuple(e)) for c in range(3)] for r in range(3)])
        W = dR @ Rm.T
        assert np.allclose(kap[:, a], [W[2, 1], W[0, 2], W[1, 0]], rtol=0, atol=1e-11 * scale)
        for b in range(a, 3):
            e2 = list(e)
            e2[b] += 1
            for c in range(3):
                assert abs(d2p[c, a, b] - deriv(c, 3, tuple(e2))) <= 1e-9 * scale
                assert d2p[c, a, b] == pytest.approx(d2p[c, b, a], abs=1e-12)
    # dkap from second derivatives: d/dq_b (dR_a R^T) = d2R_ab R^T + dR_a dR_b^T
    dRs = [np.array([[deriv(r, c, tuple(int(k == a) for k in range(3))) for c in range(3)]
                     for r in range(3)]) for a in range(3)]
    for a in range(3):
        for b in range(3):
            order = tuple(int(k == a) + int(k == b) for k in range(3))
            d2R = np.array([[deriv(r, c, order) for c in range(3)] for r in range(3)])
            S = d2R @ Rm.T + dRs[a] @ dRs[b].T
            assert np.allclose(dkap[:, a, b], [S[2, 1], S[0, 2], S[1, 0]],
                               rtol=0, atol=1e-8 * scale ** 2)


def test_cog_derivatives_against_richardson_differences():
    rng = np.random.default_rng(3)
    h = 1e-5
    lmax = REFERENCE_ARM['sections']['max_extension'][0]
    for q in [rng.uniform(0, lmax, 3) for _ in range(4)] + [np.full(3, 0.01)]:
        pbar, dpbar, d2pbar = cog(q)
        for a in range(3):
            e = np.zeros(3)
            e[a] = h

            def fd(k):
                d1 = (cog(q + e)[k] - cog(q - e)[k]) / (2 * h)
                d2 = (cog(q + 2 * e)[k] - cog(q - 2 * e)[k]) / (4 * h)
                return (4 * d1 - d2) / 3
            assert np.allclose(fd(0), dpbar[:, a], rtol=0, atol=1e-11)
            assert np.allclose(fd(1), d2pbar[:, :, a], rtol=0, atol=1e-7)
