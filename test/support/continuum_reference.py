"""
Independent references for the continuum tests: the arc-parameter form, by plain NumPy.

Nothing here shares code with the package's kinematics: poses come from the paper's
``Rz(theta) Px(lambda) Ry(xi phi) Px(-lambda) Rz(-theta)``, velocities from Richardson
finite differences, integrals from many-point Gauss-Legendre quadrature.
"""

import numpy as np

REFERENCE_ARM = {
    'type': 'continuum_cog',
    'sections': {'length': [0.2] * 3, 'radius': [0.013] * 3, 'mass': [0.1] * 3,
                 'max_extension': [0.04] * 3, 'stiffness': [2200.0] * 3,
                 'damping': [30.0] * 3},
}

#: the second, unequal arm: never seen by the beta fit
SECOND_ARM = {
    'type': 'continuum_cog',
    'gravity': [0.0, 0.0, 9.81],
    'sections': {'length': [0.25, 0.18, 0.12], 'radius': [0.016, 0.012, 0.009],
                 'mass': [0.15, 0.09, 0.05], 'max_extension': [0.05, 0.04, 0.03],
                 'stiffness': [2500.0, 1800.0, 1200.0], 'damping': [40.0, 25.0, 15.0],
                 'offset': [0.01, 0.02, 0.015], 'twist': [0.3, -0.7, 1.1]},
}


def arm(base, kind):
    """Return a copy of an arm spec with `model.type` set to `kind`."""
    return dict(base, type=kind, sections=dict(base['sections']))


def rot_z(a):
    """Return the homogeneous rotation about +Z by `a` [rad]."""
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def rot_y(a):
    """Return the homogeneous rotation about +Y by `a` [rad]."""
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1.0]])


def trans(x=0.0, z=0.0):
    """Return the homogeneous translation by (x, 0, z) [m]."""
    T = np.eye(4)
    T[0, 3] = x
    T[2, 3] = z
    return T


def arc_parameters(L, r, q, sqrt=np.sqrt, atan2=np.arctan2):
    """
    Return ``(theta, lam, phi)`` of a section: bending plane [rad], radius [m], angle [rad].

    `sqrt` and `atan2` come from the arithmetic wanted (NumPy, or mpmath for high precision);
    undefined when straight.
    """
    l1, l2, l3 = q
    s = L + (l1 + l2 + l3) / 3
    g = l1 ** 2 + l2 ** 2 + l3 ** 2 - l1 * l2 - l1 * l3 - l2 * l3
    phi = 2 * sqrt(g) / (3 * r)
    theta = atan2(sqrt(3.0) * (l3 - l2), l2 + l3 - 2 * l1)
    return theta, s / phi, phi


def arc_transform(L, r, q, xi):
    """Section pose at `xi` by the arc-parameter form (undefined when straight)."""
    theta, lam, phi = arc_parameters(L, r, q)
    return rot_z(theta) @ trans(lam) @ rot_y(xi * phi) @ trans(-lam) @ rot_z(-theta)


def base_transform(sections, q, i):
    """World pose of section i's base frame (after its fixed joint)."""
    T = np.eye(4)
    for j in range(i + 1):
        T = T @ trans(z=sections['offset'][j]) @ rot_z(sections['twist'][j])
        if j < i:
            T = T @ arc_transform(sections['length'][j], sections['radius'][j],
                                  q[3 * j:3 * j + 3], 1.0)
    return T


def disc_transform(sections, q, i, xi):
    """World pose of the disc at `xi` of section i."""
    return base_transform(sections, q, i) @ arc_transform(
        sections['length'][i], sections['radius'][i], q[3 * i:3 * i + 3], xi)


def local_cog(sections, q, i, points=40):
    """Section i's CoG in its base frame, by Gauss-Legendre quadrature of the arc form."""
    x, w = np.polynomial.legendre.leggauss(points)
    return sum(0.5 * wk * arc_transform(sections['length'][i], sections['radius'][i],
                                        q[3 * i:3 * i + 3], 0.5 * (xk + 1.0))[:3, 3]
               for xk, wk in zip(x, w))


def rate(f, q, qd, h=1e-5):
    """Time derivative of ``f(q)`` along ``qd``: Richardson-extrapolated central difference."""
    d1 = (f(q + h * qd) - f(q - h * qd)) / (2 * h)
    d2 = (f(q + 2 * h * qd) - f(q - 2 * h * qd)) / (4 * h)
    return (4 * d1 - d2) / 3


def vee(S):
    """Return the vector of a 3x3 (nearly) skew matrix."""
    return 0.5 * np.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]])


def filled(spec):
    """Return the `sections` mapping with the defaults (offset, twist) filled in."""
    sec = dict(spec['sections'])
    n = len(sec['length'])
    sec.setdefault('offset', [0.0] * n)
    sec.setdefault('twist', [0.0] * n)
    return sec


def integral_kinetic_energy(spec, q, qd, points=30):
    """Kinetic energy [J] of the disc-stack model, contract section 4, computed independently."""
    sec = filled(spec)
    x, w = np.polynomial.legendre.leggauss(points)
    K = 0.0
    for i in range(len(sec['length'])):
        m, r = sec['mass'][i], sec['radius'][i]
        inertia = np.array([r * r / 4, r * r / 4, r * r / 2])
        for xk, wk in zip(x, w):
            xi = 0.5 * (xk + 1.0)
            T = disc_transform(sec, q, i, xi)
            Td = rate(lambda qq: disc_transform(sec, qq, i, xi), q, qd)
            v = Td[:3, 3]
            Om = vee(T[:3, :3].T @ Td[:3, :3])
            K += 0.5 * wk * 0.5 * m * (v @ v + Om @ (inertia * Om))
    return K


def cog_kinetic_energy(spec, q, qd, beta):
    """Kinetic energy [J] of the CoG model, contract section 5, computed independently."""
    sec = filled(spec)
    bv1, bv2, bv3, bw1, bw2, bw3 = beta
    K = 0.0
    for i in range(len(sec['length'])):
        m, r, L = sec['mass'][i], sec['radius'][i], sec['length'][i]
        inertia = m * np.array([r * r / 4, r * r / 4, r * r / 2])
        Tb = base_transform(sec, q, i)
        Tbd = rate(lambda qq: base_transform(sec, qq, i), q, qd)
        Rb = Tb[:3, :3]
        a = Tbd[:3, 3]
        W = vee(Tbd[:3, :3] @ Rb.T)
        bbar = Rb @ local_cog(sec, q, i)
        cbar = Rb @ rate(lambda qq: local_cog(sec, qq, i), q, qd)
        Wb = np.cross(W, bbar)
        K += 0.5 * m * (a @ a + 2 * a @ Wb + 2 * a @ cbar + bv1 * Wb @ Wb + 2 * bv2 * Wb @ cbar
                        + bv3 * cbar @ cbar)
        Rmid = arc_transform(L, r, q[3 * i:3 * i + 3], 0.5)[:3, :3]
        Rmid_d = rate(lambda qq: arc_transform(L, r, qq[3 * i:3 * i + 3], 0.5)[:3, :3], q, qd)
        w_own = Rb @ vee(Rmid_d @ Rmid.T)
        Rhat = Rb @ Rmid
        Ihat = Rhat @ np.diag(inertia) @ Rhat.T
        K += 0.5 * (bw1 * W @ Ihat @ W + 2 * bw2 * W @ Ihat @ w_own + bw3 * w_own @ Ihat @ w_own)
    return K
