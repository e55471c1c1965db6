"""
The computed-torque (inverse-dynamics) law, extended by the passive forces.

    e = q - q_des,  edot = qd - qd_des,  v = qdd_des - Kd edot - Kp e
    tau = M(q) v + C(q, qd) qd + passive(q, qd) + g(q) = model.inverse_dynamics(q, qd, v)

With the plant equal to the model, the tracking error obeys ``e'' + Kd e' + Kp e = 0``.
Generalized forces are in the model's units (N m for revolute joints, N for PMA lengths).
"""

import numpy as np

from continuum_ctrl.control.gains import apply_gain, validate_gain
from continuum_ctrl.models.base import Array, ArrayLike, DynamicsModel


def computed_torque(model: DynamicsModel, q: Array, qd: Array, q_des: Array, qd_des: Array,
                    qdd_des: Array, kp: ArrayLike, kd: ArrayLike) -> Array:
    """
    Return the computed-torque generalized force, (n,), validating the gains on every call.

    `kp`, `kd`: n positive numbers, or (n, n) symmetric positive definite matrices (or n*n
    numbers row-major). For a control loop build a `ComputedTorqueLaw` once instead.
    """
    return ComputedTorqueLaw(model, kp, kd)(q, qd, q_des, qd_des, qdd_des)


class ComputedTorqueLaw:
    """
    Computed torque for one model and validated gains; calling it is the control-loop hot path.

    ``law(q, qd, q_des, qd_des, qdd_des)`` takes float64 arrays of length ``model.n`` and makes
    exactly one ``model.inverse_dynamics(q, qd, v)`` call (one ``rnea`` for Pinocchio arms).
    Inputs are not validated there; gains are validated in the constructor and `set_gains`.
    ``law.acceleration(q, qd, q_des, qd_des, qdd_des)`` gives the commanded acceleration ``v``
    alone. Both reuse internal buffers: one law per control loop (not thread-safe), but
    `set_gains` swaps the gains in one assignment, so a parameter callback may call it.
    """

    def __init__(self, model: DynamicsModel, kp: ArrayLike, kd: ArrayLike) -> None:
        self.model = model
        self.n = model.n
        self._inverse_dynamics = model.inverse_dynamics
        self.set_gains(kp, kd)

    @property
    def kp(self) -> Array:
        """Return the proportional gain: (n,) when diagonal, else (n, n); 1/s^2."""
        return self._kp

    @property
    def kd(self) -> Array:
        """Return the derivative gain: (n,) when diagonal, else (n, n); 1/s."""
        return self._kd

    def set_gains(self, kp: ArrayLike, kd: ArrayLike) -> None:
        """
        Replace both gains, all or nothing.

        Raises ConfigError naming ``gains.kp`` or ``gains.kd``; the old gains are then kept.
        """
        kp_valid: Array = validate_gain(kp, self.n, 'gains.kp')
        kd_valid: Array = validate_gain(kd, self.n, 'gains.kd')
        self._kp, self._kd = kp_valid, kd_valid
        self.acceleration = _acceleration(kp_valid, kd_valid, self.n)

    def __call__(self, q: Array, qd: Array, q_des: Array, qd_des: Array,
                 qdd_des: Array) -> Array:
        """Return ``tau = model.inverse_dynamics(q, qd, v)``, (n,)."""
        return self._inverse_dynamics(q, qd, self.acceleration(q, qd, q_des, qd_des, qdd_des))


def _acceleration(kp, kd, n):
    """
    Return ``acceleration(q, qd, q_des, qd_des, qdd_des) -> v = qdd_des - Kd edot - Kp e``.

    The returned (n,) array is a buffer reused by the next call.
    """
    error, term, v = np.zeros(n), np.zeros(n), np.zeros(n)
    subtract = np.subtract
    if kp.ndim == 1 and kd.ndim == 1:
        multiply = np.multiply

        def acceleration(q, qd, q_des, qd_des, qdd_des):
            subtract(qd, qd_des, error)
            multiply(kd, error, error)
            subtract(qdd_des, error, v)
            subtract(q, q_des, error)
            multiply(kp, error, error)
            return subtract(v, error, v)
    else:
        def acceleration(q, qd, q_des, qd_des, qdd_des):
            subtract(qd, qd_des, error)
            subtract(qdd_des, apply_gain(kd, error, term), v)
            subtract(q, q_des, error)
            return subtract(v, apply_gain(kp, error, term), v)
    return acceleration
