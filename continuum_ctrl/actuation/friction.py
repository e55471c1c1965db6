"""
The PMAs' friction feed-forward: the force a PMA adds to move against its own friction.

    add_friction(tau, qd_des, level, velocity)   # tau += level tanh(qd_des / velocity), N

A McKibben PMA rubs (braid on braid, bladder on braid): extending, it needs more force than
its spring and load ask; shortening, less. The law adds ``level tanh(qd_des / velocity)`` to
each PMA's force (`level`, N per PMA: the friction force once sliding, the controller's
``output.friction``; `velocity`, m/s: ``output.friction_velocity``, the speed over which the
force turns round).

- **On the reference's velocity, not the measured one.** It is a feed-forward: nothing
  measured enters it, so it adds no gain to the loop (the margins `tune` reports are
  unchanged), and sensor noise near a reversal cannot switch it back and forth (chatter).
- **Smooth.** At a reversal the force turns over ``2 velocity / |qdd_des|`` s: at the
  reference arm's 0.25 Hz sinusoid and the default 0.5 mm/s, 58 ms; at 1 Hz, 4 ms, which
  the valves' 20 ms lag rounds off. The lead (control/compensation.py) leaves it out. On the
  built-in plant with 2 N of Maxwell-slip friction per PMA, 0.5 mm/s tracked better than 2
  or 5 mm/s (0.10 against 0.12-0.16 mm RMS at 0.25 Hz; docs/pma-model.md).
- **A held pose gets none** (``qd_des = 0``): friction that holds the arm where it stopped is
  the integral's to work off, not a force to push through.
"""

import math

from continuum_ctrl.numerics.jit import compiled


@compiled()
def add_friction(tau, qd_des, level, velocity):
    """Add ``level tanh(qd_des / velocity)`` to `tau` in place (N; (n,) arrays, m/s)."""
    for i in range(tau.shape[0]):
        if level[i] > 0.0:
            tau[i] += level[i] * math.tanh(qd_des[i] / velocity)
