"""
Christoffel symbols and the Coriolis matrix from ``M`` and ``dM/dq``, numerically.

``dM[i, j, k] = dM_ij / dq_k``. The symbols of the first kind are
``c_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i)`` and ``C_ij = sum_k c_ijk qd_k``,
which makes ``Mdot - 2C`` skew-symmetric.
"""

import numpy as np


def christoffel_symbols(dM):
    """All ``c_ijk``, shape (n, n, n), from ``dM`` of shape (n, n, n)."""
    return 0.5 * (dM + dM.transpose(0, 2, 1) - dM.transpose(2, 0, 1))


def coriolis_from_dM(dM, qd):
    """Coriolis matrix ``C(q, qd)``, (n, n), from ``dM`` (n, n, n) and velocity ``qd`` (n,)."""
    qd = np.asarray(qd, dtype=float)
    mdot = dM @ qd                                   # sum_k dM_ij/dq_k qd_k  = Mdot_ij
    # sum_k dM_ik/dq_j qd_k and sum_k dM_jk/dq_i qd_k
    return 0.5 * (mdot + np.einsum('ikj,k->ij', dM, qd) - np.einsum('jki,k->ij', dM, qd))


def mass_matrix_rate(dM, qd):
    """``Mdot = sum_k dM/dq_k qd_k``, (n, n)."""
    return dM @ np.asarray(qd, dtype=float)


def skew_residual(mdot, C):
    """Largest entry of the symmetric part of ``Mdot - 2C``; zero for a consistent C."""
    N = mdot - 2.0 * C
    return float(np.max(np.abs(N + N.T))) / 2.0
