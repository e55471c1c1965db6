"""
The controller's cycle without ROS: watchdog, reference, computed torque, limits, command.

    loop = ControlLoop(model, settings, period)    # period: the tick period, s
    loop.set_state(q, qd, t, measured_at)   # a validated measurement (model order; qd None:
                                 # positions only), t: receive time, measured_at: when it
                                 # was measured (s)
    command = loop.tick(t)       # in `settings.joints` order: N, N m or Pa
    loop.cycle                   # what the tick produced (CycleView), for publishing
    loop.stop(t)                 # the safe command, once; ticks stay safe until `start`
    loop.references.install(loop.references.plan(times, positions), t)   # a trajectory
    loop.references.planner.step()   # in process: make a pending plan (IK) between ticks

The loop has two parts with their own interfaces: its `supervisor` (control/supervisor.py:
the status, the state watchdog, the safe command and the failure path) and its `references`
(control/reference_manager.py: anchoring, planning aside, installing and checking
waypoints). The loop itself holds the state, the law, the limits, the compensation and the
observer, and the buffers the compiled ticks (control/fused_tick.py, control/rigid_tick.py)
read and write.

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

from typing import Optional, Sequence, Tuple

import numpy as np

from continuum_ctrl.actuation.maxwell_slip import MaxwellSlip
from continuum_ctrl.numerics.clipping import effort_limiter
from continuum_ctrl.control.compensation import Compensation
from continuum_ctrl.control.computed_torque import ComputedTorqueLaw
from continuum_ctrl.control.differencing import MAX_SPEED, PositionDifference
from continuum_ctrl.control.fused_tick import DONE, FusedTick
from continuum_ctrl.control.ilc import IterativeLearning
from continuum_ctrl.control.integral import IntegralAction
from continuum_ctrl.control.observer import Observer
from continuum_ctrl.control.payload_estimate import PayloadEstimate
from continuum_ctrl.control.planner import Planner
from continuum_ctrl.control.reference_manager import (  # noqa: F401 - the loop's names
    Anchored, BUMP_PEAK, ReferenceManager, TrajectoryRejected)
from continuum_ctrl.control.rigid_tick import RigidTick
from continuum_ctrl.control.saturation import SaturationGuard
from continuum_ctrl.control.samplers import warm_samplers
from continuum_ctrl.control.settings import ControllerSettings
from continuum_ctrl.control.state_age import carry_entry, state_age
from continuum_ctrl.control.supervisor import (  # noqa: F401 - the loop's names
    ACTIVE, LOOP_STATUSES, NO_EVENTS, STALE, STOPPED, Supervisor, WAITING)
from continuum_ctrl.models.base import DynamicsModel

#: the rows of `ControlLoop.cycle_record`: the cycle's arrays (model order, n each)
CYCLE_PARTS = ('q_des', 'qd_des', 'qdd_des', 'q', 'qd', 'effort', 'integral')


def _part(part, name, writable=True):
    """Return a property for the attribute `name` of the loop's `part`."""
    def get(loop):
        return getattr(getattr(loop, part), name)

    def put(loop, value):
        setattr(getattr(loop, part), name, value)
    return property(get, put if writable else None, doc=f'`{part}.{name}`')


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
        #: status, watchdog, safe command and failures
        self.supervisor = supervisor = Supervisor(self)
        #: what the loop follows: the `reference` it sets, anchoring, planning, installing
        self.references = ReferenceManager(self, supervisor.events, planner)
        self._planner = self.references.planner     # the tick's, read without the lookups
        #: the feed-forward learnt from repetition (control/ilc.py), told of each reference
        self.ilc = IterativeLearning(model, period, supervisor.events, self._planner.threaded)
        self.law.repetition = self.ilc
        self.reference: Optional[Anchored] = None
        self.measured_at = -np.inf
        #: the measured state carried to the tick (control/state_age.py), what a tick without
        #: valves acts on
        self.q_now, self.qd_now = np.zeros((2, n))
        self._carry = carry_entry()
        #: the integral's and the observer's learning held through saturation
        self.saturation = SaturationGuard(self)
        self._limits(settings)
        self.difference = PositionDifference(n)
        self._source: Optional[str] = None      # what the difference used, as last logged
        self.too_fast = 0
        self._refusing = False
        self.command = np.zeros(n)
        self._nan = np.full(n, np.nan)
        self._limit_effort = effort_limiter()       # compiled now, not in the first tick
        warm_samplers()                             # likewise, before the first anchor
        self._sent_time: Optional[float] = None
        self._pressures = np.zeros(n)
        self._pressure_out = np.zeros(n)
        self._area = np.zeros(n)
        self.references.configure(settings, start=True)
        self._fuse = fused
        self.fused = self._fused_tick()
        supervisor.safe_command()
        self.cycle = CycleView(self)

    def configure(self, settings: ControllerSettings, reanchor: bool = False,
                  period: Optional[float] = None) -> None:
        """Take new validated settings (gains, limits, reference, ...) from the next tick on."""
        self.period = self.period if period is None else period
        self.law.set_gains(settings.kp, settings.kd)
        self.law.passive = settings.passive
        self._limits(settings)
        self.references.configure(settings)
        self.fused = self._fused_tick()
        if reanchor and self.supervisor.status == ACTIVE:
            self.references.anchor(self.supervisor.last_state_time)

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
        self.saturation.configure(*settings.saturation)
        limit = settings.effort_limit
        bounds = (settings.actuation.effort_range(limit)
                  if settings.actuation is not None else (-limit, limit))
        low, high, self._step = (np.array(np.broadcast_to(v, (self.model.n,)), dtype=float)
                                 for v in (*bounds, settings.effort_rate * self.period))
        self._effort_range = (low, high)
        self.integral.configure(settings.integral_gain, settings.integral_limit,
                                None if settings.ki_inertial is None else self.model)
        self.integral.learn(*settings.learn)
        self._payload(settings.adapt)
        ilc = settings.ilc
        lag, delay = settings.compensation
        self.ilc.configure(ilc, settings.kp, settings.kd, settings.integral_gain,
                           settings.integral_limit if ilc.limit is None else ilc.limit,
                           lag, delay, inertial=settings.ki_inertial is not None)
        self._friction(settings.friction)
        self._compensation(settings)
        self._observer(settings)

    def _payload(self, adapt):
        """Keep the payload estimate of `adapt` (frame, s); one of the same keeps its state."""
        old = self.integral.payload
        if old is None or adapt != (old.frame, old.time_constant):
            self.integral.payload = None if adapt is None else PayloadEstimate(self.model,
                                                                               *adapt)

    def _compensation(self, settings):
        """Keep the valve `compensation` of `settings` (None: none); one kept keeps its state."""
        old: Optional[Compensation] = getattr(self, 'compensation', None)
        time_constant, delay = settings.compensation
        if not (time_constant or delay):
            self.compensation = None
        elif old is None or (old.time_constant, old.delay, old.period) != (
                time_constant, delay, self.period):
            self.compensation = Compensation(self.model, self.law, settings.actuation,
                                             time_constant, delay, self.period)
        else:
            old.actuation = settings.actuation

    def _observer(self, settings):
        """
        Keep the `observer` of `settings` (None: the measured state).

        Its gain is solved at the middle of the joint limits (`Observer.at_middle`).
        """
        old: Optional[Observer] = getattr(self, 'observer', None)
        self.observer = None
        if settings.observer.kind == 'none':
            return
        if old is not None and old.settings == settings.observer and old.period == self.period:
            self.observer = old                 # keeps its estimate
            return
        self.observer = Observer.at_middle(self.model, settings.observer, self.period)
        if self.supervisor.status == ACTIVE:
            self.observer.start(self.q, self.qd, self.measured_at)

    def set_state(self, q: np.ndarray, qd: Optional[np.ndarray], t: float,
                  measured_at: Optional[float] = None) -> None:
        """
        Take a validated measurement at receive time `t` (s); may (re)start control.

        `measured_at` (s, same clock, at most `t`; None: `t`, no stamp): when the state held,
        for instance its header stamp. The valve compensation predicts from then, and a tick
        without valves carries the state from then (`carry`), so the time the message spent in
        transport and in the executor's queue is predicted over too.
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
        supervisor = self.supervisor
        dt, filter_time = supervisor.receive(t), self.settings.velocity_filter
        observer = self.observer
        active = supervisor.status == ACTIVE
        if active and filter_time > 0.0 and dt > 0.0 and observer is None:
            self.qd += dt / (dt + filter_time) * (qd - self.qd)
        else:
            self.qd[:] = qd
        self.measured_at = t if measured_at is None else min(measured_at, t)
        if observer is not None and active:
            observer.measure(self.q, self.qd, self.measured_at)
        if not active and supervisor.resume():
            self._activate(velocity_measured, t)

    def _activate(self, velocity_measured, t):
        """Start control at the state received at `t` (s): the law's memories, the reference."""
        self.integral.reset()
        if self.law.friction is not None:
            self.law.friction.reset(self.q)     # the reference starts here
        if not velocity_measured:
            # the difference of two noisy samples is no velocity to start from: 20 um
            # of noise over 2 ms is 14 mm/s, which the blend's bump carries on by 4 mm
            # (BUMP_PEAK blend_time qd); a state without velocities starts at rest
            self.qd[:] = 0.0
        if self.observer is not None:
            self.observer.start(self.q, self.qd, self.measured_at)
        self.references.anchor(t)

    def _differenced(self, q, t, measured_at):
        """Return the velocity of positions `q` (None: too fast, refused); log its source."""
        qd = self.difference(q, t, 0.0 if measured_at is None else measured_at)
        refusing, self._refusing = self._refusing, qd is None
        if qd is None:
            self.too_fast += 1
            self.supervisor.reject()
            if not refusing:                # once per run of refused states
                self.supervisor.events.append(
                    ('warn', f'velocity estimated from positions beyond {MAX_SPEED:g}: states '
                             f'refused ({self.too_fast} so far)'))
            return None
        source = self.difference.source
        if source is not None and source != self._source:
            self._source = source
            then = (f'low-passed by velocity_filter ({self.settings.velocity_filter:g} s)'
                    if self.observer is None else 'the Kalman observer estimates the state')
            self.supervisor.events.append(('info', f'joint states without velocities: '
                                                   f'positions differenced over their '
                                                   f'{source}; {then}'))
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
        self.supervisor.reject()

    def start(self) -> None:
        """(Re)start after `stop`: wait for `resume_count` valid states, then control."""
        self.supervisor.start()

    def stop(self, t: float) -> np.ndarray:
        """Stop: return the safe command (joints order); `tick` gives it until `start`."""
        self.supervisor.stop()
        return self.tick(t)

    def take_events(self) -> Sequence[Tuple[str, str]]:
        """Return the ``(level, text)`` transitions since the last call, and forget them."""
        return self.supervisor.take_events()

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
        supervisor = self.supervisor
        # the watchdog's test, spelled out for the active tick (a call costs 0.1 us a tick)
        if (supervisor.status != ACTIVE or t - supervisor.last_state_time
                > self.settings.state_timeout) and not supervisor.watch(t):
            self._feed_valves(sent)
            return supervisor.safe_command()
        planner = self._planner
        planner.slot.take(self.references, t)
        if planner.notes:
            while planner.notes:
                supervisor.events.append(planner.notes.popleft())
        fused = self.fused
        if fused is not None and fused.covers(self.reference):
            try:
                if fused(t, sent) == DONE:
                    supervisor.failing = False
                    self._learners_after(t)
                    return self.command
                problem = 'a non-finite effort'
            except Exception as exc:  # noqa: B902 - any failure must end in the safe command
                problem = f'{type(exc).__name__}: {exc}'
            return supervisor.fail(problem)
        self._feed_valves(sent)
        self.reference.sample_into(t, self._desired)  # type: ignore[union-attr]
        self.ilc.now = t
        problem = 'a non-finite effort'
        area = None
        try:
            observer = self.observer
            area = self._area_at(self.q if observer is None else observer.x[0])
            if self.compensation is None:
                self.carry(t)
                tau = self.law(self.q_now, self.qd_now, self.q_des, self.qd_des, self.qdd_des)
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
            return supervisor.fail(problem)
        supervisor.failing = False
        if self.integral.engaged:
            self._integrate(low, high)
        seen = self.reference.seen  # type: ignore[union-attr]
        if seen is not None:
            self._watch_reach(seen, t, low, high)
        if self.ilc.acting:
            self.ilc.record(t, self.measured_at, self.sample, self.q_des, self.qd_des)
        self._learners_after(t)
        return self.output(area)

    def _learners_after(self, t):
        """Run the learners' bookkeeping after the tick at `t` (s)."""
        self.saturation.watch(t)
        self.ilc.fade(t, self.saturation.until)
        feeding = self.ilc.feeding
        if feeding != self.integral.frozen:
            self.integral.frozen = feeding

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

    def carry(self, t):
        """Carry the measured state to the tick at `t` (s) into `q_now`, `qd_now` (state_age)."""
        self._carry(state_age(t, self.measured_at), self.q, self.qd, self.qdd_des, self.q_now,
                    self.qd_now)

    def _integrate(self, low, high):
        """Integrate the tick's error (control.integral), from activation on."""
        q = self.q if self.compensation is not None else self.q_now
        self.integral.update(q, self.q_des, self.period, self.effort, low, high,
                             self.low, self.high)

    def _watch_reach(self, seen, t, low, high):
        """
        Feed the task reference's `seen` the tick; log the joints it first bounds.

        Errors beyond the saturation guard's, and any through its episodes, are a push's,
        which bounds nothing (control/seen_reach.py).
        """
        q = self.q if self.compensation is not None else self.q_now
        if seen.watch(t, self.period, q, self.q_des, self.effort, low, high,
                      self.saturation.calm_error(t)):
            scale, unit = (1e3, ' mm') if self.settings.actuation is not None else (1.0, '')
            bounds = ', '.join(
                f'{name} {side} {value * scale:.4g}{unit}'
                for k, name in enumerate(self.model.joint_names)
                for side, value in (('above', seen.seen[0, k]), ('below', seen.seen[1, k]))
                if np.isfinite(value))
            self.supervisor.events.append((
                'warn', f'task space: a joint\'s effort sat at its bound with the arm short of '
                        f'its reference: the reference now keeps {bounds}, the other joints '
                        f'reach the tip'))

    def safe_command(self) -> np.ndarray:
        """
        Return the safe command (joints order, an internal buffer); the status is unchanged.

        What `tick` sends while not active; a node also sends it while its loop is starved.
        """
        return self.supervisor.safe_command()

    def output(self, area=None) -> np.ndarray:
        """Write the command (joints order) of the tick's `effort`: itself, or PMA pressures."""
        settings = self.settings
        output = self.effort
        if settings.actuation is not None:
            output = settings.actuation.pressure(self.effort, out=self._pressure_out, area=area)
        return output.take(settings.order, out=self.command)

    @property
    def sample(self) -> np.ndarray:
        """
        Return the positions last measured (m or rad): `q`, or the observer's sample.

        What the learning from repetition records: the observer's estimate lags the sample
        at 1 Hz (the fused tick reads the same array).
        """
        return self.q if self.observer is None else self.observer.y

    @property
    def reference(self) -> Optional[Anchored]:
        """Return what the loop follows (an `Anchored`; None before the first activation)."""
        return self._reference

    @reference.setter
    def reference(self, anchored: Optional[Anchored]) -> None:
        """Follow `anchored` from the next tick; the learning (`ilc`) is told."""
        self._reference = anchored
        if anchored is not None:
            self.ilc.follow(anchored)

    # -- the parts' state under the loop's names (tests, tools) ---------------------------

    def anchor(self, t: float) -> None:
        """Restart the configured reference at `t` (s) from the measured state (`references`)."""
        self.references.anchor(t)

    def install(self, reference, t: float, blend_time: float = 0.0) -> None:
        """Follow `reference` from the next tick (`ReferenceManager.install`)."""
        self.references.install(reference, t, blend_time)

    def plan(self, times, positions, velocities=None, accelerations=None):
        """Return checked waypoints for `install` (`ReferenceManager.plan`)."""
        return self.references.plan(times, positions, velocities, accelerations)

    def follow(self, times, positions, velocities=None, accelerations=None, t=0.0) -> None:
        """Follow waypoints from the next tick (`ReferenceManager.follow`)."""
        self.references.follow(times, positions, velocities, accelerations, t)

    status = _part('supervisor', 'status')
    valid_streak = _part('supervisor', 'valid_streak')
    last_state_time = _part('supervisor', 'last_state_time')
    nonfinite = _part('supervisor', 'nonfinite')
    events = _part('supervisor', 'events', writable=False)
    planner = _part('references', 'planner', writable=False)
    awaiting_plan = _part('references', 'awaiting_plan')
    clamped_targets = _part('references', 'clamped_targets')
    task = _part('references', 'task', writable=False)
    plan_task = _part('references', 'plan_task', writable=False)


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

    status = property(lambda self: self._loop.supervisor.status)
    q = property(lambda self: self._loop.q)
    qd = property(lambda self: self._loop.qd)
    q_des = property(lambda self: self._loop.q_des)
    qd_des = property(lambda self: self._loop.qd_des)
    qdd_des = property(lambda self: self._loop.qdd_des)
    effort = property(lambda self: self._loop.effort)
    integral = property(lambda self: self._loop.integral.force)
    command = property(lambda self: self._loop.command)
    order = property(lambda self: self._loop.settings.order)
    nonfinite = property(lambda self: self._loop.supervisor.nonfinite)
