"""
The continuum models' evaluation modes: what one kernel evaluation fills besides M and g.

    from continuum_ctrl.models.continuum.modes import CORIOLIS
    model._run(q, qd, CORIOLIS)         # M, g, C and C qd in data.sums

NumPy int64 constants, not an IntEnum: a compiled caller passes no Python literal and no enum
member (numerics.jit: Numba would type each as a type of its own and compile the callee once
more for it), and a compiled kernel compares its `mode` argument with these module globals,
which Numba freezes as constants.
"""

import numpy as np

#: ``M`` and ``g`` only (no velocity terms)
MASS = np.int64(0)
#: also ``C`` and ``cq = C qd``, through ``Mdot`` and ``P`` (`coriolis_matrix`, `dynamics`)
CORIOLIS = np.int64(1)
#: also ``dM[i, j, k] = dM_ij/dq_k`` (`mass_matrix_derivative`; the integral model's C)
MASS_DERIVATIVE = np.int64(2)
#: ``cq = C qd`` alone, without ``C``, ``Md`` or ``P`` (the inverse and forward dynamics)
CQ_ALONE = np.int64(3)
#: every mode, in value order
MODES = (MASS, CORIOLIS, MASS_DERIVATIVE, CQ_ALONE)
