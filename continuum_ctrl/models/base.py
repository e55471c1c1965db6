"""
The one dynamics-model interface used by the controller, the simulator and the benchmarks.

Every model describes ``M(q) qdd + C(q, qd) qd + passive(q, qd) + g(q) = tau`` in its own
generalized coordinates (radians for revolute joints, metres for PMA length changes), with SI
units throughout. Arrays are float64 NumPy vectors of length ``n``.

Models with kinematics also name frames: `frame_pose` is a 4x4 homogeneous transform in the
arm's base frame, `frame_jacobian` the 6 x n Jacobian, linear rows then angular rows, both in
base-frame axes at the frame's origin (Pinocchio's ``LOCAL_WORLD_ALIGNED``).

Threads: a model object is evaluated by one thread at a time. Its calls write a workspace of
its own (a continuum model's ``memory``, a rigid model's ``pin.Data``), and a call may run
several kernels on it, between which another thread can run. A second thread evaluates
``model.for_thread()``: the same parameters with a workspace of its own (Pinocchio's
``model.createData()``), equal results to the last bit. The controller gives its loop thread
the model, its planning worker one copy and its executor (``~/tip_pose``, ``~/shape``)
another.
"""

from abc import ABC, abstractmethod
from typing import List, Tuple

import numpy as np
import numpy.typing as npt

#: a float64 vector or matrix: q, qd, qdd, tau (n,), M, C, D (n, n)
Array = np.ndarray
#: what NumPy turns into one (gains, limits given as lists)
ArrayLike = npt.ArrayLike


class FrameError(ValueError):
    """An unknown frame, or a model without frames; the message names the frame and choices."""


class DynamicsModel(ABC):
    """Base class: subclasses give M, C, g, U and may override the composite calls for speed."""

    #: joint names in coordinate order
    joint_names: List[str]
    #: whether `passive_forces` can be non-zero (continuum arms); False skips them in the law
    has_passive_forces: bool = False

    @property
    def n(self) -> int:
        """Return the number of generalized coordinates."""
        return len(self.joint_names)

    def for_thread(self) -> 'DynamicsModel':
        """
        Return a model for another thread: these parameters, a workspace of its own.

        This default suits models whose calls keep no workspace (each returns fresh arrays,
        as the symbolic models' do): it returns the model itself.
        """
        return self

    @abstractmethod
    def mass_matrix(self, q: Array) -> Array:
        """Generalized inertia ``M(q)``, (n, n), symmetric positive definite."""

    @abstractmethod
    def coriolis_matrix(self, q: Array, qd: Array) -> Array:
        """Coriolis matrix ``C(q, qd)``, (n, n), Christoffel-consistent (``Mdot - 2C`` skew)."""

    @abstractmethod
    def gravity_vector(self, q: Array) -> Array:
        """Gravity generalized force ``g(q) = dU_gravity/dq``, (n,)."""

    @abstractmethod
    def gravity_potential(self, q: Array) -> float:
        """Gravitational potential energy ``U_g(q)`` in joules."""

    def passive_forces(self, q: Array, qd: Array) -> Array:
        """Elastic plus damping generalized force ``K_e q + D qd``, (n,); zero for rigid arms."""
        return np.zeros(self.n)

    def elastic_potential(self, q: Array) -> float:
        """Elastic potential energy ``U_e(q)`` in joules; zero for rigid arms."""
        return 0.0

    def damping_matrix(self, q: Array) -> Array:
        """Damping ``D`` such that the dissipated power is ``qd^T D qd``, (n, n)."""
        return np.zeros((self.n, self.n))

    def joint_limits(self) -> Tuple[Array, Array]:
        """Lower and upper position limits, (n,) each; +-inf where unbounded."""
        return np.full(self.n, -np.inf), np.full(self.n, np.inf)

    def effort_limits(self) -> Array:
        """Largest magnitude of generalized force per joint, (n,); inf where not given."""
        return np.full(self.n, np.inf)

    def frame_names(self) -> List[str]:
        """Names of the frames `frame_pose` knows; none for a model without kinematics."""
        return []

    def frame_pose(self, q: Array, frame: str) -> Array:
        """Pose of `frame` in the arm's base frame, (4, 4) homogeneous [m]."""
        raise self.frame_error(frame)

    def frame_jacobian(self, q: Array, frame: str) -> Array:
        """Jacobian of `frame`, (6, n): linear rows then angular, base axes at its origin."""
        raise self.frame_error(frame)

    def frame_kinematics(self, q: Array, frame: str) -> Tuple[Array, Array]:
        """Return ``(frame_pose, frame_jacobian)`` of `frame` at q; may share work."""
        return self.frame_pose(q, frame), self.frame_jacobian(q, frame)

    def frame_jacobian_derivative(self, q: Array, qd: Array, frame: str) -> Array:
        """
        ``Jdot = dJ/dt`` of `frame_jacobian` along ``qd``, (6, n) [1/s, rad/(m s)], same axes.

        Exact; ``Jdot qd`` is the frame's classical acceleration (origin's linear, then
        angular) at ``qdd = 0``, so ``J qdd + Jdot qd`` is its acceleration.
        """
        raise self.frame_error(frame)

    def compiled_ik_step(self, frame: str):
        """Return a compiled one-step IK of `frame` for `control.ik`, or None (none here)."""
        return None

    def compiled_task_step(self, frame: str):
        """Return a compiled task-space sample of `frame` for `control.task_space`, or None."""
        return None

    def compiled_damped_steps(self):
        """
        Return compiled `models.integrators.implicit_damping_euler_step` runs, or None (none here).

        Called ``steps(q, qd, forces, dt, hold, out, at, gain, y, kept)``: C-contiguous
        float64 arrays, `forces` (k, n) held one per step of `dt` s; ``M``, ``g`` and ``C qd``
        evaluated every `hold` (int >= 1) steps and held in between, the passive forces every
        step; fills `out` (2, n) with the final q and qd. Before step `at` (-1: none) the
        state is corrected, ``(q, qd) += gain (y - q)``, and copied into `kept` (k, n)
        (`models.integrators.implicit_damping_euler_stepper`).
        """
        return None

    def frame_error(self, frame: str) -> 'FrameError':
        """Return the `FrameError` for a frame this model does not have."""
        names = self.frame_names()
        if not names:
            return FrameError(f"frame '{frame}': a {type(self).__name__} has no frames "
                              '(kinematics come with urdf and continuum models)')
        return FrameError(f"unknown frame '{frame}'; frames: {', '.join(names)}")

    def bias_forces(self, q: Array, qd: Array) -> Array:
        """Everything but inertia: ``C qd + passive + g``, (n,)."""
        return (self.coriolis_matrix(q, qd) @ qd + self.passive_forces(q, qd)
                + self.gravity_vector(q))

    def dynamics(self, q: Array, qd: Array) -> Tuple[Array, Array, Array]:
        """Return ``(M, C, bias)`` at (q, qd), ``bias = C qd + passive + g``; may share work."""
        M = self.mass_matrix(q)
        C = self.coriolis_matrix(q, qd)
        return M, C, C @ qd + self.passive_forces(q, qd) + self.gravity_vector(q)

    def inverse_dynamics(self, q: Array, qd: Array, qdd: Array) -> Array:
        """Generalized force for an acceleration: ``M qdd + C qd + passive + g``, (n,)."""
        return self.mass_matrix(q) @ qdd + self.bias_forces(q, qd)

    def inverse_dynamics_passive_at(self, q: Array, qd: Array, qdd: Array, q_passive: Array,
                                    qd_passive: Array) -> Array:
        """
        Generalized force with the passive forces taken at another state, (n,).

        ``M(q) qdd + C(q, qd) qd + g(q) + passive(q_passive, qd_passive)``: the law's force
        when it compensates the arm's stiffness and damping at the reference. Equal to
        `inverse_dynamics` for a model without passive forces.
        """
        tau = self.inverse_dynamics(q, qd, qdd)
        if not self.has_passive_forces:
            return tau
        return tau - self.passive_forces(q, qd) + self.passive_forces(q_passive, qd_passive)

    def forward_dynamics(self, q: Array, qd: Array, tau: Array) -> Array:
        """Acceleration under a generalized force: ``M^-1 (tau - C qd - passive - g)``, (n,)."""
        rhs = np.asarray(tau, dtype=float) - self.bias_forces(q, qd)
        lower = np.linalg.cholesky(self.mass_matrix(q))    # LinAlgError unless M is SPD
        return np.linalg.solve(lower.T, np.linalg.solve(lower, rhs))

    def kinetic_energy(self, q: Array, qd: Array) -> float:
        """Kinetic energy ``1/2 qd^T M qd`` in joules."""
        qd = np.asarray(qd, dtype=float)
        return 0.5 * qd @ self.mass_matrix(q) @ qd

    def potential_energy(self, q: Array) -> float:
        """Total potential energy ``U_g + U_e`` in joules."""
        return self.gravity_potential(q) + self.elastic_potential(q)
