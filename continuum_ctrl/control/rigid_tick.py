"""
The active tick of a Pinocchio arm: the reference sample, one `pinocchio.rnea`, one compiled call.

    rigid = RigidTick.of(loop)          # None where the loop's case is not covered
    status = rigid(t)                   # the loop's buffers filled, as ControlLoop.tick would

A rigid arm's model call (`rnea`, about a microsecond) cannot be called from compiled code, so
its tick cannot be one compiled call as a CoG arm's is (control/fused_tick.py). Around it the
Python tick (`ControlLoop.tick`) made six calls through the law, the model's wrapper, the
limiter and the output order; here there are four: the reference's compiled sampler
(`Anchored.sample_into`), the law's acceleration kernel, `rnea`, and `rigid_finish`, which
adds the integral force, limits and rate-limits the effort, takes the integral step and puts
the command in joints order. With ``gains.ki_inertial`` the integral steps on
``M(q) Ki e`` (`IntegralAction.weighted`), and with ``adapt.*`` the payload estimate's
gravity is added and the estimate moved (control/payload_estimate.py), as in the Python tick.
The arithmetic is the Python tick's, kernel for kernel, so the commands agree with it to the
last bit, or to rounding where the payload's gravity is added in another order
(test/control/test_fused_tick.py).

It covers an active loop whose model is a `RigidModel` in Pinocchio's joint order, with effort
output and diagonal gains: the shipped Panda and Gazebo arm files (the two-link file's
symbolic model keeps the Python tick).
"""

import numpy as np
import pinocchio as pin

from continuum_ctrl.control.computed_torque import diagonal_acceleration
from continuum_ctrl.control.fused_tick import DONE, NONFINITE
from continuum_ctrl.control.ilc import ilc_force, ilc_record
from continuum_ctrl.control.integral import add_learnt_force, integral_step, learn_step
from continuum_ctrl.models.rigid import RigidModel
from continuum_ctrl.numerics.clipping import limit_kernel
from continuum_ctrl.numerics.jit import cached_entry_point, compiled


@compiled()
def rigid_finish(tau, period, limits, integral, order, total, command, t, at, measured,
                 qd_des, repetition):
    """
    Move the loop's effort to `tau` (N m, model order) and write the command; DONE or NONFINITE.

    `limits`: (low, high, step, effort), `effort` moved in place; `integral`: (engaged, force,
    ki, limit, held, q, q_des, q_low, q_high, and `IntegralAction.learning`'s six), its step
    taken every tick, its stiffness learnt at `q_des`; `total`: scratch;
    `command` (joints order)
    ``effort[order]``; `t` (s), `repetition`: the loop's learnt feed-forward, added, and
    the error of `measured` (rad, the state measured at `at` s; not the integral's `q`,
    which ``gains.ki_inertial`` weighs) recorded (control/ilc.py, `ilc_record`).
    NONFINITE leaves the effort and the command as they were.
    """
    low, high, step, effort = limits
    engaged, force, ki, limit, held, q, q_des, q_low, q_high, learning, rate, floor2, window, \
        fed, learnt = integral
    for i in range(tau.shape[0]):
        total[i] = tau[i] + force[i] if engaged else tau[i]
    if engaged and learning:
        add_learnt_force(q_des, window, floor2, limit, fed, learnt, total)
    timing, tables, select, records, counts, trials = repetition
    ilc_force(t, timing, tables, select, total)
    if not limit_kernel(total, low, high, step, effort):
        return NONFINITE
    if engaged:
        integral_step(q, q_des, period, effort, low, high, q_low, q_high, ki, limit, force, held)
        if learning:
            learn_step(fed, force, learnt, ki, rate, window)
    ilc_record(t, at, timing, measured, q_des, qd_des, records, counts, trials)
    for i in range(command.shape[0]):
        command[i] = effort[order[i]]
    return DONE


def _example(n=1):
    """Return arguments of `rigid_finish` of the types every call passes."""
    one, index = np.zeros(n), np.zeros(n, dtype=np.int64)
    return (one, 1e-3, (one, one, one, one),
            (False, one, one, one, np.zeros(n, dtype=np.bool_), one, one, one, one, False,
             np.zeros(1), 0.0, np.zeros((5, n)), one, one), index,
            one, one, 0.0, 0.0, one, one,
            (np.zeros(6), np.zeros((2, n, n)), np.zeros(1, dtype=np.int64), np.zeros((2, n, n)),
             np.zeros((2, n)), np.zeros(2, dtype=np.int64)))


finish_entry = cached_entry_point(rigid_finish, *_example())
_acceleration = cached_entry_point(diagonal_acceleration, *(np.zeros(1),) * 8)


class RigidTick:
    """
    The active tick of one `ControlLoop` on a Pinocchio arm (see the module).

    Build it with `of` whenever the loop's settings change: it holds their arrays (gains,
    limits, integral). Call it with the tick time where `covers` says it applies; it leaves
    the loop's `q_des`, `qd_des`, `qdd_des`, `effort`, integral force and `command` as the
    Python tick would.
    """

    def __init__(self, loop):
        self.loop = loop
        model, law, integral = loop.model, loop.law, loop.integral
        self._pinocchio = (model.model, model.data)
        self._gains = (np.ascontiguousarray(law.kp, dtype=float),
                       np.ascontiguousarray(law.kd, dtype=float))
        self._v = np.zeros(model.n)
        #: with gains.ki_inertial the integral steps on ``q_des + M(q) Ki e`` (see `_weigh`)
        self._inertial = integral.inertia is not None
        self._weighted = np.zeros(model.n)
        low, high = loop._effort_range
        self._rest = ((low, high, loop._step, loop.effort),
                      (integral.engaged, integral.force, integral.step_gain, integral.limit,
                       integral.held, self._weighted if self._inertial else loop.q_now,
                       loop.q_des, loop.low, loop.high,
                       *integral.learning(loop.period)),
                      np.asarray(loop.settings.order, dtype=np.int64), np.zeros(model.n),
                      loop.command)
        self._repetition = loop.ilc.arrays()
        self._accelerate, self._finish = _acceleration(), finish_entry()

    @classmethod
    def of(cls, loop):
        """Return the tick of `loop`, or None where its model or output is not covered."""
        model = loop.model
        if (not isinstance(model, RigidModel) or model._order is not None
                or loop.settings.actuation is not None or loop.compensation is not None
                or loop.law.kp.ndim != 1 or loop.law.kd.ndim != 1):
            return None
        return cls(loop)

    def covers(self, reference):
        """Tell whether the tick applies to `reference`: any (`Anchored.sample_into`)."""
        return True

    def __call__(self, t, sent=None):
        """Run the active tick at `t` (s); return DONE, or NONFINITE (the effort unmoved)."""
        loop = self.loop
        reference = loop.reference
        reference.sample_into(t, loop._desired)
        loop.carry(t)
        q, qd, v = loop.q_now, loop.qd_now, self._v
        self._accelerate(*self._gains, q, qd, loop.q_des, loop.qd_des, loop.qdd_des, v)
        tau = pin.rnea(*self._pinocchio, q, qd, v)
        if self._inertial:
            self._weigh()
        payload = loop.integral.payload
        if payload is not None:
            tau += payload.fed
        status = self._finish(tau, loop.period, *self._rest, t, loop.measured_at, loop.sample,
                              loop.qd_des, self._repetition)
        if payload is not None and status == DONE:
            payload.update(loop.q_des, loop.integral.force, loop.period)
        return status

    def _weigh(self):
        """Set what the integral step takes with ``gains.ki_inertial`` (its `weighted`)."""
        loop = self.loop
        self._weighted[:] = loop.integral.weighted(loop.q_now, loop.q_des)
