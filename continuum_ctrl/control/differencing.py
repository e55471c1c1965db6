"""
Velocities from positions alone: the difference of two samples over the times they held.

    difference = PositionDifference(n)
    qd = difference(q, t, measured_at)   # m/s or rad/s (a buffer); None: beyond MAX_SPEED
    difference.source                    # STAMPS or RECEIVE_TIMES: what the last one used

PMA drivers (string potentiometers, encoders, motion capture) publish positions only. The
difference is taken over the samples' own times, their header stamps (`measured_at`), where
they are sane: non-zero, increasing, and spaced as the receive times are within
STAMP_SPACING; the receive times `t` carry the jitter of transport and of the executor's
queue, which a difference over 2 ms turns into velocity noise (2 ms of a 2 ms spacing: a
velocity off by its own size). Where the stamps are not sane (a driver that stamps nothing,
stamps at publication in bursts, or repeats its stamp), the receive times stand in. The first
sample, and one after `reset`, has no partner: its velocity is zero. The loop low-passes the
result by `velocity_filter` (control/loop.py), unless its observer replaces it
(control/observer.py).
"""

import numpy as np

#: largest accepted |velocity|, given or estimated from positions, m/s or rad/s
MAX_SPEED = 1e3
#: s; the largest difference between the stamps' spacing and the receive times' spacing of
#: two samples for the stamps to be used: the 10 ms p99 of joint_states latency under load
STAMP_SPACING = 0.01
#: `PositionDifference.source`: what the last velocity was differenced over
STAMPS, RECEIVE_TIMES = 'header stamps', 'receive times'


class PositionDifference:
    """The difference quotient of successive position samples (module doc), for n joints."""

    def __init__(self, n):
        self.qd = np.zeros(n)
        self._q = np.zeros(n)
        self._times = None              # (receive time, stamp) of the previous sample, s
        self.source = None

    def reset(self):
        """Forget the previous sample: the next one has zero velocity."""
        self._times = None

    def __call__(self, q, t, measured_at):
        """
        Return the velocity of `q` received at `t`, measured at `measured_at` (s; 0: none).

        None where it exceeds MAX_SPEED: the sample is not kept as the next one's partner (so
        one outlier is refused, not the sample after it too), and the velocity is unchanged.
        """
        if self._times is None:
            self.qd[:] = 0.0
        else:
            t_old, stamp_old = self._times
            dt, ds = t - t_old, measured_at - stamp_old
            sane = measured_at > 0.0 and stamp_old > 0.0 and ds > 0.0 and \
                abs(ds - dt) <= STAMP_SPACING
            self.source = STAMPS if sane else RECEIVE_TIMES
            span = ds if sane else dt
            if span <= 0.0:                 # two samples received at once: keep the last one
                return self.qd
            speed = (q - self._q) / span
            if not np.all(np.abs(speed) <= MAX_SPEED):
                return None
            self.qd[:] = speed
        self._q[:] = q
        self._times = (t, measured_at)
        return self.qd
