"""
Element-wise clipping for the control loop's short vectors.

`clip` gives `numpy.clip`'s result (NaN stays NaN; where ``low > high``, ``high``) for about
a third of its cost on vectors of a few entries: `numpy.clip` passes through Python-level
wrappers and argument checks on every call, a tick clips about ten times.
"""

import numpy as np

_maximum, _minimum = np.maximum, np.minimum


def clip(values, low, high, out=None):
    """Return `values` clipped to ``[low, high]`` (arrays or scalars that broadcast); in `out`."""
    return _minimum(_maximum(values, low, out=out), high, out=out)
