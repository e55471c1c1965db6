"""
The poses a loop is linearized at: samples of its reference over one period.

    poses = poses_of(loop, initial, 4)        # [(t s, Pose)] of a ControlLoop's reference
    period, least = reference_period(spec), least_bandwidth(spec)
"""

import numpy as np

from continuum_ctrl.tuning.linear_loop import Pose

#: s; the span sampled when the reference has no period (a hold, waypoints)
SPAN = 4.0


def _frequencies(spec):
    """Return the reference's frequencies (Hz; a sinusoid's, a tip circle's), (k,)."""
    return np.atleast_1d(getattr(spec, 'frequency', getattr(spec, 'tip_frequency', 0.0)))


def reference_period(spec):
    """Return the reference's period (s): its slowest frequency's, else SPAN."""
    frequency = _frequencies(spec)
    positive = frequency[frequency > 0.0]
    return 1.0 / float(positive.min()) if positive.size else SPAN


def least_bandwidth(spec):
    """Return the least bandwidth (Hz): twice the reference's fastest frequency, else 0.5."""
    frequency = _frequencies(spec)
    return 2.0 * float(frequency.max()) if np.any(frequency > 0.0) else 0.5


def poses_of(loop, initial, count):
    """Return ``[(t, Pose)]`` at `count` times over one period of the loop's reference."""
    spec, model = loop.settings.reference, loop.model
    q0 = np.clip(initial, loop.low, loop.high)
    reference = spec.build(q0, loop.task) if spec.needs_task_space else spec.build(q0)
    times = reference_period(spec) * np.arange(count) / count
    return [(float(t), Pose.of(model, [np.array(s, dtype=float)
                                       for s in reference.sample(t)])) for t in times]
