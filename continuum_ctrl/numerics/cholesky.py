"""
Compiled Cholesky solve of a small SPD system in place (the task kernels' normal equations).

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
