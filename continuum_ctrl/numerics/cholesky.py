"""
Compiled Cholesky solve of a small SPD system in place (mass matrices, normal equations).

Each function works on the leading m x m block of the arrays it is given and allocates
nothing.
"""

import math

from continuum_ctrl.numerics.jit import compiled


@compiled()
def cholesky_solve(H, y, m):
    """Solve ``H x = y`` in place (``y`` becomes x) for SPD `H` (m x m, lower triangle)."""
    cholesky(H, m)
    solve_factored(H, y, m)


@compiled()
def cholesky(H, m):
    """
    Overwrite the lower triangle of `H` (m x m) with its Cholesky factor; return whether SPD.

    A matrix that is not positive definite leaves NaN in the factor.
    """
    spd = True
    for j in range(m):
        s = H[j, j]
        for k in range(j):
            s -= H[j, k] * H[j, k]
        spd = spd and s > 0.0
        H[j, j] = math.sqrt(s) if s >= 0.0 else math.nan
        for i in range(j + 1, m):
            s = H[i, j]
            for k in range(j):
                s -= H[i, k] * H[j, k]
            H[i, j] = s / H[j, j]
    return spd


@compiled()
def solve_factored(H, y, m):
    """Solve ``L L^T x = y`` in place for the factor `L` that `cholesky` left in `H`."""
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
