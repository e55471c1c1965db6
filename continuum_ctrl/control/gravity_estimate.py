"""
A pose-dependent estimate of a rigid arm's gravity error, learnt from the integral's force.

    estimate = GravityEstimate(model, window)   # a RigidModel; window s
    estimate.add(q_des, total)          # the fitted gravity error at the reference, added (N m)
    estimate.fold(force, period)        # once per tick: the integral's force after its step

A payload the URDF does not know, or links heavier or lighter than its <inertial>, make a
gravity error that changes with the pose. The integral removes it only as fast as its gain
allows, so against a moving reference it lags (`gains.learn_window`, which regresses on the
reference's position, fits a spring, not a change of pose through a chain). Gravity is linear
in the links' masses and first moments (m, m c per body): ``g(q) = Y_g(q) theta`` with
``Y_g`` Pinocchio's joint-torque regressor at zero velocity and acceleration. Only some
combinations of theta move the joints (`gravity_base`); on those, the estimate ``delta``
follows the gradient of the integral's force ``F`` (N m): ``delta' = Y_s(q_des)^T F / T``,
``Y_s`` the regressor's columns scaled alike over the joint range (`gravity_base`) and
``T`` the `window`, s. ``Y_s(q_des) delta`` is fed forward at the reference, as the law's gravity is;
the integral unloads as it grows, so ``delta`` stops where the integral's force, over the
poses the reference visits, has no part the regressor explains (the classical adaptive
law, with the integral's force as its error). A direction the reference does not move is
not moved. It reads the reference and the law's own force and moves over `window` seconds
(a slower loop round the integral), so it adds no feedback at the loop's frequencies. A
least-squares fit (a window of ``Y^T Y`` and ``Y^T F``) was tried first: while it holds few
poses it follows the force at once, which multiplies the integral's gain, and lost the
arm within a second.
"""

import numpy as np
import pinocchio as pin

#: random poses per column for the structural QR, and the rank tolerance (relative)
POSES_PER_COLUMN = 4
RANK_TOLERANCE = 1e-8


def gravity_regressor(model, data, q):
    """Return ``Y_g(q)`` (n, 10 bodies) of Pinocchio `model` at `q` (its joint order)."""
    zero = np.zeros(model.nv)
    return pin.computeJointTorqueRegressor(model, data, q, zero, zero)


def gravity_base(model, seed=0):
    """
    Return ``(columns, scale)``: a base set of `model`'s gravity regressor's columns, and
    their scale (N m per kg or kg m).

    Pivoted QR of the regressor stacked over random poses within the joint limits. Scaled,
    each column has the same RMS over those poses, and the mean of ``Y_s^T Y_s`` over them
    has largest eigenvalue 1: the estimate's fastest direction moves at ``1 / window``.
    """
    from scipy.linalg import qr
    data = model.createData()
    rng = np.random.default_rng(seed)
    low = np.where(np.isfinite(model.lowerPositionLimit), model.lowerPositionLimit, -np.pi)
    high = np.where(np.isfinite(model.upperPositionLimit), model.upperPositionLimit, np.pi)
    count = POSES_PER_COLUMN * 10 * (model.njoints - 1) // model.nv + 1
    W = np.vstack([gravity_regressor(model, data, rng.uniform(low, high))
                   for _ in range(count)])
    R, pivot = qr(W, mode='r', pivoting=True)
    diagonal = np.abs(np.diag(R))
    rank = int(np.count_nonzero(diagonal > RANK_TOLERANCE * diagonal[0]))
    columns = np.sort(pivot[:rank])
    scale = np.sqrt(np.mean(W[:, columns] ** 2, axis=0))
    scaled = W[:, columns] / scale
    return columns, scale * np.sqrt(np.linalg.eigvalsh(scaled.T @ scaled / count)[-1])


class GravityEstimate:
    """The gravity error of a `RigidModel`, forces in its joint order; see the module doc."""

    def __init__(self, model, window):
        self.arm, self.model, self.window = model, model.model, float(window)
        self.data = self.model.createData()
        self.columns, self.scale = gravity_base(self.model)
        #: the fitted parameter change, times `scale` (N m), and the force fed at the last `add`
        self.delta = np.zeros(self.columns.size)
        self.fed = np.zeros(model.n)
        self._rows = np.zeros((model.n, self.columns.size))

    def reset(self):
        """Forget what was learnt (at activation)."""
        self.delta[:] = 0.0
        self.fed[:] = 0.0

    def add(self, q_des, total):
        """Add the fitted gravity error at the reference `q_des` (rad) to `total` (N m)."""
        arm = self.arm
        Y = gravity_regressor(self.model, self.data, arm._in(q_des))[:, self.columns]
        np.divide(Y if arm._order is None else Y[arm._order], self.scale, out=self._rows)
        np.dot(self._rows, self.delta, out=self.fed)
        total += self.fed

    def fold(self, force, period):
        """Move the estimate by a tick of `period` s along the rows of the last `add`."""
        self.delta += (period / self.window) * (self._rows.T @ force)

    def parameters(self):
        """Return the fitted change of the base columns' parameters (kg, kg m)."""
        return self.delta / self.scale
