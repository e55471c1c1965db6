"""
The controller's cycle without ROS: watchdog, reference, computed torque, limits, command.

    loop = ControlLoop(model, settings, period)    # period: the tick period, s
    loop.set_state(q, qd, t, measured_at)   # a validated measurement (model order; qd None:
                                 # positions only), t: receive time, measured_at: when it
                                 # was measured (s)
    command = loop.tick(t)       # in `settings.joints` order: N, N m or Pa
    loop.cycle                   # what the tick produced (CycleView), for publishing
    loop.stop(t)                 # the safe command, once; ticks stay safe until `start`
    loop.install(loop.plan(times, positions), t)   # a trajectory: checked, then followed
    loop.planner.step()          # in process: make a pending plan (IK) between ticks

Until `resume_count` consecutive valid states have arrived, and whenever the last one is older
than `state_timeout`, `tick` returns the safe command: zero effort or `p_min` (vent), or for
``safe_mode: hold`` gravity plus elastic compensation at the last valid state. On every
(re)start the desired trajectory leaves the measured state (pose, velocity; zero
acceleration) and blends into the reference over `reference.blend_time` (`Anchored`), so the
law sees no step. A tip reference (``tip_circle``, ``tip_waypoints``) needs IK to build:
anchoring one holds the measured pose and asks `planner` (control/planner.py) for the plan,
which a later tick installs whole, blended in the same way; the joint references are cheap
and are built in the tick that anchors them. Efforts are clamped to `limits.effort` (and to
what the PMAs can push), rate-limited to `limits.effort_rate`, and a non-finite effort gives
the safe command. In
pressure mode, `output.time_constant` and `output.delay` compensate the valves' lag and dead
time (control/compensation.py); the limits apply to the compensated command.

A low-pass on measured velocities (`velocity_filter`) matters for PMA arms: their damping acts
on a few grams of generalized inertia, so cancelling ``D qd`` with a velocity measured a few
ms ago closes a loop of gain about one at high frequency, which chatters at 500 Hz. It is the
one filter a velocity passes: states without velocities bring the difference of their
positions over their stamps or receive times (control/differencing.py; the loop logs which,
and again when it changes), refused as a bad state beyond MAX_SPEED. With ``observer.type:
kalman`` the state fed back is instead a Kalman filter's (control/observer.py), corrected by
each sample inside the compensation's prediction; the low-pass then does not apply.
"""

import time
from typing import List, Optional, Sequence, Tuple

import numpy as np

from continuum_ctrl.actuation.maxwell_slip import MaxwellSlip
from continuum_ctrl.actuation.pressure_map import clamp_effort
from continuum_ctrl.numerics.clipping import effort_limiter
from continuum_ctrl.control.compensation import Compensation
from continuum_ctrl.control.computed_torque import ComputedTorqueLaw
from continuum_ctrl.control.differencing import MAX_SPEED, PositionDifference
from continuum_ctrl.control.fused_tick import DONE, FusedTick
from continuum_ctrl.control.integral import IntegralAction
from continuum_ctrl.control.observer import Observer
from continuum_ctrl.control.planner import Planner
from continuum_ctrl.control.references import Hold, Waypoints
from continuum_ctrl.control.rigid_tick import RigidTick
from continuum_ctrl.control.samplers import (anchored_entry, blend_data, blend_entry,
                                             reference_data, warm_samplers)
from continuum_ctrl.control.settings import ControllerSettings
from continuum_ctrl.control.task_space import TaskSpace
from continuum_ctrl.models.base import DynamicsModel
from continuum_ctrl.params import ConfigError

#: largest value of the bump x (1 - s(x)) over the blend (at x = 0.389), in blend times
BUMP_PEAK = 0.2845
#: loop status: no valid state yet, controlling, safe command after a state timeout, or
#: stopped (safe command until `start`); `LOOP_STATUSES`: all four
LOOP_STATUSES = WAITING, ACTIVE, STALE, STOPPED = 'waiting', 'active', 'stale', 'stopped'


#: the rows of `ControlLoop.cycle_record`: the cycle's arrays (model order, n each)
CYCLE_PARTS = ('q_des', 'qd_des', 'qdd_des', 'q', 'qd', 'effort', 'integral')
#: what `take_events` returns when nothing happened (no allocation per tick)
NO_EVENTS: Sequence[Tuple[str, str]] = ()


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


class ControlLoop:
    """
    One controller: state in, command out; arrays in model order unless said otherwise.

    After each `tick`: `q`, `qd` (last valid state), `q_des`, `qd_des` (reference, clamped to
    the joint limits), `effort` (generalized force sent, or implied by the safe command) and
    `command` (joints order) describe the cycle, read through `cycle`; `events` collects
    transitions to log once (`take_events`). `period` is the tick period, s (the rate limit
    per tick). Where `fused` covers the loop, an active tick is one compiled call
    (control.fused_tick, a CoG arm) or a compiled call around one `rnea` (control.rigid_tick,
    a Pinocchio arm); ``fused=False`` keeps the Python tick (the tests' oracle).
    """

    def __init__(self, model: DynamicsModel, settings: ControllerSettings,
                 period: float, planner: Optional[Planner] = None, fused: bool = True) -> None:
        self.model = model
        self.planner = Planner() if planner is None else planner
        self.awaiting_plan = False
        self.period = period
        n = model.n
        #: the cycle's arrays, CYCLE_PARTS in order, as rows of one block (one copy records it)
        self.cycle_record = np.zeros((len(CYCLE_PARTS), n))
        self._desired = self.cycle_record[:3]
        self.q_des, self.qd_des, self.qdd_des, self.q, self.qd, self.effort = \
            self.cycle_record[:6]
        self.integral = IntegralAction(n, self.cycle_record[6])
        self.law = ComputedTorqueLaw(model, settings.kp, settings.kd, settings.passive,
                                     self.integral)
        self.low, self.high = (np.asarray(b, dtype=float) for b in model.joint_limits())
        self.status = WAITING
        self.reference: Optional[Anchored] = None
        self.last_state_time = -np.inf
        self.measured_at = -np.inf
        self._limits(settings)
        self.valid_streak = 0
        self.nonfinite = 0
        self.difference = PositionDifference(n)
        self._source: Optional[str] = None      # what the difference used, as last logged
        self.too_fast = 0
        self._refusing = False
        self.events: List[Tuple[str, str]] = []
        self.command = np.zeros(n)
        self._nan = np.full(n, np.nan)
        self._limit_effort = effort_limiter()       # compiled now, not in the first tick
        warm_samplers()                             # likewise, before the first anchor
        self._failing = False
        self._sent_time: Optional[float] = None
        self._pressures = np.zeros(n)
        self._pressure_out = np.zeros(n)
        self._area = np.zeros(n)
        self.task: Optional[TaskSpace] = None
        self.plan_task: Optional[TaskSpace] = None
        self.clamped_targets = 0
        self._task_space(settings, start=True)
        self._fuse = fused
        self.fused = self._fused_tick()
        self.safe_command()
        self.cycle = CycleView(self)

    def configure(self, settings: ControllerSettings, reanchor: bool = False,
                  period: Optional[float] = None) -> None:
        """Take new validated settings (gains, limits, reference, ...) from the next tick on."""
        self.period = self.period if period is None else period
        self.law.set_gains(settings.kp, settings.kd)
        self.law.passive = settings.passive
        self._limits(settings)
        self._task_space(settings)
        self.fused = self._fused_tick()
        if reanchor and self.status == ACTIVE:
            self.anchor(self.last_state_time)

    def _friction(self, friction):
        """Give the law the friction feed-forward's bank (its sliders kept where they were)."""
        old = self.law.friction
        if friction is None:
            self.law.friction = None
            return
        bank = MaxwellSlip(friction[0][:, None], friction[1][:, None])
        if old is not None:
            bank.slip[:] = old.slip
        else:
            bank.reset(self.q)
        self.law.friction = bank

    def _fused_tick(self):
        """Return the compiled tick that covers this loop (CoG or Pinocchio arm), or None."""
        if not self._fuse:
            return None
        return FusedTick.of(self) or RigidTick.of(self)

    def _limits(self, settings):
        """Take `settings`; precompute the effort range and the largest change per tick."""
        self.settings = settings
        limit = settings.effort_limit
        bounds = (settings.actuation.effort_range(limit)
                  if settings.actuation is not None else (-limit, limit))
        low, high, self._step = (np.array(np.broadcast_to(v, (self.model.n,)), dtype=float)
                                 for v in (*bounds, settings.effort_rate * self.period))
        self._effort_range = (low, high)
        self.integral.configure(settings.ki, settings.integral_limit)
        self._friction(settings.friction)
        old: Optional[Compensation] = getattr(self, 'compensation', None)   # keeps its estimate
        time_constant, delay = settings.compensation
        if not (time_constant or delay):
            self.compensation = None
        elif old is None or (old.time_constant, old.delay, old.period) != (
                time_constant, delay, self.period):
            self.compensation = Compensation(self.model, self.law, settings.actuation,
                                             time_constant, delay, self.period)
        else:
            old.actuation = settings.actuation
        self._observer(settings)

    def _observer(self, settings):
        """
        Keep the `observer` of `settings` (None: the measured state).

        Its gain is solved at the middle of the joint limits (0 where unbounded): the
        reference's centre gave the same figures to 0.001 mm on the MuJoCo arm, and a
        reference changed at run time then costs the loop thread no new solution (2-20 ms).
        """
        old: Optional[Observer] = getattr(self, 'observer', None)
        self.observer = None
        if settings.observer.kind == 'none':
            return
        if old is not None and old.settings == settings.observer and old.period == self.period:
            self.observer = old                 # keeps its estimate
            return
        middle = 0.5 * (self.low + self.high)
        self.observer = Observer(self.model, settings.observer, self.period,
                                 np.where(np.isfinite(middle), middle, 0.0))
        if self.status == ACTIVE:
            self.observer.start(self.q, self.qd, self.measured_at)

    def _task_space(self, settings, start=False):
        """
        Keep the `TaskSpace` of `settings.task` (None without a task frame).

        `task` samples references on the loop's thread; `plan_task`, on the model's
        `for_thread` copy (`Planner.task_space`), is the planner's: it makes them (IK) and
        they sample on `task`. `start`: start the planner's IK process now (a new task
        space's, on the loop's thread, starts with its first plan, on the worker).
        """
        if self.task is None or self.task.settings != settings.task:
            self.task = TaskSpace(self.model, settings.task) if settings.task.frame else None
            self.plan_task = self.planner.task_space(self.task, start)

    def anchor(self, t: float) -> None:
        """
        Restart the configured reference at time `t` from the last measured state.

        A tip reference is planned aside (`planner`): the measured pose is held until a tick
        installs the plan.
        """
        spec = self.settings.reference
        if spec.needs_task_space:
            self._plan_aside(spec, t)
            return
        self.awaiting_plan = False
        self.reference = Anchored(spec.build(self.q), t, self.q, self.qd,
                                  spec.blend_time, self.low, self.high)

    def _plan_aside(self, spec, t):
        q_start, task = self.q.copy(), self.plan_task
        self.reference = Anchored(Hold(q_start), t, self.q, self.qd, spec.blend_time,
                                  self.low, self.high)
        self.awaiting_plan = True
        self.events.append(('info', f'planning the {spec.kind} reference aside: holding the '
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
        self.reference = Anchored(reference, t, self.q, self.qd, blend_time, self.low,
                                  self.high)

    def _count_clamped(self, reference):
        if getattr(reference, 'clamped', False):
            self.clamped_targets += 1
            self.events.append(('warn', f'tip target unreachable: clamped to the closest '
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
        positions = np.asarray(positions, dtype=float)
        outside = (positions < self.low) | (positions > self.high)
        if np.any(outside):
            raise TrajectoryRejected('its positions lie outside the joint limits')
        with_start = [np.vstack((self.q.copy(), positions))]
        if velocities is not None:
            with_start.append(np.vstack((self.qd.copy(), velocities)))
            if accelerations is not None:
                with_start.append(np.vstack((np.zeros(self.model.n), accelerations)))
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

    def set_state(self, q: np.ndarray, qd: Optional[np.ndarray], t: float,
                  measured_at: Optional[float] = None) -> None:
        """
        Take a validated measurement at receive time `t` (s); may (re)start control.

        `measured_at` (s, same clock, at most `t`; None: `t`, no stamp): when the state held,
        for instance its header stamp. The valve compensation predicts from then, so the time
        the message spent in transport and in the executor's queue is predicted over too.
        `qd` None (positions only): the difference of the positions stands for it
        (`difference`); one beyond MAX_SPEED refuses the state, counted in `too_fast`, as
        `reject_state`. With `velocity_filter` > 0 the velocity passes a first-order low-pass
        while active. The streak of valid states needed to resume restarts after a gap longer
        than `state_timeout`: the states must be consecutive and fresh. A state without
        velocities that (re)starts control is taken at rest.
        """
        velocity_measured = qd is not None
        if qd is None:
            qd = self._differenced(q, t, measured_at)
            if qd is None:
                return
        self.q[:] = q
        dt, filter_time = t - self.last_state_time, self.settings.velocity_filter
        if dt > self.settings.state_timeout:
            self.valid_streak = 0
        observer = self.observer
        if self.status == ACTIVE and filter_time > 0.0 and dt > 0.0 and observer is None:
            self.qd += dt / (dt + filter_time) * (qd - self.qd)
        else:
            self.qd[:] = qd
        self.last_state_time = t
        self.measured_at = t if measured_at is None else min(measured_at, t)
        self.valid_streak += 1
        if observer is not None and self.status == ACTIVE:
            observer.measure(self.q, self.qd, self.measured_at)
        if self.status in (WAITING, STALE) and self.valid_streak >= self.settings.resume_count:
            self.events.append(('info', 'valid joint states: control active, reference '
                                        'anchored at the measured pose'))
            self.status = ACTIVE
            self.integral.reset()
            if self.law.friction is not None:
                self.law.friction.reset(self.q)     # the reference starts here
            if not velocity_measured:
                # the difference of two noisy samples is no velocity to start from: 20 um
                # of noise over 2 ms is 14 mm/s, which the blend's bump carries on by 4 mm
                # (BUMP_PEAK blend_time qd); a state without velocities starts at rest
                self.qd[:] = 0.0
            if observer is not None:
                observer.start(self.q, self.qd, self.measured_at)
            self.anchor(t)

    def _differenced(self, q, t, measured_at):
        """Return the velocity of positions `q` (None: too fast, refused); log its source."""
        qd = self.difference(q, t, 0.0 if measured_at is None else measured_at)
        refusing, self._refusing = self._refusing, qd is None
        if qd is None:
            self.too_fast += 1
            self.reject_state()
            if not refusing:                # once per run of refused states
                self.events.append(('warn', f'velocity estimated from positions beyond '
                                            f'{MAX_SPEED:g}: states refused ({self.too_fast} '
                                            'so far)'))
            return None
        source = self.difference.source
        if source is not None and source != self._source:
            self._source = source
            then = (f'low-passed by velocity_filter ({self.settings.velocity_filter:g} s)'
                    if self.observer is None else 'the Kalman observer estimates the state')
            self.events.append(('info', f'joint states without velocities: positions '
                                        f'differenced over their {source}; {then}'))
        return qd

    def set_pressures(self, pressures: np.ndarray, t: float) -> None:
        """
        Take measured PMA pressures (joints order, Pa) at receive time `t` (s).

        The compensation's valve model takes them as its estimate and runs on from them;
        without new ones it runs on alone from the commands sent. Raises ValueError saying
        why for a vector of the wrong length, non-finite values or pressures outside
        ``[p_min, p_max]`` widened by its span (the estimate is then kept).
        """
        actuation = self.settings.actuation
        if actuation is None:
            raise ValueError('the output is not pressure')
        if len(pressures) != self.model.n:
            raise ValueError(f'expected {self.model.n} pressures, got {len(pressures)}')
        self._pressures[self.settings.order] = pressures
        span = actuation.p_max - actuation.p_min
        if not np.all(np.isfinite(self._pressures)):
            raise ValueError('non-finite pressures')
        if np.any(np.abs(self._pressures - 0.5 * (actuation.p_max + actuation.p_min))
                  > 1.5 * span):
            raise ValueError('pressures outside [p_min, p_max] widened by its span')
        if self.compensation is not None:
            self.compensation.measured(self._pressures, t)

    def reject_state(self) -> None:
        """Count a rejected measurement against the streak needed to resume."""
        self.valid_streak = 0

    def start(self) -> None:
        """(Re)start after `stop`: wait for `resume_count` valid states, then control."""
        self.status = WAITING
        self.valid_streak = 0
        self.last_state_time = -np.inf

    def stop(self, t: float) -> np.ndarray:
        """Stop: return the safe command (joints order); `tick` gives it until `start`."""
        self.status = STOPPED
        return self.tick(t)

    def take_events(self) -> Sequence[Tuple[str, str]]:
        """Return the ``(level, text)`` transitions since the last call, and forget them."""
        if not self.events:
            return NO_EVENTS
        events, self.events = self.events, []
        return events

    def warm_up(self) -> None:
        """
        Evaluate the control law once, at rest inside the joint limits.

        The first model evaluation in a process loads the compiled kernels (~0.4 s for the
        continuum models); paid in the first active tick, it would stall control while the
        reference blends in.
        """
        q = np.clip(np.zeros(self.model.n), self.low, self.high)
        rest = np.zeros(self.model.n)
        self.law(q, rest, q, rest, rest)

    def tick(self, t: float) -> np.ndarray:
        """Return the command for time `t` (s) in joints order (an internal buffer)."""
        sent, self._sent_time = self._sent_time, t
        if self.status == ACTIVE and t - self.last_state_time > self.settings.state_timeout:
            self.status = STALE
            self.valid_streak = 0
            self.events.append(('warn', f'no valid joint states for more than '
                                        f'{self.settings.state_timeout} s: safe command '
                                        f"('{self.settings.safe_mode}')"))
        if self.status != ACTIVE:
            self._feed_valves(sent)
            return self.safe_command()
        planner = self.planner
        planner.slot.take(self, t)
        if planner.notes:
            while planner.notes:
                self.events.append(planner.notes.popleft())
        fused = self.fused
        if fused is not None and fused.covers(self.reference):
            try:
                if fused(t, sent) == DONE:
                    self._failing = False
                    return self.command
                problem = 'a non-finite effort'
            except Exception as exc:  # noqa: B902 - any failure must end in the safe command
                problem = f'{type(exc).__name__}: {exc}'
            return self._fail(problem)
        self._feed_valves(sent)
        self.reference.sample_into(t, self._desired)  # type: ignore[union-attr]
        problem = 'a non-finite effort'
        area = None
        try:
            observer = self.observer
            area = self._area_at(self.q if observer is None else observer.x[0])
            if self.compensation is None:
                tau = self.law(self.q, self.qd, self.q_des, self.qd_des, self.qdd_des)
            elif observer is None:
                tau = self.compensation.effort(self.q, self.qd, self.measured_at,
                                               self.reference, t, self._effort_range,
                                               area=area)
            else:
                x = observer.x
                tau = self.compensation.effort(x[0], x[1], observer.times[0], self.reference,
                                               t, self._effort_range, observer, area)
                self.q[:], self.qd[:] = x[0], x[1]      # the corrected estimate is fed back
        except Exception as exc:  # noqa: B902 - any failure must end in the safe command
            tau, problem = self._nan, f'{type(exc).__name__}: {exc}'
        low, high = self._effort_range
        if not self._limit_effort(tau, low, high, self._step, self.effort):
            if np.shape(tau) != self.effort.shape:
                problem = f'{np.size(tau)} forces for {self.model.n} coordinates'
            return self._fail(problem)
        self._failing = False
        if self.integral.engaged:
            self._integrate(low, high)
        return self._output(area)

    def _area_at(self, q):
        """
        Return the PMAs' effective area (m^2) at the tick's starting state `q`, or None.

        None where the area is constant (or the output is effort). The state the tick starts
        from (measured, or the observer's estimate before the tick's correction), not the
        predicted one: the prediction's forces need the area before they make that state, and
        over the 15 ms between the two the area changes by ``c dq / l_max``, a few 1e-5.
        """
        actuation = self.settings.actuation
        if actuation is None or actuation.slope is None:
            return None
        return actuation.area_at(q, out=self._area)

    def _feed_valves(self, sent):
        """Feed the compensation's valve model the last command, sent at `sent` (s, or None)."""
        if self.compensation is not None and sent is not None:
            self._pressures[self.settings.order] = self.command
            self.compensation.sent(self._pressures, sent)

    def _fail(self, problem):
        """Count a tick whose law failed (`problem` says how), log it once: the safe command."""
        self.nonfinite += 1
        if not self._failing:
            self.events.append(('error', f'the control law gave {problem}: safe command'))
        self._failing = True
        return self.safe_command()

    def _integrate(self, low, high):
        """Integrate the tick's error (control.integral), from activation on."""
        self.integral.update(self.q, self.q_des, self.period, self.effort, low, high,
                             self.low, self.high)

    def safe_command(self) -> np.ndarray:
        """
        Return the safe command (joints order, an internal buffer); the status is unchanged.

        What `tick` sends while not active; a node also sends it while its loop is starved.
        """
        settings = self.settings
        if settings.safe_mode == 'hold' and self.status != WAITING:
            hold = (self.model.gravity_vector(self.q)
                    + self.model.passive_forces(self.q, np.zeros(self.model.n)))
            self.effort[:] = clamp_effort(hold, settings.effort_limit)
            if not np.all(np.isfinite(self.effort)):
                self.effort[:] = 0.0
        else:
            self.effort[:] = 0.0
        if settings.actuation is not None:
            self.command[:] = settings.actuation.p_min[settings.order]
            self.effort[:] = settings.actuation.force(settings.actuation.p_min)
            return self.command
        return self._output()

    def _output(self, area=None):
        settings = self.settings
        output = self.effort
        if settings.actuation is not None:
            output = settings.actuation.pressure(self.effort, out=self._pressure_out, area=area)
        return output.take(settings.order, out=self.command)


class CycleView:
    """
    What the last tick produced, for the node to publish: read-only, no copies.

    `status` (WAITING, ACTIVE, STALE, STOPPED); `q`, `qd` (last valid state), `q_des`,
    `qd_des`, `qdd_des` (reference, clamped to the joint limits) and `effort` (generalized
    force sent or implied by the safe command) and `integral` (the law's integral force, N or
    N m), all in model order; `command` in joints order
    (N, N m or Pa); `order` (model index of each command entry); `nonfinite` (ticks whose law
    gave a non-finite effort). The arrays are the loop's buffers, overwritten by each tick.
    """

    __slots__ = ('_loop',)

    def __init__(self, loop: ControlLoop) -> None:
        self._loop = loop

    status = property(lambda self: self._loop.status)
    q = property(lambda self: self._loop.q)
    qd = property(lambda self: self._loop.qd)
    q_des = property(lambda self: self._loop.q_des)
    qd_des = property(lambda self: self._loop.qd_des)
    qdd_des = property(lambda self: self._loop.qdd_des)
    effort = property(lambda self: self._loop.effort)
    integral = property(lambda self: self._loop.integral.force)
    command = property(lambda self: self._loop.command)
    order = property(lambda self: self._loop.settings.order)
    nonfinite = property(lambda self: self._loop.nonfinite)
