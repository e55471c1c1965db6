"""
What the two continuum models share: passive forces, limits, and the DynamicsModel calls.

Each model supplies one compiled evaluation (`ContinuumModel.kernel`) that fills the named
buffers ``data.sums`` of its `data.ContinuumData`: ``M``, by mode ``C`` or ``dM/dq``, the
gravity force ``g``, the passive forces and, by task, the bias, inverse or forward dynamics,
and returns ``U_g``. Everything else is here.

Passive forces per PMA: ``K_e q + D qd`` plus, when ``model.limit_stiffness`` k > 0, a smooth
stiffening outside ``[0, l_max]``. With ``d`` the depth beyond the violated limit and
``delta = LIMIT_ONSET * l_max``, its potential is ``k d^3/(6 delta)`` for ``d < delta`` and
``k (d - delta/2)^2/2 + k delta^2/24`` beyond: C2, so the force is C1 and the stiffness rises
continuously from 0 to k. It keeps a simulated plant physical; it is part of both the passive
force and the elastic potential, so energy balances still hold.
"""

import copy

import numpy as np

from continuum_ctrl.models.base import DynamicsModel
from continuum_ctrl.models.continuum.data import new_arm, new_data
from continuum_ctrl.models.continuum.frames import tip_frame_derivative, tip_pose
from continuum_ctrl.models.continuum.ik_step import ik_bounds, ik_scratch, ik_settings, ik_step
from continuum_ctrl.models.continuum.kinematics import backbone_frames, backbone_points
from continuum_ctrl.models.continuum.modes import CORIOLIS, CQ_ALONE, MASS, MASS_DERIVATIVE
from continuum_ctrl.models.continuum.params import LIMIT_ONSET
from continuum_ctrl.models.continuum.paths import path_segment
from continuum_ctrl.models.continuum.task_step import new_goal, task_scratch, task_step
from continuum_ctrl.numerics.cholesky import cholesky, solve_factored
from continuum_ctrl.numerics.jit import compiled, entry_point


@compiled()
def _limit_depth(qi, lmax):
    """Return ``(d, sign)``: depth [m] beyond the violated limit and ``d(d)/dq``."""
    if qi < 0.0:
        return -qi, -1.0
    if qi > lmax:
        return qi - lmax, 1.0
    return 0.0, 0.0


@compiled()
def passive(q, qd, pma, out):
    """Fill the passive force (3n,) [N]; `pma` rows: stiffness, damping, l_max, k_limit."""
    for i in range(q.shape[0]):
        f = pma[i, 0] * q[i] + pma[i, 1] * qd[i]
        k = pma[i, 3]
        if k > 0.0:
            d, sgn = _limit_depth(q[i], pma[i, 2])
            delta = LIMIT_ONSET * pma[i, 2]
            if d < delta:
                f += sgn * k * d * d / (2.0 * delta)
            else:
                f += sgn * k * (d - 0.5 * delta)
        out[i] = f


@compiled()
def elastic(q, pma):
    """Return the elastic potential [J] of all PMAs, limit stiffening included."""
    U = 0.0
    for i in range(q.shape[0]):
        U += 0.5 * pma[i, 0] * q[i] * q[i]
        k = pma[i, 3]
        if k > 0.0:
            d, _ = _limit_depth(q[i], pma[i, 2])
            delta = LIMIT_ONSET * pma[i, 2]
            if d < delta:
                U += k * d ** 3 / (6.0 * delta)
            else:
                U += 0.5 * k * (d - 0.5 * delta) ** 2 + k * delta * delta / 24.0
    return U


@compiled()
def _bias(g, pas, cq, out):
    """Fill ``out = C qd + passive + g`` from ``cq = C qd``."""
    for i in range(out.shape[0]):
        out[i] = cq[i] + pas[i] + g[i]


@compiled()
def inverse(M, g, pas, cq, qdd, tau):
    """Fill ``tau = M qdd + C qd + passive + g``."""
    _bias(g, pas, cq, tau)
    n = tau.shape[0]
    for i in range(n):
        acc = 0.0
        for j in range(n):
            acc += M[i, j] * qdd[j]
        tau[i] += acc


@compiled()
def forward(M, g, pas, cq, tau, qdd):
    """Fill ``qdd = M^-1 (tau - C qd - passive - g)`` by Cholesky; M is overwritten."""
    factor(M)
    forward_factored(M, g, pas, cq, tau, qdd)


@compiled()
def factor(M):
    """Overwrite `M` with ``L``, ``M = L L^T``, in its lower triangle; raise if M is not SPD."""
    if not cholesky(M, M.shape[0]):
        raise ValueError('mass matrix is not positive definite')


@compiled()
def forward_factored(L, g, pas, cq, tau, qdd):
    """Fill ``qdd = M^-1 (tau - C qd - passive - g)`` from M's factor `L` (`factor`)."""
    n = qdd.shape[0]
    _bias(g, pas, cq, qdd)
    for i in range(n):
        qdd[i] = tau[i] - qdd[i]
    solve_factored(L, qdd, n)


@compiled()
def move_passive(pma, q, qd, included, scratch, out):
    """
    Replace the passive force `included` in `out` by the one at ``(q, qd)``: out += P - included.

    `scratch` (3n,) receives ``P(q, qd)``.
    """
    passive(q, qd, pma, scratch)
    for i in range(out.shape[0]):
        out[i] += scratch[i] - included[i]


@compiled()
def add_damping(M, pma, dt):
    """Add ``dt D`` to `M` (D = diag of the PMA dampings, `pma` column 1): implicit damping."""
    for i in range(M.shape[0]):
        M[i, i] += dt * pma[i, 1]


#: what `finish` computes into `out` after an evaluation (int64: numerics.jit, no literal
#: arguments from compiled callers)
TASK_NONE, TASK_BIAS, TASK_INVERSE, TASK_FORWARD = (np.int64(task) for task in range(4))


@compiled()
def finish(arm, sums, q, qd, task, v):
    """
    Fill ``sums.passive`` and ``sums.out`` after an evaluation.

    ``out``: by `task`, the bias ``C qd + passive + g``, inverse (``M v + bias``) or forward
    dynamics (``M`` is then overwritten by its Cholesky factor).
    """
    M, g, pas, cq, out = sums.M, sums.g, sums.passive, sums.cq, sums.out
    passive(q, qd, arm.pma, pas)
    if task == TASK_BIAS:
        _bias(g, pas, cq, out)
    elif task == TASK_INVERSE:
        inverse(M, g, pas, cq, v, out)
    elif task == TASK_FORWARD:
        forward(M, g, pas, cq, v, out)


class ContinuumModel(DynamicsModel):
    """
    A continuum arm (contract sections 1 to 4): coordinates are PMA length changes [m].

    ``arm`` is the immutable `data.Arm`, ``data`` the `data.ContinuumData` every evaluation
    writes, named views of the one block ``memory``. Subclasses give `kernel`, compiled
    ``kernel(arm, memory, q, qd, mode, task, v)``:
    one evaluation that fills ``data.sums``: ``M``, by mode ``C`` and ``C qd`` (1), ``dM``
    (2) or ``C qd`` alone (3), ``g``, the passive forces and the `finish` task into ``out``,
    and returns ``U_g``.
    """

    kernel = None
    has_passive_forces = True

    def __init__(self, spec):
        self.spec = spec
        self.joint_names = list(spec.joint_names)
        self.arm = new_arm(spec)
        self._zero = np.zeros(self.n)       # read only
        self._workspace()
        self._kernel = entry_point(self.kernel, self.arm, self.memory, self._zero, self._zero, 0,
                                   TASK_NONE, self._zero)
        self._move_passive = entry_point(move_passive, self.arm.pma, self._zero, self._zero,
                                         self._zero, self._passive_at, self._passive_at)
        self._frames = {f'section{i}_tip': i - 1 for i in range(1, spec.sections + 1)}
        self._tip_derivative = None
        self._tip_pose = entry_point(tip_pose, self.arm, self.memory, self._zero, 0, np.eye(4),
                                     np.zeros((6, self.n)))

    def _workspace(self):
        """Make the arrays every evaluation writes: ``memory`` (its views ``data``), scratch."""
        self.memory, self.data = new_data(self.spec.sections)
        self._passive_at = np.zeros(self.n)

    def for_thread(self):
        """
        Return this arm with a ``memory`` block of its own, for another thread (see base).

        The compiled entry points are shared: each call passes them the model's ``memory``.
        """
        model = copy.copy(self)
        model._workspace()
        return model

    def _vector(self, x):
        if x is None:
            return self._zero
        if type(x) is not np.ndarray or x.dtype != np.float64 or not x.flags.c_contiguous:
            x = np.ascontiguousarray(x, dtype=float)
        if x.shape != (self.n,):
            raise ValueError(f'expected a vector of shape ({self.n},), got {x.shape}')
        return x

    def _run(self, q, qd=None, mode=MASS, task=TASK_NONE, v=None):
        return self._kernel(self.arm, self.memory, self._vector(q), self._vector(qd), mode, task,
                            self._vector(v))

    def mass_matrix(self, q):
        """Generalized inertia ``M(q)`` [kg], (3n, 3n)."""
        self._run(q)
        return self.data.sums.M.copy()

    def mass_matrix_derivative(self, q):
        """Exact ``dM[i, j, k] = dM_ij/dq_k`` [kg/m], (3n, 3n, 3n)."""
        self._run(q, None, MASS_DERIVATIVE)
        return self.data.sums.dM.copy()

    def coriolis_matrix(self, q, qd):
        """Christoffel Coriolis matrix ``C(q, qd)`` [kg/s], (3n, 3n)."""
        self._run(q, qd, CORIOLIS)
        return self.data.sums.C.copy()

    def gravity_vector(self, q):
        """Gravity force ``dU_g/dq`` [N], (3n,)."""
        self._run(q)
        return self.data.sums.g.copy()

    def gravity_potential(self, q):
        """Gravitational potential ``U_g = -sum_i m_i gravity . pbar_i`` [J]."""
        return self._run(q)

    def passive_forces(self, q, qd):
        """Elastic, limit and damping force ``K_e q + D qd (+ limit)`` [N], (3n,)."""
        out = np.empty(self.n)
        passive(self._vector(q), self._vector(qd), self.arm.pma, out)
        return out

    def elastic_potential(self, q):
        """Elastic potential ``q^T K_e q / 2`` plus the limit stiffening [J]."""
        return elastic(self._vector(q), self.arm.pma)

    def damping_matrix(self, q):
        """Damping ``D = diag(damping per PMA)`` [N s/m], (3n, 3n)."""
        return np.diag(self.arm.pma[:, 1])

    def joint_limits(self):
        """PMA strokes: ``[0, l_max]`` per joint [m]."""
        return np.zeros(self.n), self.arm.pma[:, 2].copy()

    def frame_names(self):
        """``section{i}_tip``, i = 1..n: the tip frame of each section (contract section 3)."""
        return list(self._frames)

    def _section(self, frame):
        sec = self._frames.get(frame) if isinstance(frame, str) else None
        if sec is None:
            raise self.frame_error(frame)
        return sec

    def frame_kinematics(self, q, frame):
        """Return the pose (4, 4) and Jacobian (6, 3n) of a tip frame from one evaluation."""
        sec = self._section(frame)
        T, J = np.eye(4), np.empty((6, self.n))   # fresh: other threads may call it meanwhile
        self._tip_pose(self.arm, self.memory, self._vector(q), sec, T, J)
        return T, J

    def frame_pose(self, q, frame):
        """Pose of a ``section{i}_tip`` frame in the arm's base frame, (4, 4) [m]."""
        return self.frame_kinematics(q, frame)[0]

    def frame_jacobian(self, q, frame):
        """Exact ``LOCAL_WORLD_ALIGNED`` Jacobian of a tip frame, (6, 3n) [1, rad/m]."""
        return self.frame_kinematics(q, frame)[1]

    def frame_jacobian_derivative(self, q, qd, frame):
        """Exact ``dJ/dt`` of a tip frame's Jacobian along ``qd``, (6, 3n) (see base)."""
        sec = self._section(frame)
        T, J, Jdot = np.eye(4), np.empty((6, self.n)), np.empty((6, self.n))
        if self._tip_derivative is None:
            self._tip_derivative = entry_point(tip_frame_derivative, self.arm, self.memory,
                                               self._zero, self._zero, 0, T, J, Jdot)
        self._tip_derivative(self.arm, self.memory, self._vector(q), self._vector(qd), sec, T,
                             J, Jdot)
        return Jdot

    def compiled_ik_step(self, frame):
        """
        Return the compiled IK step of a tip frame (`ik_step.ik_step`), see base.

        Called ``step(q, target, rotation, weight, settings, bounds, out)``: C-contiguous
        float64 arrays; returns the position error [m].
        """
        sec = self._section(frame)
        buf, T, J = np.zeros(ik_scratch(self.n)), np.eye(4), np.zeros((6, self.n))
        bounds = ik_bounds(*np.zeros((5, self.n)))
        kernel = entry_point(ik_step, self.arm, self.memory, self._zero, sec, T, J, np.zeros(3),
                             np.eye(3), 0.0, ik_settings(1.0), bounds, np.zeros(self.n), buf)
        arm, memory = self.arm, self.memory

        def step(q, target, rotation, weight, settings, bounds, out):
            return kernel(arm, memory, q, sec, T, J, target, rotation, weight, settings, bounds,
                          out, buf)
        return step

    def compiled_task_step(self, frame):
        """
        Return the compiled task-space sample of a tip frame (`task_step.task_step`), see base.

        Called ``step(t, path, goal, weight, state, clock, bounds, sample)``: `t` and
        `weight` floats, the rest C-contiguous float64 arrays (`path` a `paths` table, `goal`
        a `task_step.new_goal` block, `bounds` rows lower, upper limits and catch-up speeds);
        returns the tip error [m].
        """
        sec = self._section(frame)
        n = self.n
        T, J, Jdot, buf = np.eye(4), np.zeros((6, n)), np.zeros((6, n)), np.zeros(task_scratch(n))
        kernel = entry_point(task_step, self.arm, self.memory, sec, 0.0,
                             path_segment(0.0, np.zeros(3))[None], new_goal(np.eye(3)), 0.0,
                             np.zeros((3, n)), np.full(1, np.nan),
                             np.vstack((*self.joint_limits(), np.full(n, np.inf))), T, J, Jdot,
                             np.zeros((3, 3)), buf)
        arm, memory = self.arm, self.memory

        def step(t, path, goal, weight, state, clock, bounds, sample):
            return kernel(arm, memory, sec, t, path, goal, weight, state, clock, bounds, T, J,
                          Jdot, sample, buf)
        return step

    def backbone(self, q, points_per_section=10):
        """
        Backbone points for drawing, (1 + n points_per_section, 3) [m], base frame.

        The base origin, then along each section ``xi = 1/P, 2/P, ..., 1`` (P points).
        """
        points = int(points_per_section)
        if points < 1:
            raise ValueError(f'points_per_section must be >= 1, got {points_per_section}')
        out = np.empty((1 + self.spec.sections * points, 3))
        xi = np.arange(1, points + 1) / points
        backbone_points(self.arm, self._vector(q), self.data.chain, self.data.section,
                        self.data.body, xi, out)
        return out

    def backbone_frames(self, q, points_per_section):
        """
        Return the backbone's frames at the middles of equal pieces: ``(p, R)``, base frame.

        Per section `points_per_section` (P) pieces, their middles at ``xi = (k + 1/2) / P``:
        positions (n P, 3) [m] and orientations (n P, 3, 3): the section's frame carried
        along its arc (z along the backbone), as at its tip.
        """
        points = int(points_per_section)
        if points < 1:
            raise ValueError(f'points_per_section must be >= 1, got {points_per_section}')
        n = self.spec.sections
        p, R = np.empty((n * points, 3)), np.empty((n * points, 3, 3))
        backbone_frames(self.arm, self._vector(q), self.data.chain, self.data.section,
                        self.data.body, (np.arange(points) + 0.5) / points, p, R)
        return p, R

    def dynamics(self, q, qd):
        """Return ``(M, C, bias)`` from one evaluation; ``bias = C qd + passive + g``."""
        self._run(q, qd, CORIOLIS, TASK_BIAS)
        sums = self.data.sums
        return sums.M.copy(), sums.C.copy(), sums.out.copy()

    def bias_forces(self, q, qd):
        """Everything but inertia: ``C qd + passive + g`` [N], (3n,), from one evaluation."""
        self._run(q, qd, CQ_ALONE, TASK_BIAS)
        return self.data.sums.out.copy()

    def inverse_dynamics(self, q, qd, qdd):
        """Generalized force ``M qdd + C qd + passive + g`` [N] from one evaluation."""
        self._run(q, qd, CQ_ALONE, TASK_INVERSE, qdd)
        return self.data.sums.out.copy()

    def inverse_dynamics_passive_at(self, q, qd, qdd, q_passive, qd_passive):
        """``M qdd + C qd + g`` at (q, qd) plus the passive forces at the other state [N]."""
        self._run(q, qd, CQ_ALONE, TASK_INVERSE, qdd)
        sums = self.data.sums
        self._move_passive(self.arm.pma, self._vector(q_passive), self._vector(qd_passive),
                           sums.passive, self._passive_at, sums.out)
        return sums.out.copy()

    def forward_dynamics(self, q, qd, tau):
        """Acceleration ``M^-1 (tau - C qd - passive - g)`` [m/s^2] from one evaluation."""
        self._run(q, qd, CQ_ALONE, TASK_FORWARD, tau)
        return self.data.sums.out.copy()
