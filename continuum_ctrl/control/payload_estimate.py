"""
An adaptive estimate of the gravity of a payload a rigid arm carries at a frame.

    estimate = PayloadEstimate(model, frame, time_constant)   # a RigidModel, its frame, s
    estimate.update(q_des, force, period)   # once per tick: the integral's force (N m)
    estimate.fed                            # the payload's gravity at the reference, N m

A payload the URDF does not know pulls on the joints with a torque that changes with the
pose, which the integral removes only as fast as its gain allows (`gains.learn_window`
regresses on the reference's position: it fits a spring, not a change of pose through a
chain). That torque is linear in the payload's mass and first moment (m, m c) through the
frame's joint: ``tau = Y_p(q) theta``, ``Y_p`` the four gravity columns (m, m c_x, m c_y,
m c_z) of that joint's body in Pinocchio's joint-torque regressor at rest. The integral's
force ``F`` holds what the model misses; theta follows the adaptive law

    theta' = Gamma Y_p(q_des)^T M(q_des)^-1 F,      Gamma = G^-1 / T

with ``G`` the mean of ``Y_p^T M^-1 Y_p`` over poses within the joint limits: each direction
of theta settles over about `T` s where the reference moves it, and ``Y_p theta`` (`fed`) is
fed forward at the reference, as the law's gravity is; the integral unloads as it grows.

The force is weighed by ``M^-1`` (accelerations): in N m the shoulder's and the elbow's forces,
tens of N m, steer theta, and the fit's error lands on the Panda's last joint, whose inertia
is a hundredth of theirs (links 30 % heavier: 0.005 rad RMS on joint 7 against 0.0005 without
the estimate). Only gravity is fed: a payload quadruples the wrist's inertia too, but putting
the estimate into the model's inertia, while the centre was still wrong, put a hundred times
the seventh joint's inertia on it and the loop chattered (7000 N m/s). A mass error of the
links (``mismatch.mass_scale``) is partly taken for a payload: the integral holds the rest.
It reads the reference and the integral's own force and moves over `T` seconds, slower than
the loop, so it adds no feedback at the loop's frequencies.
"""

import numpy as np
import pinocchio as pin

#: random poses for the mean of Y_p^T M^-1 Y_p
POSES = 200


class PayloadEstimate:
    """The gravity of a payload at `frame` of a `RigidModel`; see the module doc."""

    def __init__(self, model, frame, time_constant, seed=0):
        pm = model.model
        self.arm, self.model, self.data = model, pm, pm.createData()
        self._zero = np.zeros(pm.nv)
        self.frame, self.time_constant = frame, float(time_constant)
        joint = pm.frames[pm.getFrameId(frame)].parentJoint
        self._columns = slice(10 * (joint - 1), 10 * (joint - 1) + 4)
        rng = np.random.default_rng(seed)
        low = np.where(np.isfinite(pm.lowerPositionLimit), pm.lowerPositionLimit, -np.pi)
        high = np.where(np.isfinite(pm.upperPositionLimit), pm.upperPositionLimit, np.pi)
        G = np.mean([Y.T @ self._inverse_inertia(q, Y) for q, Y in (
            (q, self._rows(q)) for q in (rng.uniform(low, high) for _ in range(POSES)))],
            axis=0)
        self.gain = np.linalg.inv(G) / self.time_constant
        #: mass (kg) and first moment (kg m) in the joint's frame
        self.theta = np.zeros(4)
        #: the estimate's gravity force at the last reference, N m (model order)
        self.fed = np.zeros(model.n)

    def _rows(self, q):
        """Return ``Y_p`` at `q` (Pinocchio's order): (nv, 4), N m per kg and kg m."""
        zero = self._zero
        return pin.computeJointTorqueRegressor(self.model, self.data, q, zero,
                                               zero)[:, self._columns]

    def _inverse_inertia(self, q, force):
        """
        Return ``M(q)^-1 force`` (Pinocchio's order), `force` (nv,) or (nv, k): accelerations.

        By two ABA passes at rest, ``aba(q, 0, F) - aba(q, 0, 0)`` (a few microseconds; a
        7x7 solve costs ten times as much from Python).
        """
        if force.ndim == 2:
            return np.column_stack([self._inverse_inertia(q, np.ascontiguousarray(f))
                                    for f in force.T])
        zero = self._zero
        return (pin.aba(self.model, self.data, q, zero, force).copy()
                - pin.aba(self.model, self.data, q, zero, zero))

    def reset(self):
        """Forget the payload (at activation)."""
        self.theta[:] = 0.0
        self.fed[:] = 0.0

    def update(self, q_des, force, period):
        """Move the estimate by a tick of `period` s: `force` (N m, model order) at `q_des`."""
        arm = self.arm
        q = arm._in(q_des)
        rows = self._rows(q)
        self.theta += period * (self.gain @ (rows.T @ self._inverse_inertia(q, arm._in(force))))
        self.fed[:] = arm._out(rows @ self.theta)
