"""
Element-wise clipping for the control loop's short vectors.

`clip` gives `numpy.clip`'s result (NaN stays NaN; where ``low > high``, ``high``) for about
a third of its cost on vectors of a few entries: `numpy.clip` passes through Python-level
wrappers and argument checks on every call, a tick clips about ten times.

`effort_limiter` gives the tick's last step on the force in one compiled call: the check for
non-finite values, the clamp and the rate limit, three to five NumPy calls otherwise.
"""

import math

import numpy as np

from continuum_ctrl.numerics.jit import cached_entry_point, compiled

_maximum, _minimum = np.maximum, np.minimum


def clip(values, low, high, out=None):
    """Return `values` clipped to ``[low, high]`` (arrays or scalars that broadcast); in `out`."""
    return _minimum(_maximum(values, low, out=out), high, out=out)


@compiled()
def limit_kernel(tau, low, high, step, effort):
    """See `effort_limiter`; all arrays (n,) float64."""
    for i in range(tau.size):
        if not math.isfinite(tau[i]):
            return False
    for i in range(tau.size):
        clamped = min(max(tau[i], low[i]), high[i])
        effort[i] = min(max(clamped, effort[i] - step[i]), effort[i] + step[i])
    return True


_limiter = cached_entry_point(limit_kernel, np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1),
                              np.zeros(1))


def effort_limiter():
    """
    Return ``limit_effort(tau, low, high, step, effort) -> bool``, compiled (or loaded) now.

    It moves `effort` (N or N m, in place) to `tau` clamped to ``[low, high]``, by at most
    `step`: ``effort = clip(clip(tau, low, high), effort - step, effort + step)`` element-wise
    (`step` inf: no rate limit). It returns False, leaving `effort` as it was, when `tau` holds
    a non-finite value or has not the length of `effort`. `low`, `high`, `step` and `effort`
    are C-contiguous float64 arrays of one length.
    """
    kernel = _limiter()

    def limit_effort(tau, low, high, step, effort):
        tau = np.ascontiguousarray(tau, dtype=float)    # a copy only for a model's odd return
        return tau.shape == effort.shape and kernel(tau, low, high, step, effort)
    return limit_effort
