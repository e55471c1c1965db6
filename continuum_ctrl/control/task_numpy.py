"""
The task-space sample in NumPy on the model's frame interface: the compiled kernel's twin.

`NumpyTaskStep` is `models.continuum.task_step.task_step`'s method (path point, Newton IK from
the previous solution, ``qd_d``, ``qdd_d``; see `control.task_space`) written with NumPy on
`frame_kinematics` and `frame_jacobian_derivative`, called like a model's
`compiled_task_step` but on the path object instead of its table. It is the oracle the tests
hold the compiled sample to, and the sample of models without a compiled one (URDF arms),
which `TaskSpace` announces with a RuntimeWarning (the slow path).
"""

import numpy as np
import pinocchio as pin

from continuum_ctrl.control.references import minimum_jerk_ramp
from continuum_ctrl.models.continuum.task_step import goal_layout, NEWTON_STEPS, NEWTON_TOLERANCE


class NumpyTaskStep:
    """``step(t, path, goal, weight, state, clock, bounds, sample)`` of `frame` of `model`."""

    def __init__(self, model, frame):
        self.model, self.frame = model, frame

    def __call__(self, t, path, goal, weight, state, clock, bounds, sample):
        """
        Sample `path` (``path.sample(t)``) at `t` [s] into `state`, `clock` and `sample`.

        The arguments of a model's `compiled_task_step` (`goal` a `task_step.new_goal` block,
        `bounds` rows lower, upper limits, catch-up speeds); returns the tip's distance to the
        path point [m].
        """
        low, high = bounds[0], bounds[1]
        x, xd, xdd = path.sample(t)
        x = x + goal_layout(goal)[1].offset
        R, w, dw = desired_rotation(goal, t)
        q, qd, qdd = state
        previous = None         # a sample after the previous one: its move within the speeds
        if not np.isnan(clock[0]):
            dt = t - clock[0]
            if dt > 0.0:
                previous, budget = q.copy(), bounds[2] * dt
            q = np.clip(q + dt * qd + 0.5 * dt * dt * qdd, low, high)
        for _ in range(NEWTON_STEPS):
            pose, J = self.model.frame_kinematics(q, self.frame)
            A, e = _task(J, pose, x, R, weight)
            if float(np.max(np.abs(e))) <= NEWTON_TOLERANCE:
                break
            dq, free = _solve(q, A, e, low, high)[:2]
            q = np.clip(q + (dq if free.any() else _descent(q, A, e, low, high)), low, high)
        if previous is not None:
            q = previous + _share(q - previous, budget) * (q - previous)
        pose, J = self.model.frame_kinematics(q, self.frame)
        A, e = _task(J, pose, x, R, weight)
        v = np.concatenate((xd, weight * w)) if weight > 0.0 else xd
        qd, free, y, Hinv = _solve(q, A, v, low, high)
        qdd = np.zeros(q.shape[0])
        if free.any():
            # exact derivative of qd = A^T (A A^T)^-1 v (free joints), Adot along qd
            Ad = _rows(self.model.frame_jacobian_derivative(q, qd, self.frame), weight)
            a = np.concatenate((xdd, weight * dw)) if weight > 0.0 else xdd
            Af, Adf = A[:, free], Ad[:, free]
            rhs = a - Ad @ qd - Af @ (Adf.T @ y)
            qdd[free] = Adf.T @ y + Af.T @ (Hinv @ rhs)
        share = _share(qd, bounds[2])
        if share < 1.0:
            qd, qdd = share * qd, np.zeros_like(qdd)
        state[:] = q, qd, qdd
        sample[:] = x, xd, xdd
        clock[0] = t
        return float(np.linalg.norm(x - pose[:3, 3]))


def desired_rotation(goal, t):
    """
    Desired orientation, angular velocity and acceleration (base axes) at `t` [s].

    `goal`: a `task_step.new_goal` block, turned along the minimum-jerk ramp of its duration.
    """
    goal = goal_layout(goal)[1]
    s, ds, dds = minimum_jerk_ramp(t, goal.duration[0])
    axis = goal.R0 @ goal.axis
    return goal.R0 @ pin.exp3(s * goal.axis), ds * axis, dds * axis


def _rows(J, weight):
    """Task rows of a frame's (6, n) matrix: linear, then weighted angular when weighted."""
    return np.vstack((J[:3], weight * J[3:])) if weight > 0.0 else J[:3]


def _task(J, pose, x, R, weight):
    """Task Jacobian and error at a pose (weighted orientation rows when weighted)."""
    e = x - pose[:3, 3]
    if weight > 0.0:
        e = np.concatenate((e, weight * pin.log3(R @ pose[:3, :3].T)))
    return _rows(J, weight), e


def _descent(q, A, e, low, high):
    """Return the steepest descent of ``|e - A dq|`` over the joints free to move that way."""
    dq = A.T @ e
    dq[((q <= low) & (dq < 0.0)) | ((q >= high) & (dq > 0.0))] = 0.0
    step = A @ dq
    size = float(step @ step)
    return dq * (float(e @ step) / size if size > 0.0 else 0.0)


def _share(dq, budget):
    """Return the largest share (0-1) of the change `dq` that moves no joint k over budget[k]."""
    over = np.abs(dq) > budget
    return float(np.min(budget[over] / np.abs(dq[over]), initial=1.0))


def _solve(q, A, b, low, high):
    """
    Minimum-norm ``dq`` with ``A dq = b`` over the joints free to move that way.

    Returns ``(dq, free, y, Hinv)`` with ``dq[free] = A_f^T y``, ``y = Hinv b`` and
    ``Hinv = (A_f A_f^T)^-1``: joints at a limit that the solution would push beyond are
    held (active set).
    """
    n = q.shape[0]
    free = np.ones(n, dtype=bool)
    at_limit = bool(np.any(q <= low) or np.any(q >= high))
    dq = np.zeros(n)
    for _ in range(n):
        Af = A[:, free]
        H = Af @ Af.T
        H.flat[::H.shape[0] + 1] += 1e-12
        Hinv = np.linalg.inv(H)
        y = Hinv @ b
        dq[:] = 0.0
        dq[free] = Af.T @ y
        if not at_limit:
            break
        blocked = free & (((q <= low) & (dq < 0.0)) | ((q >= high) & (dq > 0.0)))
        if not blocked.any():
            break
        free &= ~blocked
        if not free.any():
            return np.zeros(n), free, np.zeros_like(b), None
    return dq, free, y, Hinv
