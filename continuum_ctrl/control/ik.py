"""
Inverse kinematics of one frame: damped least squares on `DynamicsModel.frame_jacobian`.

A step solves ``min |A dq - e|^2 + lam^2 |dq|^2`` for the task error ``e`` (the position error
[m], and with ``orientation_weight`` w > 0 also ``w log(R_target R^T)`` [rad], base-frame axes)
and task Jacobian ``A`` (the linear rows of the frame Jacobian, then w times the angular rows),
so ``dq = A^T (A A^T + lam^2 I)^-1 e``, with ``lam^2 = mu (damping^2 + |e|^2)``, and no
joint moving more than a quarter of its stroke (0.5 rad or m if unbounded) per step.
`solve` adapts ``mu`` as Levenberg-Marquardt does: a step that lowers the error is taken
and ``mu`` shrinks, one that does not is retried with ``mu`` grown and the null-space pull
(whose second-order effect on the task then dominates) weakened. Redundant arms add the
null-space projection of a pull towards mid-stroke, ``nullspace_gain (q_mid - q)``. Joint
limits (``[0, l_max]`` for PMAs, the URDF's for rigid arms) are kept by an active set: a
joint at a limit that the step would push beyond leaves the task, and every step ends
clipped to the limits, so no iterate ever leaves them. With `holding` (a
`control.holding.HoldingBounds`: PMA arms) `solve` keeps the lengths the pressures can hold
instead: its bounds, with gravity at the start, then again at each descent's end until they
stay (a fixed point: the pose found is held by its own gravity), and the pull goes to their
middle; an unreachable target's closest point is then the closest the pressures hold.

`InverseKinematics.step` is one such step from the previous solution, the per-tick update of
a controller (compiled in one call where the model offers `compiled_ik_step`, as continuum
models do; `numpy_step` is the same step on the frame interface, its test oracle, and the
step of other models, with a warning); `solve` iterates to
``tolerance`` or, for an unreachable target, to the closest reachable pose it can find, and
says how far off that is. A descent can end in a local
minimum of the error within the limits, so `solve` restarts from ``restarts`` fixed
pseudo-random poses before it gives up, and keeps the best.
"""

from dataclasses import dataclass
import warnings

import numpy as np
import pinocchio as pin

from continuum_ctrl.models.continuum.ik_step import (ik_bounds, ik_settings, LOWER, MID, MU,
                                                     PULL_FACTOR, UPPER)

#: descents of `solve` at most, each within the holding bounds at the last one's end
HOLDING_ROUNDS = 4
#: the holding bounds have stayed when no bound moved more than this, m
HOLDING_SETTLED = 1e-7


@dataclass(frozen=True)
class IKResult:
    """An IK solution: joints within limits, remaining errors [m, rad], convergence."""

    q: np.ndarray
    position_error: float
    rotation_error: float
    converged: bool
    iterations: int


class InverseKinematics:
    """Damped least-squares IK of `frame` of `model`, within the model's joint limits."""

    def __init__(self, model, frame, orientation_weight=0.0, damping=1e-5,
                 nullspace_gain=0.1, tolerance=1e-6, rotation_tolerance=1e-6,
                 max_iterations=200, restarts=8, holding=None):
        if frame not in model.frame_names():
            raise model.frame_error(frame)
        if not orientation_weight >= 0.0 or not np.isfinite(orientation_weight):
            raise ValueError(f'orientation_weight must be finite and >= 0, got '
                             f'{orientation_weight}')
        self.model = model
        self.frame = frame
        self.orientation_weight = float(orientation_weight)
        self.damping = float(damping)
        self.nullspace_gain = float(nullspace_gain)
        self.tolerance = float(tolerance)
        self.rotation_tolerance = float(rotation_tolerance)
        self.max_iterations = int(max_iterations)
        self.restarts = int(restarts)
        self.lower, self.upper = (np.asarray(x, dtype=float) for x in model.joint_limits())
        bounded = np.isfinite(self.lower) & np.isfinite(self.upper)
        self._mid = np.where(bounded, 0.5 * (self.lower + self.upper), 0.0)
        self._pull = np.where(bounded, self.nullspace_gain, 0.0)
        self._max_step = np.where(bounded, 0.25 * (self.upper - self.lower), 0.5)
        self._compiled = model.compiled_ik_step(frame)
        self._bounds = ik_bounds(self.lower, self.upper, self._mid, self._pull, self._max_step)
        self._settings = ik_settings(self.damping)
        self._identity = np.eye(3)
        self.holding = holding

    def _check(self, position, rotation):
        position = np.asarray(position, dtype=float)
        if position.shape != (3,) or not np.isfinite(position).all():
            raise ValueError(f'target position must be 3 finite numbers, got {position!r}')
        if rotation is not None:
            rotation = np.asarray(rotation, dtype=float)
            if rotation.shape != (3, 3) or not np.isfinite(rotation).all():
                raise ValueError('target rotation must be a finite 3x3 matrix')
        return position, rotation

    def _errors(self, q, position, rotation):
        """Return the task error, task Jacobian, position and rotation error norms at q."""
        T, J = self.model.frame_kinematics(q, self.frame)
        e = position - T[:3, 3]
        if self.orientation_weight > 0.0 and rotation is not None:
            w = pin.log3(rotation @ T[:3, :3].T)
            r = float(np.linalg.norm(w))
            return (np.concatenate([e, self.orientation_weight * w]),
                    np.vstack([J[:3], self.orientation_weight * J[3:]]),
                    float(np.linalg.norm(e)), r)
        return e, J[:3], float(np.linalg.norm(e)), 0.0

    def _step(self, q, e, A, mu=1.0, pull=1.0):
        """One damped least-squares step from q on task (e, A), kept within the bounds."""
        n = q.shape[0]
        low, high = self._bounds[LOWER], self._bounds[UPPER]
        g = A.T @ e
        free = ~(((q <= low) & (g < 0.0)) | ((q >= high) & (g > 0.0)))
        lam2 = mu * (self.damping ** 2 + float(e @ e))
        z = pull * self._pull * (self._bounds[MID] - q)
        dq = np.zeros(n)
        for _ in range(n):
            Af = A[:, free]
            H = Af @ Af.T
            H[np.diag_indices_from(H)] += lam2
            y = np.linalg.solve(H, e - Af @ z[free])
            dq[:] = 0.0
            dq[free] = z[free] + Af.T @ y
            dq *= min(1.0, float(np.min(self._max_step / np.maximum(np.abs(dq), 1e-300))))
            beyond = free & (((q + dq) < low) | ((q + dq) > high))
            if not beyond.any():
                break
            free &= ~beyond
            if not free.any():
                break
        return np.clip(q + dq, low, high)

    def step(self, q, position, rotation=None):
        """
        One IK step from `q` towards the target: the next joint vector, within limits.

        Without the model's compiled step it is `numpy_step`, and a RuntimeWarning says so
        once per frame.
        """
        position, rotation = self._check(position, rotation)
        if self._compiled is not None:
            return self._compiled_step(q, position, rotation)
        warnings.warn(f'IK step of frame {self.frame!r}: {type(self.model).__name__} has no '
                      f'compiled step, so each step runs in NumPy (the slow path, tens of '
                      f'times slower)', RuntimeWarning, stacklevel=2)
        return self.numpy_step(q, position, rotation)

    def _compiled_step(self, q, position, rotation):
        """`step` by the model's compiled kernel: the same arithmetic in one call."""
        q = np.ascontiguousarray(q, dtype=float)
        if q.shape != self.lower.shape:
            raise ValueError(f'expected q of shape {self.lower.shape}, got {q.shape}')
        use_rotation = self.orientation_weight > 0.0 and rotation is not None
        out = np.empty(q.shape[0])
        self._compiled(q, np.ascontiguousarray(position),
                       np.ascontiguousarray(rotation) if use_rotation else self._identity,
                       self.orientation_weight if use_rotation else 0.0, self._settings,
                       self._bounds, out)
        return out

    def numpy_step(self, q, position, rotation=None):
        """
        `step` in NumPy on the model's frame interface (any model): `solve`'s own step.

        The oracle the compiled step is tested against, and `step` of models without one.
        """
        position, rotation = self._check(position, rotation)
        q = np.clip(np.asarray(q, dtype=float), self._bounds[LOWER], self._bounds[UPPER])
        e, A, _, _ = self._errors(q, position, rotation)
        return self._step(q, e, A)

    def solve(self, position, rotation=None, q0=None):
        """
        Iterate from `q0` (default mid-stroke) to the target; return an `IKResult`.

        Converged: position error <= `tolerance` [m] (and rotation error <=
        `rotation_tolerance` [rad] when orientation counts). Otherwise ``q`` is the best pose
        found over the restarts, the closest reachable one, with its errors.
        """
        position, rotation = self._check(position, rotation)
        q = self._mid.copy() if q0 is None else np.asarray(q0, dtype=float)
        try:
            return self._search(np.clip(q, self.lower, self.upper), position, rotation)
        finally:            # `step` and `numpy_step` keep the joint limits alone
            self._bounds[LOWER], self._bounds[UPPER], self._bounds[MID] = (
                self.lower, self.upper, self._mid)

    def _search(self, q, position, rotation):
        """`solve` from `q`: a descent, then the restarts while none converged."""
        best = self._descend(q, position, rotation)
        starts = np.random.default_rng(0)
        low = np.where(np.isfinite(self.lower), self.lower, -np.pi)
        high = np.where(np.isfinite(self.upper), self.upper, np.pi)
        for _ in range(self.restarts):
            if best.converged:
                break
            result = self._descend(starts.uniform(low, high), position, rotation)
            if (result.converged or result.position_error + result.rotation_error
                    < best.position_error + best.rotation_error):
                best = result
        return best

    def _descend(self, q, position, rotation):
        """
        Descend from q within the joint limits, or the holding bounds; return an `IKResult`.

        The holding bounds take gravity at `q`, then at each descent's end until they stay.
        """
        if self.holding is None:
            return self._descend_within(q, position, rotation)
        bounds = self._bounds[LOWER:UPPER + 1]
        self.holding.at(q, bounds)
        for _ in range(HOLDING_ROUNDS):
            self._bounds[MID] = 0.5 * (bounds[0] + bounds[1])
            result = self._descend_within(np.clip(q, bounds[0], bounds[1]), position, rotation)
            q, before = result.q, bounds.copy()
            if np.max(np.abs(self.holding.at(q, bounds) - before)) <= HOLDING_SETTLED:
                break
        return result

    def _descend_within(self, q, position, rotation):
        """Levenberg-Marquardt descent from q within the current bounds; an `IKResult`."""
        use_rotation = self.orientation_weight > 0.0 and rotation is not None
        propose = self._proposer(position, rotation if use_rotation else None)
        mu, pull = 1.0, 1.0
        cost, pos_err, rot_err, q_next = propose(q, mu, pull)
        for iteration in range(self.max_iterations):
            if self._reached(pos_err, rot_err, use_rotation):
                return IKResult(q, pos_err, rot_err, True, iteration)
            if np.max(np.abs(q_next - q)) < 1e-15:
                break                               # stalled: a minimum within the limits
            # the trial's own step is proposed with the factors it gets if it is taken
            mu_taken, pull_taken = max(mu / 3.0, 1e-3), min(1.0, 2.0 * pull)
            trial = propose(q_next, mu_taken, pull_taken)
            if trial[0] < cost:
                q, (cost, pos_err, rot_err, q_next) = q_next, trial
                mu, pull = mu_taken, pull_taken
            else:
                mu *= 4.0
                pull *= 0.1
                if mu > 1e12:
                    break
                q_next = propose(q, mu, pull)[3]
        return IKResult(q, pos_err, rot_err, self._reached(pos_err, rot_err, use_rotation),
                        iteration)

    def _proposer(self, position, rotation):
        """
        Return ``propose(q, mu, pull) -> (cost, position error, rotation error, q_next)``.

        `cost`: the task error's squared norm at `q`; `q_next`: the step from `q` with those
        factors. For a position target (`rotation` None) on a model with a compiled step,
        one call of it (an unreachable target's 9 x 200 steps: 20 times quicker than NumPy).
        """
        if self._compiled is not None and rotation is None:
            target, settings = np.ascontiguousarray(position), ik_settings(self.damping)

            def propose(q, mu, pull):
                settings[MU], settings[PULL_FACTOR] = mu, pull
                q_next = np.empty(q.shape[0])
                error = self._compiled(q, target, self._identity, 0.0, settings, self._bounds,
                                       q_next)
                return error * error, error, 0.0, q_next
            return propose

        def propose(q, mu, pull):
            e, A, pos_err, rot_err = self._errors(q, position, rotation)
            return float(e @ e), pos_err, rot_err, self._step(q, e, A, mu, pull)
        return propose

    def _reached(self, pos_err, rot_err, use_rotation):
        return pos_err <= self.tolerance and (not use_rotation
                                              or rot_err <= self.rotation_tolerance)
