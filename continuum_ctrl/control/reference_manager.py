"""
The control loop's reference manager: anchoring, planning aside, installing, waypoints.

    references = loop.references
    references.anchor(t)                 # restart the configured reference at the measured state
    references.install(reference, t, blend_time)   # a built reference, from the next tick
    reference = references.plan(times, positions)  # checked waypoints (any thread)
    references.follow(times, positions, t=t)       # plan, then install (the loop's thread)
    references.configure(settings)       # the task space of new settings
    references.tip_target()              # where the tip heads (None: a joint reference)

The reference the loop follows is the loop's `reference` (an `Anchored`), which the manager
sets: on every (re)start the desired trajectory leaves the measured state (pose, velocity;
zero acceleration) and blends into the reference over `reference.blend_time`, so the law
sees no step. A tip reference (``tip_circle``, ``tip_waypoints``) needs IK to build:
anchoring one holds the measured pose and asks the `planner` (control/planner.py) for the
plan, which a later tick installs whole, blended in the same way; the joint references are
cheap and are built in the tick that anchors them.
"""

import time
from typing import List, Optional, Tuple

import numpy as np

from continuum_ctrl.control.planner import Planner
from continuum_ctrl.control.references import Hold, Waypoints
from continuum_ctrl.control.samplers import (anchored_entry, blend_data, blend_entry,
                                             reference_data)
from continuum_ctrl.control.task_space import TaskSpace
from continuum_ctrl.params import ConfigError

#: largest value of the bump x (1 - s(x)) over the blend (at x = 0.389), in blend times
BUMP_PEAK = 0.2845


class TrajectoryRejected(ValueError):
    """A run-time trajectory the loop refuses (the reference is kept); says why."""


class Anchored:
    """
    A reference started at `t0`, clamped to the limits, blended in from the state measured then.

    With ``r(t) = ref(t - t0)`` clipped to ``[low, high]`` (its velocity and acceleration zero
    where clipped), ``q0, qd0`` the measured `q_start`, `qd_start`, ``s`` the C3 `blend_ramp`
    from 0 to 1 over `blend_time` seconds and the bump ``b(t) = t (1 - s)`` (``b = 0``,
    ``b' = 1``, ``b'' = b''' = 0`` at the start; all zero at the end):

        q_d = q0 + b qd0 + s (r - q0)

    and its first two time derivatives. At ``t0`` the desired state is the measured one with
    zero acceleration (for an arm at rest: the measured pose at rest), so the law sees no step
    in position, velocity or acceleration error; after the blend it is ``r``. The bump carries
    the desired pose on by at most BUMP_PEAK ``blend_time qd0``; a joint it would carry outside
    its limits starts at rest instead (``qd0 = 0``): a PMA sagging below zero length is braked
    where it is, not followed further out, where it can only be pushed. The rest of the blend
    is a convex combination, so a start outside the limits moves smoothly inside rather than
    being clipped there in one tick. A reference whose `within` vouches for the limits is
    sampled without the clip. A reference with a compiled sampler (its `layout`) is sampled,
    clipped and blended in one compiled call (control.samplers.anchored_sample), any other
    (a task-space reference) by its own `sample`, then clipped and blended in one.
    """

    def __init__(self, reference, t0, q_start, qd_start, blend_time, low, high):
        self.reference = reference
        self.t0 = t0
        self.blend_time = blend_time
        self.q_start = np.array(q_start, dtype=float)
        self.low, self.high = low, high
        reach = self.q_start + BUMP_PEAK * blend_time * np.asarray(qd_start, dtype=float)
        self.qd_start = np.where((reach >= low) & (reach <= high), qd_start, 0.0)
        n = len(self.q_start)
        self._blend = blend_data(t0, blend_time, reference.within(low, high), low, high,
                                 self.q_start, self.qd_start)
        self._raw, self._out = np.zeros((3, n)), np.zeros((3, n))
        self._rows = tuple(self._out)
        layout = getattr(reference, 'layout', lambda: None)()
        self._layout = layout
        self._kernel = blend_entry() if layout is None else anchored_entry(type(layout))
        #: the lengths the arm was seen not to pass, which the loop feeds (a task-space
        #: reference's SeenReach, control/seen_reach.py; None: the reference learns none)
        self.seen = getattr(reference, 'seen', None)
        #: the data again as `ReferenceData`, for the fused tick (None: no compiled sampler);
        #: the Python path calls its type's own entry, which unboxes fewer arrays per tick
        self.sampler_data = None if layout is None else reference_data(layout)

    def sample_into(self, t, out):
        """Write ``q_d``, ``qd_d``, ``qdd_d`` at time `t` (s) into the rows of `out` (3, n)."""
        if self._layout is not None:
            self._kernel(self._layout, self._blend, float(t), self._raw, out)
            return
        for row, value in zip(out, self.sample(t)):
            row[:] = value

    def sample(self, t):
        """Return ``(q_d, qd_d, qdd_d)`` at time `t` (s, same clock as `t0`)."""
        if self._layout is not None:
            self._kernel(self._layout, self._blend, float(t), self._raw, self._out)
            return self._rows
        elapsed = max(t - self.t0, 0.0)
        if self._blend.free and elapsed >= self.blend_time:
            return self.reference.sample(elapsed)        # nothing to clip or blend
        for row, value in zip(self._raw, self.reference.sample(elapsed)):
            row[:] = value
        self._kernel(self._blend, elapsed, self._raw, self._out)
        return self._rows


class ReferenceManager:
    """
    What a loop follows, and how a new reference takes over (module doc).

    `loop`: the ControlLoop whose measured state (`q`, `qd`), joint limits (`low`, `high`),
    `settings` and `reference` it reads, and whose `reference` it sets; `events`: the list
    its transitions are logged to (the supervisor's). Public attributes: `planner`,
    `awaiting_plan` (a tip reference is being planned aside), `clamped_targets` (tip targets
    clamped to the reachable), `task` and `plan_task` (the loop's and the planner's
    TaskSpace; None without a task frame).
    """

    def __init__(self, loop, events: List[Tuple[str, str]],
                 planner: Optional[Planner] = None) -> None:
        self._loop = loop
        self._events = events
        self.planner = Planner() if planner is None else planner
        self.awaiting_plan = False
        self.clamped_targets = 0
        self.task: Optional[TaskSpace] = None
        self.plan_task: Optional[TaskSpace] = None

    def configure(self, settings, start: bool = False) -> None:
        """
        Keep the `TaskSpace` of `settings.task` (None without a task frame).

        `task` samples references on the loop's thread; `plan_task`, on the model's
        `for_thread` copy (`Planner.task_space`), is the planner's: it makes them (IK) and
        they sample on `task`. `start`: start the planner's IK process now (a new task
        space's, on the loop's thread, starts with its first plan, on the worker).
        """
        if self.task is None or self.task.settings != settings.task:
            self.task = (TaskSpace(self._loop.model, settings.task) if settings.task.frame
                         else None)
            self.plan_task = self.planner.task_space(self.task, start)

    def anchor(self, t: float) -> None:
        """
        Restart the configured reference at time `t` from the last measured state.

        A tip reference is planned aside (`planner`): the measured pose is held until a tick
        installs the plan.
        """
        loop = self._loop
        spec = loop.settings.reference
        if spec.needs_task_space:
            self._plan_aside(spec, t)
            return
        self.awaiting_plan = False
        loop.reference = Anchored(spec.build(loop.q), t, loop.q, loop.qd,
                                  spec.blend_time, loop.low, loop.high)

    def _plan_aside(self, spec, t):
        loop = self._loop
        q_start, task = loop.q.copy(), self.plan_task
        loop.reference = Anchored(Hold(q_start), t, loop.q, loop.qd, spec.blend_time,
                                  loop.low, loop.high)
        self.awaiting_plan = True
        self._events.append(('info', f'planning the {spec.kind} reference aside: holding the '
                                     'measured pose until it is made'))

        def job():
            start = time.perf_counter()
            reference = spec.build(q_start, task)
            return reference, (f'{spec.kind} reference planned in '
                               f'{time.perf_counter() - start:.3g} s: following it')
        self.planner.request(job, None, spec.blend_time, discard=True)

    def install(self, reference, t: float, blend_time: float = 0.0) -> None:
        """
        Replace the reference by `reference` (``sample(s)``, s from `t`), from the next tick.

        It must start at the measured pose (a `TaskReference` made at `q` does), or near it
        with a `blend_time` (s) to blend in from the measured state; a clamped tip target is
        counted (`clamped_targets`) and logged.
        """
        self._count_clamped(reference)
        self.awaiting_plan = False
        loop = self._loop
        loop.reference = Anchored(reference, t, loop.q, loop.qd, blend_time, loop.low,
                                  loop.high)

    def _count_clamped(self, reference):
        if getattr(reference, 'clamped', False):
            self.clamped_targets += 1
            self._events.append(('warn', f'tip target unreachable: clamped to the closest '
                                         f'reachable point, {reference.clamp_distance:.4g} m '
                                         'away'))

    def follow(self, times: np.ndarray, positions: np.ndarray,
               velocities: Optional[np.ndarray] = None,
               accelerations: Optional[np.ndarray] = None, t: float = 0.0) -> None:
        """
        Replace the reference by waypoints (model order; times in s after `t`, all > 0).

        `plan` then `install`, for a caller that owns the loop's thread; raises
        TrajectoryRejected (reference kept) as `plan` does.
        """
        self.install(self.plan(times, positions, velocities, accelerations), t)

    def plan(self, times: np.ndarray, positions: np.ndarray,
             velocities: Optional[np.ndarray] = None,
             accelerations: Optional[np.ndarray] = None) -> Waypoints:
        """
        Return the checked waypoint reference that `install` starts (the loop is unchanged).

        The last measured state is prepended at time 0 (a copy: another thread may plan while
        the loop ticks). Raises TrajectoryRejected for bad waypoints; a waypoint outside the
        joint limits is refused too, and so are waypoints whose interpolation overflows (huge
        values a few ns apart on unbounded joints).
        """
        loop = self._loop
        positions = np.asarray(positions, dtype=float)
        outside = (positions < loop.low) | (positions > loop.high)
        if np.any(outside):
            raise TrajectoryRejected('its positions lie outside the joint limits')
        with_start = [np.vstack((loop.q.copy(), positions))]
        if velocities is not None:
            with_start.append(np.vstack((loop.qd.copy(), velocities)))
            if accelerations is not None:
                with_start.append(np.vstack((np.zeros(loop.model.n), accelerations)))
        knots = np.concatenate(([0.0], times))
        checked = np.union1d(knots, (knots[1:] + knots[:-1]) / 2)
        try:
            with np.errstate(over='ignore', invalid='ignore'):    # rejected below, silently
                reference = Waypoints(knots, *with_start)
                finite = all(np.all(np.isfinite(part)) for s in checked
                             for part in reference.sample(s))
        except ConfigError as exc:
            raise TrajectoryRejected(str(exc)) from None
        except (ArithmeticError, ValueError) as exc:
            raise TrajectoryRejected(f'it cannot be interpolated: {exc}') from None
        if not finite:
            raise TrajectoryRejected('its interpolation is not finite')
        return reference

    def tip_target(self) -> Optional[np.ndarray]:
        """Return the tip position the reference heads for now, m (None: a joint reference)."""
        reference = getattr(self._loop.reference, 'reference', None)
        return getattr(reference, 'target', None)
