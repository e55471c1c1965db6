"""Motions inside an arm's joint limits, for tests that need a reference on any arm."""

import numpy as np

#: a joint without position limits moves this far (rad) around this position (rad)
UNBOUNDED_AMPLITUDE = 0.4
UNBOUNDED_CENTER = 0.3


def motion_range(model):
    """
    Return a center and an amplitude per joint (model units) for motions inside the limits.

    Bounded joints: the middle of the range and a quarter of it (at most 0.5); unbounded
    joints: UNBOUNDED_CENTER and UNBOUNDED_AMPLITUDE.
    """
    low, high = model.joint_limits()
    bounded = np.isfinite(low) & np.isfinite(high)
    low, high = np.where(bounded, low, 0.0), np.where(bounded, high, 0.0)
    center = np.where(bounded, 0.5 * (low + high), UNBOUNDED_CENTER)
    amplitude = np.where(bounded, np.minimum(0.25 * (high - low), 0.5), UNBOUNDED_AMPLITUDE)
    return center, amplitude
