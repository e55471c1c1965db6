"""
The computed-torque (inverse-dynamics) law, with the passive forces at the reference.

    e = q - q_des,  edot = qd - qd_des,  v = qdd_des - Kd edot - Kp e
    tau = M(q) v + C(q, qd) qd + g(q) + passive(q_des, qd_des) + integral    ('reference')
    tau = M(q) v + C(q, qd) qd + g(q) + passive(q, qd) + integral            ('measured')

'measured' is the classical law, ``model.inverse_dynamics(q, qd, v)``: with the plant equal
to the model the error obeys ``e'' + Kd e' + Kp e = 0``, but it cancels the arm's own
stiffness and damping and puts back only ``M Kp``, which on PMA coordinates (grams of
generalized inertia against kN/m of stiffness) leaves a model error almost unopposed.
'reference' keeps the arm's spring and damper in the error dynamics,
``M e'' + (D + M Kd) e' + (K + M Kp) e = model error`` (docs/law.md). For arms without
passive forces (rigid ones) the two are the same call. The optional integral force
(control.integral), and the force of its learnt stiffness at ``q_des``, is added in both.
Generalized forces are in the model's units (N m for revolute joints, N for PMA lengths).
"""

import numpy as np

from typing import Optional

from continuum_ctrl.actuation.maxwell_slip import MaxwellSlip
from continuum_ctrl.control.gains import apply_gain, validate_gain
from continuum_ctrl.control.ilc import IterativeLearning
from continuum_ctrl.control.integral import IntegralAction
from continuum_ctrl.models.base import Array, ArrayLike, DynamicsModel
from continuum_ctrl.numerics.jit import compiled
from continuum_ctrl.params import ConfigError

#: where the law compensates the passive (elastic and damping) forces: `law.passive` values
PASSIVE_AT = ('reference', 'measured')


def computed_torque(model: DynamicsModel, q: Array, qd: Array, q_des: Array, qd_des: Array,
                    qdd_des: Array, kp: ArrayLike, kd: ArrayLike,
                    passive: str = 'reference') -> Array:
    """
    Return the computed-torque generalized force, (n,), validating the gains on every call.

    `kp`, `kd`: n positive numbers, or (n, n) symmetric positive definite matrices (or n*n
    numbers row-major); `passive`: one of PASSIVE_AT. For a control loop build a
    `ComputedTorqueLaw` once instead.
    """
    return ComputedTorqueLaw(model, kp, kd, passive)(q, qd, q_des, qd_des, qdd_des)


class ComputedTorqueLaw:
    """
    Computed torque for one model and validated gains; calling it is the control-loop hot path.

    ``law(q, qd, q_des, qd_des, qdd_des)`` takes float64 arrays of length ``model.n`` and makes
    exactly one model call: ``model.inverse_dynamics_passive_at(q, qd, v, q_des, qd_des)``
    for `passive` 'reference' on a model with passive forces, else
    ``model.inverse_dynamics(q, qd, v)`` (one ``rnea`` for Pinocchio arms). With an
    `integral` (control.integral.IntegralAction) whose gains are engaged, its force is added,
    and where it learns a stiffness, that stiffness's force at ``q_des``;
    with `friction`, a Maxwell-slip bank (actuation/maxwell_slip.py), the force its sliders
    hold once moved to ``q_des`` (the law moves them: call it once per tick, from the pose
    where `friction` was reset on).
    Inputs are not validated there; gains are validated in the constructor and `set_gains`.
    ``law.acceleration(q, qd, q_des, qd_des, qdd_des)`` gives the commanded acceleration ``v``
    alone. Both reuse internal buffers: one law per control loop (not thread-safe), but
    `set_gains` swaps the gains in one assignment, so a parameter callback may call it.
    """

    def __init__(self, model: DynamicsModel, kp: ArrayLike, kd: ArrayLike,
                 passive: str = 'reference',
                 integral: Optional[IntegralAction] = None) -> None:
        self.model = model
        self.n = model.n
        if passive not in PASSIVE_AT:
            raise ConfigError('law.passive', f"must be one of {', '.join(PASSIVE_AT)}, got "
                                             f'{passive!r}')
        self.passive = passive
        self.integral = integral
        #: the feed-forward learnt from repetition (control/ilc.py; the loop's), or None
        self.repetition: Optional[IterativeLearning] = None
        #: the PMAs' friction feed-forward (`output.friction`): a Maxwell-slip bank that the
        #: reference drives, whose force the law pushes against; None: none
        self.friction: Optional[MaxwellSlip] = None
        self._total = np.zeros(self.n)
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
        """Return the law's force ``tau``, (n,); see the class doc."""
        v = self.acceleration(q, qd, q_des, qd_des, qdd_des)
        if self.passive == 'reference' and self.model.has_passive_forces:
            tau = self.model.inverse_dynamics_passive_at(q, qd, v, q_des, qd_des)
        else:
            tau = self.model.inverse_dynamics(q, qd, v)
        integral, friction, repetition = self.integral, self.friction, self.repetition
        engaged = integral is not None and integral.engaged
        repeating = repetition is not None and repetition.acting
        if not engaged and friction is None and not repeating:
            return tau
        total = self._total
        if integral is not None and engaged:
            np.add(tau, integral.force, out=total)
            integral.add_learnt(q_des, total)
        else:
            total[:] = tau
        if repetition is not None and repeating:
            repetition.add(total)
        if friction is not None:
            total -= friction.move(q_des)
        return total


def _acceleration(kp, kd, n):
    """
    Return ``acceleration(q, qd, q_des, qd_des, qdd_des) -> v = qdd_des - Kd edot - Kp e``.

    The returned (n,) array is a buffer reused by the next call.
    """
    error, term, v = np.zeros(n), np.zeros(n), np.zeros(n)
    subtract = np.subtract
    if kp.ndim == 1 and kd.ndim == 1:
        kernel = diagonal_acceleration     # through its dispatcher: it checks the arrays' types
        kp, kd = (np.ascontiguousarray(k, dtype=float) for k in (kp, kd))
        # compiled (or loaded) now, not in a tick: for references of writable arrays and for
        # those that hand out read-only views (a task-space reference), a type of their own
        fixed = v.view()
        fixed.flags.writeable = False
        kernel(kp, kd, v, v, v, v, v, term)
        kernel(kp, kd, v, v, fixed, fixed, fixed, term)

        def acceleration(q, qd, q_des, qd_des, qdd_des):
            kernel(kp, kd, q, qd, q_des, qd_des, qdd_des, v)
            return v
    else:
        def acceleration(q, qd, q_des, qd_des, qdd_des):
            subtract(qd, qd_des, error)
            subtract(qdd_des, apply_gain(kd, error, term), v)
            subtract(q, q_des, error)
            return subtract(v, apply_gain(kp, error, term), v)
    return acceleration


@compiled()
def diagonal_acceleration(kp, kd, q, qd, q_des, qd_des, qdd_des, v):
    """``v = qdd_des - kd (qd - qd_des) - kp (q - q_des)`` element-wise, all (n,) float64."""
    for i in range(v.size):
        v[i] = qdd_des[i] - kd[i] * (qd[i] - qd_des[i]) - kp[i] * (q[i] - q_des[i])
