"""
Task-space references: a tip path, followed by inverse kinematics, as a joint reference.

`TaskSpace` knows the arm's kinematics of one frame (`task.frame`) and builds references from
tip paths; `TaskReference` turns a path into ``sample(t) -> (q_d, qd_d, qdd_d)``, the interface
of `continuum_ctrl.control.references`, so the control loop runs it unchanged:
- ``q_d``: IK from the previous solution (predicted to `t`, then damped least-squares Newton
  steps on the task error without the null-space pull, so the solution moves by minimum-norm
  steps, as ``qd_d`` does; on PMA arms within the lengths the pressures hold,
  control/holding.py; each joint at most `task.catch_up` of its range per second, sample to
  sample and in ``qd_d``, so a path the arm cannot follow to first order is caught up, not
  jumped to);
- ``qd_d = A^+ xd_d``;
- ``qdd_d``, the exact time derivative of ``qd_d = A^T (A A^T)^-1 xd_d``: ``A^+ (xdd_d -
  Adot qd_d) + (I - A^+ A) Adot^T y`` with ``y = (A A^T)^-1 xd_d`` and ``Adot`` from the
  model's `frame_jacobian_derivative`;
with ``A`` the task Jacobian (linear rows; and the angular rows times `orientation_weight` when
that is > 0) restricted to the joints not held at a joint limit, so ``q_d`` never leaves the
limits and ``qd_d`` never pushes out of them. Where the model offers `compiled_task_step`
(continuum arms), one compiled call per sample does all of it, path point included, on the
reference's own arrays (`path_table` gives the path's polynomials); otherwise the same
arithmetic runs in NumPy on the frame interface (`task_numpy`, the slow path, with a
warning).

Paths (positions [m] in the arm's base frame, times [s] from the start of the reference):
- `MinimumJerk` (control.references) from the current tip to a target, over `task.duration`
  or longer so that the peak tip speed stays within `task.max_speed`;
- `TipCircle`: centre, radius, plane normal and frequency, its angular rate ramped up from
  zero by a minimum-jerk ramp over `task.duration`;
- `Waypoints` (control.references): a C2 spline through timed tip positions.
A target (or waypoint, or circle point) the tip cannot reach is clamped to the closest
reachable point (`InverseKinematics.solve`); the reference then says so (`clamped`, and
`clamp_distance` [m], how far the farthest target was).

The task space's `offset` (m, base frame; control/tip_correction.py writes it) is added to
every path point fed to the IK: the model's tip goes to ``x + offset`` where the true tip,
measured, is to be at ``x``. A path starts at the tip as corrected (``pose - offset``), so
that the IK's first point is the model's tip where it is.
"""

from dataclasses import dataclass
from typing import Optional
import warnings

import numpy as np
import pinocchio as pin

from continuum_ctrl.control.holding import HoldingRange, REFRESH
from continuum_ctrl.control.ik import InverseKinematics
from continuum_ctrl.control.references import MinimumJerk, minimum_jerk_ramp, Reference, Waypoints
from continuum_ctrl.control import seen_reach
from continuum_ctrl.control.task_numpy import NumpyTaskStep
from continuum_ctrl.control.tip_correction import CorrectionSettings
from continuum_ctrl.models.continuum.paths import path_segment
from continuum_ctrl.models.continuum.task_step import goal_layout, new_goal

#: a target farther than this from the closest reachable point is clamped, m
REACH_TOLERANCE = 1e-5
#: circle points checked for reachability when a circle is built
CIRCLE_CHECKS = 24
#: peak speed of a minimum-jerk move over its mean speed (15/8)
MIN_JERK_PEAK = 1.875


@dataclass(frozen=True)
class TaskSettings:
    """
    The `task.*` settings: the controlled frame and how tip moves are timed.

    `frame`: the frame the task controls (None: no task space); `base_frame`: the frame_id of
    tip messages; `orientation_weight`: weight of the orientation error, m/rad (0: position
    only); `duration`: shortest tip move, s; `max_speed`: largest peak tip speed of a move,
    m/s (0: no limit); `catch_up`: the fastest a joint of the reference moves (sample to
    sample and in ``qd_d``), in shares of its range per second; `correction`: the
    `task.correction.*` settings of the correction on a measured tip
    (control/tip_correction.py); `holding`: the PMAs' force range the IK's poses
    keep (`task.pressure_margin`, control/holding.py; None: the joint limits alone, as on
    rigid arms).
    """

    frame: Optional[str] = None
    base_frame: str = 'base'
    orientation_weight: float = 0.0
    duration: float = 2.0
    max_speed: float = 0.05
    catch_up: float = 5.0
    correction: CorrectionSettings = CorrectionSettings()
    holding: Optional[HoldingRange] = None


class TipCircle:
    """
    A tip circle: ``x = c + r (cos th u + sin th v)``, ``th' = 2 pi f s(t)`` [m, s].

    `s` is the minimum-jerk ramp from 0 to 1 over `ramp` seconds (the circle starts at rest
    at angle 0, ``c + r u``); `u` and `v` span the plane normal to `normal`, with `u` the
    normalized component of `start_direction` in that plane.
    """

    def __init__(self, center, radius, normal, frequency, ramp, start_direction=(1.0, 0.0, 0.0)):
        self.center = np.asarray(center, dtype=float)
        self.radius = float(radius)
        n = np.asarray(normal, dtype=float)
        n = n / np.linalg.norm(n)
        u = np.asarray(start_direction, dtype=float)
        u = u - (u @ n) * n
        if np.linalg.norm(u) < 1e-6:
            u = np.eye(3)[int(np.argmin(np.abs(n)))]
            u = u - (u @ n) * n
        self.u = u / np.linalg.norm(u)
        self.v = np.cross(n, self.u)
        self.omega = 2.0 * np.pi * float(frequency)
        self.ramp = float(ramp)

    def point(self, angle):
        """Return the circle point at `angle` (rad)."""
        return self.center + self.radius * (np.cos(angle) * self.u + np.sin(angle) * self.v)

    def sample(self, t):
        """Return tip position, velocity and acceleration at `t` (s)."""
        T = self.ramp
        if T > 0.0 and t < T:
            x = max(t, 0.0) / T
            phase = T * x ** 4 * (2.5 + x * (-3.0 + x))    # integral of the ramp
            s, ds, _ = minimum_jerk_ramp(t, T)
        else:
            phase, s, ds = t - 0.5 * T, 1.0, 0.0
        th, w, dw = self.omega * phase, self.omega * s, self.omega * ds
        radial = np.cos(th) * self.u + np.sin(th) * self.v
        tangent = -np.sin(th) * self.u + np.cos(th) * self.v
        r = self.radius
        return (self.center + r * radial, r * w * tangent,
                r * dw * tangent - r * w * w * radial)


class ChainedPath:
    """`first` until `switch` s, then `second` on its own clock (second(t - switch))."""

    def __init__(self, first, second, switch):
        self.first, self.second, self.switch = first, second, float(switch)

    def sample(self, t):
        """Return tip position, velocity and acceleration at `t` (s)."""
        if t < self.switch:
            return self.first.sample(t)
        return self.second.sample(t - self.switch)


class TaskSpace:
    """
    The kinematics of `settings.frame` of `model`: tip poses, IK, and references from paths.

    The references it makes sample on `sampler` (default: itself): a planning thread's
    `for_thread` copy makes them on its own model, the loop's thread samples them on the
    loop's; its IK may run in a process of its own (`reach`). Raises FrameError (ValueError)
    when the model has no such frame.
    """

    def __init__(self, model, settings: TaskSettings, sampler: Optional['TaskSpace'] = None,
                 reach=None):
        self.model = model
        self.sampler = self if sampler is None else sampler
        #: the task-space correction (m, base frame), one array shared with the sampler
        self.offset = np.zeros(3) if sampler is None else sampler.offset
        self.reach = reach
        self.settings = settings
        self.frame = settings.frame
        #: the joint bounds the pressures hold on this model (None: the joint limits alone)
        self.holding = None if settings.holding is None else settings.holding.bounds(model)
        self.ik = InverseKinematics(model, settings.frame, settings.orientation_weight,
                                    holding=self.holding)
        self.weight = settings.orientation_weight
        self.compiled_step = model.compiled_task_step(settings.frame)
        self.step = self.compiled_step
        if self.step is None:
            warnings.warn(f'task space of frame {self.frame!r}: {type(model).__name__} has no '
                          f'compiled task step, so each reference sample runs in NumPy (the '
                          f'slow path, tens of times slower)', RuntimeWarning, stacklevel=2)
            self.step = NumpyTaskStep(model, self.frame)
        self._checked: dict = {}        # the last circle checked: its clamp distance, m
        seen_reach.load()               # here, not in a reference made on the planner's thread

    def for_thread(self, reach=None):
        """
        Return this task space on the model's `for_thread` copy, sampling on this one.

        `reach`: where its IK runs (a control.reach.ReachProcess; None: on the caller).
        """
        return TaskSpace(self.model.for_thread(), self.settings, sampler=self, reach=reach)

    def pose(self, q):
        """Pose (4, 4) of the task frame in the base frame at `q` [m]."""
        return self.model.frame_pose(q, self.frame)

    def tip(self, q):
        """Return where the tip is at `q` [m], as corrected: the model's tip less `offset`."""
        return self.pose(q)[:3, 3] - self.offset

    def closest(self, position, q0):
        """Return ``(reachable position, distance to it [m], joints there)`` of a target."""
        return self.closest_points([position], q0)[0]

    def closest_points(self, positions, q0, chain=False):
        """
        Return `closest` of each position, from `q0` or (`chain`) from the previous solution.

        With a `reach` (control.reach.ReachProcess) the IK runs in its process.
        """
        if self.reach is not None:
            return self.reach(positions, q0, chain)
        out = []
        for position in positions:
            result = self.ik.solve(position, q0=q0)
            if result.position_error <= REACH_TOLERANCE:
                out.append((np.asarray(position, dtype=float), 0.0, result.q))
            else:
                out.append((self.pose(result.q)[:3, 3], result.position_error, result.q))
            q0 = result.q if chain else q0
        return out

    def move_duration(self, distance):
        """Duration of a minimum-jerk tip move over `distance` m: duration, or speed-bound."""
        speed = self.settings.max_speed
        slow = MIN_JERK_PEAK * distance / speed if speed > 0.0 else 0.0
        return max(self.settings.duration, slow)

    def to_target(self, q_start, position, rotation=None, clamp_distance=None):
        """
        Return a minimum-jerk move of the tip from its pose at `q_start` to a target.

        The target is clamped to the closest reachable point (`closest`, which can take a
        second or more for an unreachable target: callers with a deadline run `closest`
        aside and pass its point and distance as `position`, `clamp_distance`).
        """
        start = self.tip(q_start)
        if clamp_distance is None:
            goal, distance, _ = self.closest(position, q_start)
        else:
            goal, distance = np.asarray(position, dtype=float), clamp_distance
        path = MinimumJerk(start, goal, 0.0,
                           self.move_duration(float(np.linalg.norm(goal - start))))
        rotation = None if rotation is None else np.asarray(rotation, dtype=float)
        return TaskReference(self, path, q_start, rotation, distance)

    def circle(self, q_start, radius, normal, frequency, center=None):
        """
        Return a tip circle from the tip's pose at `q_start`.

        Without `center` the circle passes through the current tip (the centre is `radius`
        from it along the first in-plane axis); with it, the tip first moves to the circle's
        start point, then circles. A circle fixed in space is checked for reach (IK, seconds
        when out of reach) once: a restart from another pose reuses that.
        """
        tip = self.tip(q_start)
        if center is None:
            probe = TipCircle(tip, radius, normal, frequency, self.settings.duration)
            center = tip - radius * probe.u
        circle = TipCircle(center, radius, normal, frequency, self.settings.duration)
        key = (tuple(circle.center), circle.radius, tuple(circle.u), tuple(circle.v))
        distance = self._checked.get(key)
        if distance is None:           # each check warm-started from the last solution
            checks = [circle.point(a)
                      for a in np.linspace(0.0, 2.0 * np.pi, CIRCLE_CHECKS, endpoint=False)]
            distance = max(gap for _, gap, _ in self.closest_points(checks, q_start, True))
            self._checked = {key: distance}
        start = circle.point(0.0)
        gap = float(np.linalg.norm(start - tip))
        if gap <= REACH_TOLERANCE:
            return TaskReference(self, circle, q_start, None, distance)
        duration = self.move_duration(gap)
        path = ChainedPath(MinimumJerk(tip, start, 0.0, duration), circle, duration)
        return TaskReference(self, path, q_start, None, distance)

    def waypoints(self, q_start, times, positions):
        """Return a C2 spline from the current tip through `positions` (m, 3) at `times` (s)."""
        tip = self.tip(q_start)
        clamped = [c[:2] for c in self.closest_points(np.asarray(positions, dtype=float),
                                                      q_start)]
        points = np.vstack([tip] + [p for p, _ in clamped])
        distance = max((d for _, d in clamped), default=0.0)
        path = Waypoints(np.concatenate(([0.0], times)), points, name='reference')
        return TaskReference(self, path, q_start, None, distance)


class TaskReference(Reference):
    """
    A tip path followed by IK: ``sample(t) -> (q_d, qd_d, qdd_d)`` (see the module).

    Made on `task` (its model evaluated once here), sampled on ``task.sampler``. Starts at
    `q_start` (the path must start at its tip). `rotation`: the target orientation
    (3, 3), reached along the geodesic on the path's timing when `orientation_weight` > 0
    (default: the start orientation, held). Successive samples continue from the previous
    solution, so call it with times close together, as a control loop does. The returned
    arrays are read-only views of the reference's state, overwritten by the next sample.
    `goal`: the orientation of the move, a `task_step.new_goal` block.
    """

    def __init__(self, task: TaskSpace, path, q_start, rotation=None, clamp_distance=0.0):
        self.task = task.sampler
        self.path = path
        self.n = task.model.n
        self.clamp_distance = float(clamp_distance)
        self.clamped = self.clamp_distance > 0.0
        self.low, self.high = task.ik.lower, task.ik.upper
        span = self.high - self.low         # the catch-up speeds: none for an unbounded joint
        speed = np.where(np.isfinite(span), task.settings.catch_up * span, np.inf)
        self._bounds = np.ascontiguousarray(np.vstack((self.low, self.high, speed)))
        #: the bounds before what the loop saw (holding's, or the joint limits), (2, n)
        self._nominal = self._bounds[:2].copy()
        #: the lengths the arm was seen not to pass (control/seen_reach.py)
        self.seen = seen_reach.SeenReach(self.low, self.high)
        self._state = np.zeros((3, self.n))             # q_d, qd_d, qdd_d of the last sample
        self._state[0] = np.clip(np.asarray(q_start, dtype=float), self.low, self.high)
        self._start = self._state[0].copy()
        self._refreshed = -np.inf                       # when the bounds' gravity was, s
        if task.holding is not None:
            task.holding.at(self._start, self._nominal, keep=self._start)
            self._bounds[:2] = self._nominal
        self._clock = np.full(1, np.nan)                # time of the last sample, s
        self._sample = np.zeros((3, 3))                 # the path's x, xd, xdd there
        self._out = tuple(_read_only(row) for row in self._state)
        self.tip_error = 0.0
        start = task.pose(self._state[0])[:3, :3]
        turn = (np.zeros(3) if rotation is None or task.weight <= 0.0
                else pin.log3(start.T @ rotation))     # body-frame rotation of the move
        self.goal = new_goal(start, turn, getattr(path, 'duration', 1.0))
        self._offset = goal_layout(self.goal)[1].offset     # the task's offset, each sample
        self._step = self.task.step
        self._path = path if self.task.compiled_step is None else path_table(path)

    def within(self, low, high):
        """Return whether the IK's joint limits (which every sample keeps) lie in the bounds."""
        return bool(np.all(self.low >= low) and np.all(self.high <= high))

    @property
    def target(self):
        """Return the path's tip position at the last sample, m (None before the first)."""
        return None if np.isnan(self._clock[0]) else self._sample[0] - self._offset

    def sample(self, t):
        """
        Return ``(q_d, qd_d, qdd_d)`` at `t` (s), joints within their limits.

        On PMA arms also within the lengths the pressures hold (control/holding.py), their
        gravity refreshed at ``q_d`` every `REFRESH` s; a bound never cuts the start pose (a
        start beyond one, as the arm at rest can be, keeps that length allowed: no jump).
        Within the lengths the loop saw the arm not pass (`seen`, control/seen_reach.py).
        """
        holding = self.task.holding
        if holding is not None and not t - self._refreshed < REFRESH:
            holding.at(self._state[0], self._nominal, keep=self._start)
            self._refreshed = t
        self.seen.bound(self._nominal, self._bounds)
        self._offset[:] = self.task.offset
        self.tip_error = self._step(float(t), self._path, self.goal, self.task.weight,
                                    self._state, self._clock, self._bounds, self._sample)
        return self._out


def _read_only(array):
    view = array.view()
    view.flags.writeable = False
    return view


def path_table(path):
    """
    Return the compiled tip path table (`paths.path_segment` rows) of `path`.

    MinimumJerk, TipCircle, ChainedPath and Waypoints paths (positions only) have one; their
    polynomials in time are the same functions `sample` evaluates. Raises TypeError for
    another path.
    """
    if isinstance(path, MinimumJerk):
        T, d = path.duration, path.delta
        coefficients = np.zeros((6, 3))
        coefficients[0] = path.q0
        coefficients[3:] = np.outer([10.0 / T ** 3, -15.0 / T ** 4, 6.0 / T ** 5], d)
        return np.vstack((path_segment(path.t0, coefficients),
                          path_segment(path.t0 + T, path.q0 + d)))
    if isinstance(path, TipCircle):
        c, r, w, T = path.center, path.radius, path.omega, path.ramp
        rows = [path_segment(T, c, r, (0.5 * w * T, w), path.u, path.v)]
        if T > 0.0:     # ramp: phase w T x^4 (2.5 - 3 x + x^2), x = t/T
            rows.insert(0, path_segment(0.0, c, r, (0.0, 0.0, 0.0, 0.0, 2.5 * w / T ** 3,
                                                    -3.0 * w / T ** 4, w / T ** 5),
                                        path.u, path.v))
        return np.vstack(rows)
    if isinstance(path, ChainedPath):
        first, second = path_table(path.first), path_table(path.second)
        second[:, 0] += path.switch
        return np.ascontiguousarray(np.vstack((first[first[:, 0] < path.switch], second)))
    if isinstance(path, Waypoints) and path.n == 3:
        knots, coefficients = path.pieces()
        rows = [path_segment(k, c) for k, c in zip(knots, coefficients)]
        end = path.end_time
        return np.vstack(rows + [path_segment(end, path.sample(end)[0])])
    raise TypeError(f'no tip path table for a {type(path).__name__} path')
