"""
Integral action of the computed-torque law, in generalized-force units, with anti-windup.

    integral = IntegralAction(n)
    integral.configure(ki, limit)      # ki: N/(m s) or N m/(rad s); limit: N or N m, (n,)
    integral.update(q, q_des, dt, effort, low, high, q_low, q_high)    # once per tick
    integral.force                     # added to the law's force (N or N m), model order

The force integrates ``-ki (q - q_des)`` over time and stays within ``[-limit, limit]``, so an
arm held by an obstacle is not pushed without bound. It removes what the model cannot: a
stiffness, area or dead zone a calibration got a few per cent wrong, which with the passive
forces at the reference still leaves millimetres of steady error (docs/law.md).

Anti-windup is conditional integration: a joint is not integrated in a tick when the effort
sent sits at a bound of ``[low, high]`` (pressure or effort limits) and the step would push
further into it, or when its reference is held at a joint limit (``q_low``, ``q_high``: the
reference is clamped there, so equality means held), where the arm
may rest against a stop the error cannot remove. The loop resets the force at activation and
integrates from then on, through the reference's blend: the blend starts at the measured
state, so the error and the force start at zero and nothing jumps, and the force a model
error needs builds up while the reference moves in (held through the blend, it had to catch
up on the whole error after it: 2.3 mm on the arm 20 % stiff with a 15 kPa dead zone,
against 1.3 mm integrated through it; bench/quiet_loop.py).
"""

from typing import Optional

import numpy as np

from continuum_ctrl.numerics.jit import cached_entry_point, compiled


class IntegralAction:
    """The integral force (n,) of one control loop; see the module doc. Not thread-safe."""

    def __init__(self, n: int, force: Optional[np.ndarray] = None) -> None:
        """`force`: the (n,) float64 array to hold the force in (default: a new one)."""
        self.force = np.zeros(n) if force is None else force
        self.ki = np.zeros(n)
        self.limit = np.zeros(n)
        #: joints held (not integrated) by the last update
        self.held = np.zeros(n, dtype=np.bool_)
        #: whether any joint has a positive gain (the law then adds `force`)
        self.engaged = False
        self._update = _updater()

    def configure(self, ki: np.ndarray, limit: np.ndarray) -> None:
        """Take validated gains (>= 0) and bounds (> 0); the force is clamped to the new bounds."""
        self.ki = np.array(ki, dtype=float)
        self.limit = np.array(limit, dtype=float)
        np.clip(self.force, -self.limit, self.limit, out=self.force)
        self.force[self.ki == 0.0] = 0.0
        self.engaged = bool(np.any(self.ki > 0.0))

    def reset(self) -> None:
        """Zero the force (at activation)."""
        self.force[:] = 0.0
        self.held[:] = False

    def update(self, q: np.ndarray, q_des: np.ndarray, dt: float, effort: np.ndarray,
               low: np.ndarray, high: np.ndarray, q_low: np.ndarray,
               q_high: np.ndarray) -> None:
        """
        Integrate one tick of `dt` s of the error ``q - q_des`` (m or rad), model order.

        `effort` is the force sent this tick, `low`, `high` its bounds (N or N m); `q_low`,
        `q_high` the joint limits the reference is clamped to.
        """
        self._update(q, q_des, dt, effort, low, high, q_low, q_high, self.ki, self.limit,
                     self.force, self.held)


@compiled()
def integral_step(q, q_des, dt, effort, low, high, q_low, q_high, ki, limit, force, held):
    """One conditional integration step of `force`; see `IntegralAction.update`."""
    for i in range(force.shape[0]):
        step = -ki[i] * (q[i] - q_des[i]) * dt
        hold = (q_des[i] <= q_low[i] or q_des[i] >= q_high[i]
                or (effort[i] >= high[i] and step > 0.0)
                or (effort[i] <= low[i] and step < 0.0) or not step == step)
        held[i] = hold
        if not hold:
            force[i] = min(max(force[i] + step, -limit[i]), limit[i])


_updater = cached_entry_point(integral_step, *(np.zeros(1),) * 2, 0.0, *(np.zeros(1),) * 8,
                              np.zeros(1, dtype=np.bool_))
