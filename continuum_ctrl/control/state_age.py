"""
The state the law acts on without valves: the measured one, carried over its age to the tick.

    age = state_age(t, measured_at)          # s, 0..MAX_AGE
    carry(age, q, qd, qdd_des, q_now, qd_now)

A state is some time old when a tick reads it (transport, the executor's queue, the phase
between the sensor's clock and the controller's), and that age changes from tick to tick.
The error between the reference at the tick and a state of its stamp holds ``qd_des age``
(and ``qdd_des age`` in velocity), so kp turns the age's jitter into a command that jumps
every tick: on the MuJoCo Panda at kp 900, states 0-2 ms old, varying, made the commands vary
by 170 N m/s against 7 N m/s with none (in process, bench/rigid_payload.py ``--plant
publish_rate_hz=700 sensor.jitter=0.001``). Carried to the tick, the state leaves in the
error only the tracking error's own change over the age.

The step is along the measured velocity and the reference's acceleration (the arm's under
tracking, without noise): over a few ms the model's forward dynamics would give the same to
the tracking error's acceleration times the age squared. The valve compensation
(control/compensation.py) predicts from the same stamp with the model, over the valves' delay
as well; this is its step where there are no valves and the age is the only gap. An age
beyond MAX_AGE is carried over MAX_AGE (the watchdog's `state_timeout` ends control before).
"""

import numpy as np

from continuum_ctrl.control.compensation import MAX_AGE
from continuum_ctrl.numerics.jit import cached_entry_point, compiled


def state_age(t, measured_at):
    """Return the age (s) at tick time `t` of a state measured at `measured_at`, 0..MAX_AGE."""
    return min(max(t - measured_at, 0.0), MAX_AGE)


@compiled()
def carry(age, q, qd, qdd, q_now, qd_now):
    """Write ``q + qd age + qdd age^2 / 2`` to `q_now`, ``qd + qdd age`` to `qd_now`, (n,)."""
    for i in range(q.shape[0]):
        q_now[i] = q[i] + age * (qd[i] + 0.5 * age * qdd[i])
        qd_now[i] = qd[i] + age * qdd[i]


carry_entry = cached_entry_point(carry, 0.0, *(np.zeros(1),) * 5)
