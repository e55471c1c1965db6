"""
The computed-torque (inverse-dynamics) law of seed 001, extended by the passive forces.

    e = q - q_des,  edot = qd - qd_des,  v = qdd_des - Kd edot - Kp e
    tau = M(q) v + C(q, qd) qd + passive(q, qd) + g(q) = model.inverse_dynamics(q, qd, v)

With the plant equal to the model, the tracking error obeys ``e'' + Kd e' + Kp e = 0``.
Generalized forces are in the model's units (N m for revolute joints, N for PMA lengths).
"""

import numpy as np

from continuum_ctrl.control.gains import apply_gain, validate_gain


def computed_torque(model, q, qd, q_des, qd_des, qdd_des, kp, kd):
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
    """

    def __init__(self, model, kp, kd):
        self.model = model
        self.n = model.n
        self._error = np.zeros(self.n)
        self._term = np.zeros(self.n)
        self._v = np.zeros(self.n)
        self.set_gains(kp, kd)

    @property
    def kp(self):
        """Return the proportional gain: (n,) when diagonal, else (n, n); 1/s^2."""
        return self._kp

    @property
    def kd(self):
        """Return the derivative gain: (n,) when diagonal, else (n, n); 1/s."""
        return self._kd

    def set_gains(self, kp, kd):
        """
        Replace both gains, all or nothing.

        Raises ConfigError naming ``gains.kp`` or ``gains.kd``; the old gains are then kept.
        """
        kp = validate_gain(kp, self.n, 'gains.kp')
        kd = validate_gain(kd, self.n, 'gains.kd')
        self._kp, self._kd = kp, kd

    def acceleration(self, q, qd, q_des, qd_des, qdd_des):
        """Return the commanded acceleration ``v = qdd_des - Kd edot - Kp e`` (internal buffer)."""
        v, e, term = self._v, self._error, self._term
        np.subtract(qd, qd_des, out=e)
        np.subtract(qdd_des, apply_gain(self._kd, e, term), out=v)
        np.subtract(q, q_des, out=e)
        v -= apply_gain(self._kp, e, term)
        return v

    def __call__(self, q, qd, q_des, qd_des, qdd_des):
        """Return ``tau = model.inverse_dynamics(q, qd, v)``, (n,)."""
        return self.model.inverse_dynamics(q, qd, self.acceleration(q, qd, q_des, qd_des, qdd_des))
