"""
The controller's runtime without ROS: a ControlLoop ticked between its inputs and outputs.

    runtime = ControllerRuntime(loop, options)   # options: period, state_decimation, ...
    runtime.post_state(q, qd, t, measured_at)    # input thread: a validated state
    runtime.post_rejection('range')              # input thread: a rejected one, counted
    runtime.post_tip(position, stamp, t)         # input thread: a measured tip (or why not)
    command = runtime.tick(t, lateness)          # loop thread: state in, command out
    for t, status, row in runtime.drain_rows(): ...     # publishing thread: ~/state rows
    for level, text in runtime.drain_events(): ...     # publishing thread: log lines
    values = runtime.figures()                   # the /diagnostics (key, value) pairs
    message, ok = runtime.verdict(values)        # their status line, and OK or WARN

The node (ros/controller_node.py), the one-process simulation
(`sim.closed_loop.simulate_nodes`, `continuum-ctrl simulate`), the in-process tests and the
benchmarks drive this same object; only the node has threads. Two threads use it: an input
thread (the node's executor) calls the `post_*` and `request_*` methods, `drain_*` and
`figures`; the loop thread calls `tick`. They share no lock: each hand-off is one attribute
store, a deque append, or a counter stored after what it counts by a call that holds the GIL
(StateHandoff, the planner's ReferenceSlot, the settings slot, the pressure queue,
SnapshotRing, Durations), so either side sees the old value or the new one.

A tick, in order: take the posted settings and pressures, the latest state (`StateHandoff`),
feed the starvation detector, tick the loop (or, starved with `safe_on_overrun`, give its
safe command), hand the command and `t` to `send`, then record the timing figures and keep
every `state_decimation`-th cycle as a ``~/state`` row, add the command to its quality sums
(runtime/command_watch.py), and collect the loop's log lines. The detector, the figures, the
row and the sums are two compiled calls (runtime/tick_record.py). No allocation per tick
beyond the loop's own.

`options` holds the node's run settings: a `RuntimeOptions`, or the node's
`runtime.node_settings.ControllerNodeSettings`, which has the same attributes.
"""

import collections
from dataclasses import dataclass
import math
import time
from typing import Callable, Iterator, Optional, Sequence, Tuple

import numpy as np

from continuum_ctrl.control.loop import ControlLoop, CYCLE_PARTS
from continuum_ctrl.control.reference_manager import TrajectoryRejected
from continuum_ctrl.control.supervisor import ACTIVE, DEGRADED, LOOP_STATUSES, reported
from continuum_ctrl.control.task_space import TaskSpace
from continuum_ctrl.control.tip_correction import TipCorrection
from continuum_ctrl.runtime.command_watch import CommandWatch
from continuum_ctrl.runtime.handoff import StateHandoff
from continuum_ctrl.runtime.phase_lock import PhaseLock
from continuum_ctrl.runtime.snapshot_ring import SnapshotRing
from continuum_ctrl.runtime.starvation import StarvationDetector
from continuum_ctrl.runtime.throttle import Throttle
from continuum_ctrl.runtime.tick_record import TickRecord

#: ~/state rows kept for the executor to publish, s of ticks: with both nodes at SCHED_FIFO on
#: two cores its timer waited over 100 ms at times, and a 0.1 s ring lost that many rows
ROW_SECONDS = 1.0
#: the statuses of a loop that controls: active, or active and starved (which only reports
#: it, unless `loop.safe_on_overrun` is set)
CONTROLLING = (ACTIVE, DEGRADED)
#: window of the starvation detector, s
STARVATION_WINDOW = 0.5
#: the arrays a ~/state row holds, in order (model order, n each): the loop's cycle record
STATE_PARTS = CYCLE_PARTS
#: the statuses a ~/state row is labelled with (the ring keeps their indices)
STATUSES = LOOP_STATUSES + (DEGRADED,)
#: the previous tick's start before the first tick: its period is NaN, none
_NO_TICK = math.nan


@dataclass(frozen=True)
class RuntimeOptions:
    """
    How the runtime runs its loop (the node's settings of the same names).

    `period` (s); a ~/state row every `state_decimation` ticks; the safe command while
    starved (`safe_on_overrun`); starved above `max_missed_share` of the deadlines of the
    last STARVATION_WINDOW s; the diagnostics warn above a `chatter_warning` index (0:
    never); a new state waits `state_phase` of a period for its tick, the deadlines moved to
    keep it (0: fixed; runtime/phase_lock.py).
    """

    period: float
    state_decimation: int = 1
    safe_on_overrun: bool = False
    max_missed_share: float = 0.2
    chatter_warning: float = 0.5
    state_phase: float = 0.5


class ControllerRuntime:
    """
    A ControlLoop with its hand-offs, timing figures and starvation detector (module doc).

    `loop`: the ControlLoop (with its planner); `options`: see the module doc (None: the
    defaults of RuntimeOptions at the loop's period); `kinds`: the
    rejection kinds counted in `rejected` (and reported as ``rejected_<kind>``), 'pressures'
    among them; `send`: called with the command buffer (joints order) and the tick's time (s)
    once per tick, before the tick's bookkeeping (its time counts as compute time). Public
    attributes for in-process callers: `loop`, `rejected`, `events`, the Durations `period`,
    `compute`, `age`, `wait`, `transport` (of `timing`, the TickRecord) and the `detector`.
    """

    def __init__(self, loop: ControlLoop, options=None, kinds: Sequence[str] = ('pressures',),
                 send: Optional[Callable[[np.ndarray, float], None]] = None) -> None:
        self.loop = loop
        #: the loop's parts this runtime reads and drives
        self.supervisor, self.references = loop.supervisor, loop.references
        self.options = options = RuntimeOptions(loop.period) if options is None else options
        self.send = send
        self.n = loop.model.n
        self._record = loop.cycle_record.reshape(-1)        # a view: STATE_PARTS in a row
        self.rejected = dict.fromkeys(kinds, 0)
        self.rejected.setdefault('pressures', 0)
        self.events: collections.deque = collections.deque()
        self.handoff = StateHandoff()
        # (settings, options, reanchors) posted by the input thread, applied once by a tick
        self._settings_slot: Optional[tuple] = None
        self._settings_seen: Optional[tuple] = None
        self._reanchors = 0
        self.pressures: collections.deque = collections.deque(maxlen=64)   # (Pa, t) to apply
        self._pressure_throttle = Throttle()
        rate = 1.0 / options.period
        self.rows = SnapshotRing(int(ROW_SECONDS * rate) + 16, len(STATE_PARTS) * self.n,
                                 STATUSES)
        codes = {status: k for k, status in enumerate(STATUSES)}
        #: the ~/state label's code by starvation and loop status: `reported`, looked up
        self._codes = tuple({status: codes[reported(status, degraded)]
                             for status in LOOP_STATUSES} for degraded in (False, True))
        self.timing = timing = TickRecord(int(4 * rate) + 16, self._detector_of(options),
                                          self.rows, CommandWatch(self.n))
        self.period, self.compute, self.age = timing.period, timing.compute, timing.age
        self.wait, self.transport = timing.wait, timing.transport
        self._used_state = -np.inf          # receive time of the state the last tick used
        self._receive_wall = -np.inf        # perf_counter at the receipt of the latest state
        self._ticks = 0                     # since the last ~/state row
        self._window_start = time.perf_counter()
        self.degraded = False
        self.correction: Optional[TipCorrection] = None
        self._corrected: Optional[TaskSpace] = None     # the task `correction` corrects
        self._correct(loop)
        self.restart()

    # -- input thread ---------------------------------------------------------------------

    def post_state(self, q: np.ndarray, qd: Optional[np.ndarray], t: float,
                   measured_at: Optional[float] = None, latency: Optional[float] = None) -> None:
        """
        Hand a validated state (model order, copied) received at `t` to the next tick.

        `qd` None: positions only, the loop estimates the velocity (ControlLoop.set_state).
        `measured_at`: when it held (its header stamp, same clock as `t`; None: no stamp, at
        `t`); the valve compensation predicts from then. `latency`: its transport time (s,
        wall clock; None: unknown), for the `state_latency_*` figures.
        """
        self._receive_wall = time.perf_counter()
        if latency is not None:
            self.transport.add(max(latency, 0.0) * 1e6)
        self.handoff.post(q, qd, t, measured_at)

    def post_tip(self, position: np.ndarray, stamp: float, t: float) -> Optional[str]:
        """
        Post a measured tip (m, base frame) stamped `stamp`, received at `t` (s, loop clock).

        Return None when the task-space correction took it, else why not (control/
        tip_correction.py; also without a task frame or with `task.correction.bandwidth` 0).
        """
        correction = self.correction
        if correction is None or correction.settings.bandwidth <= 0.0:
            return 'no task-space correction (no task frame, or its bandwidth is 0)'
        return correction.measure(position, stamp, t)

    def post_rejection(self, kind: str, state: bool = True) -> None:
        """Count a rejected input of `kind`; `state`: a bad state of this arm (ends the streak)."""
        self.rejected[kind] = self.rejected.get(kind, 0) + 1
        if state:
            self.handoff.post_rejection()

    def post_pressures(self, pressures: np.ndarray, t: float) -> None:
        """Hand measured PMA pressures (joints order, Pa) to the next tick, which checks them."""
        self.pressures.append((pressures, t))

    def post_settings(self, settings, options, reanchor: bool = False) -> None:
        """
        Hand new loop settings (ControllerSettings) and `options` to the next tick.

        `reanchor`: the reference changed, restart it from the measured state. Settings posted
        twice before a tick: the newer win, and a reanchor asked by either is kept.
        """
        self._reanchors += bool(reanchor)
        self._settings_slot = (settings, options, self._reanchors)

    def post_reference(self, reference, t: float) -> None:
        """Hand a built reference (``sample(s)``, s from `t`) to the next tick."""
        self.references.planner.slot.post(reference, t)    # supersedes a plan being made

    def follow(self, times, positions, velocities=None, accelerations=None,
               t: float = 0.0) -> None:
        """
        Check waypoints (model order, times s after `t`) and hand them to the next tick.

        Raises TrajectoryRejected saying why (the reference is kept), also while not active.
        """
        self._require_active()
        self.post_reference(self.references.plan(times, positions, velocities, accelerations),
                            t)

    def request_tip_target(self, position: np.ndarray,
                           rotation: Optional[np.ndarray] = None) -> None:
        """
        Ask the planner's worker to move the tip to `position` (m, base frame).

        Clamped to the closest reachable point; `rotation` (3x3) is used when the task weighs
        it. Raises TrajectoryRejected while not active, or without a task space. An
        unreachable target takes IK a second or more; the loop keeps its reference meanwhile,
        and a newer target or trajectory supersedes this one.
        """
        self._require_active()
        loop, references, supervisor = self.loop, self.references, self.supervisor
        task, plan_task, q = references.task, references.plan_task, loop.q.copy()
        if task is None or plan_task is None:
            raise TrajectoryRejected('no task space: `task.frame` is not set')
        rotation = rotation if task.weight > 0.0 else None

        def clamp():
            """Clamp the target to the closest reachable point (on the planner's worker)."""
            goal, distance, _ = plan_task.closest(position, q)
            if references.task is not task or supervisor.status != ACTIVE:
                return None
            reference = plan_task.to_target(loop.q.copy(), goal, rotation, distance)
            return reference, (f'moving the tip to {np.round(goal, 4).tolist()} m over '
                               f'{reference.path.duration:.3f} s')
        references.planner.request(clamp)   # starts at the tick that installs it

    def _require_active(self):
        status = self.supervisor.status
        if status != ACTIVE:
            raise TrajectoryRejected(f'controller is {status}')

    # -- loop thread ----------------------------------------------------------------------

    def restart(self, options=None) -> None:
        """Start the timing over (a new loop thread): no previous tick, a new detector."""
        options = self.options if options is None else options
        self._last_tick = _NO_TICK
        self.timing.restart(self._detector_of(options))
        self.phase = (PhaseLock(options.period, options.state_phase)
                      if options.state_phase > 0.0 else None)
        #: how far the tick just run moves the loop's deadlines, s (runtime/phase_lock.py)
        self.grid_move = 0.0

    @staticmethod
    def _detector_of(options):
        return StarvationDetector(options.period, STARVATION_WINDOW, options.max_missed_share)

    @property
    def detector(self) -> StarvationDetector:
        """Return the starvation detector of the loop thread's run."""
        return self.timing.detector

    @property
    def missed(self) -> int:
        """Return the deadlines skipped over the run (runtime/lateness.py)."""
        return self.timing.skipped

    @property
    def late_ticks(self) -> int:
        """Return the ticks that started late over the run (runtime/lateness.py)."""
        return self.timing.late

    def tick(self, t: float, lateness: float = 0.0) -> np.ndarray:
        """
        Run one control cycle at time `t` (s), `lateness` s after its deadline.

        Return the command (joints order, the loop's buffer), also handed to `send`.
        `lateness`: as runtime/lateness.py reads it (0: no deadline, as an executor timer).
        """
        start = time.perf_counter()
        loop, supervisor = self.loop, self.supervisor
        self._take_slots(loop)
        self.handoff.take(loop)
        correction = self.correction
        if correction is not None:
            correction.record(loop.measured_at, loop.q)     # paired with capture by stamps
            task = self._corrected
            assert task is not None             # the task `correction` was made for
            offset, tip = task.offset, None
            if correction.wants_tip(t):         # the model's tip, as the IK's target
                target = self.references.tip_target()
                tip = None if target is None else target + offset
            correction.advance(t, offset, tip)
            while correction.events:
                self.events.append(correction.events.popleft())
        degraded = self.timing.deadline(lateness)
        if degraded != self.degraded:
            self._starvation_event(degraded)
        if degraded and self.options.safe_on_overrun:
            command = supervisor.safe_command()
        else:
            command = loop.tick(t)
        if self.send is not None:
            self.send(command, t)
        end = time.perf_counter()
        status = supervisor.status
        state_time = supervisor.last_state_time    # a new state: its wait for a tick is recorded
        new_state, self._used_state = state_time != self._used_state, state_time
        if self.phase is not None:
            self.grid_move = self.phase.add(t - state_time if new_state else math.nan)
        self._ticks += 1
        keep = self._ticks >= self.options.state_decimation
        if keep:
            self._ticks = 0
        last, self._last_tick = self._last_tick, start
        # the label is `self.status`, looked up: the property's call cost 0.1 us a tick
        self.timing.end(self._record, t, self._codes[degraded][status], keep, start, last,
                        self._receive_wall, end, state_time, new_state, status == ACTIVE,
                        command)
        if supervisor.events:
            self.events.extend(supervisor.take_events())
        return command

    def _take_slots(self, loop):
        """Apply the settings and pressures posted since the last tick (the loop takes plans)."""
        posted = self._settings_slot
        if posted is not None and posted is not self._settings_seen:
            seen, self._settings_seen = self._settings_seen, posted
            settings, self.options, reanchors = posted
            loop.configure(settings, reanchors != (seen[2] if seen else 0),
                           self.options.period)
            self._correct(loop)
        while self.pressures:                   # every one, in order: each may be rejected
            try:
                loop.set_pressures(*self.pressures.popleft())
            except ValueError as exc:           # counted here, logged by the input thread
                self.rejected['pressures'] += 1
                if self._pressure_throttle.ready():
                    self.events.append(('warn', f'rejected ~/pressures: {exc}; '
                                                f'{self.rejected["pressures"]} so far'))

    def _correct(self, loop):
        """Make the correction of the loop's task space when that is new (None: no task)."""
        task = self.references.task
        if task is self._corrected:
            return
        settings = None if task is None else task.settings.correction
        self.correction = None
        if task is not None and settings is not None and (
                settings.bandwidth > 0.0 or settings.calibration is not None):
            self.correction = TipCorrection(settings, loop.period, loop.model.for_thread(),
                                            task.frame)
        self._corrected = task

    def _starvation_event(self, degraded):
        self.degraded = degraded
        share = f'{self.detector.share:.0%} of the deadlines of the last {STARVATION_WINDOW} s'
        if degraded:
            action = 'safe command' if self.options.safe_on_overrun else 'reporting only'
            self.events.append(('warn', f'control loop starved: {share} missed ({action})'))
        else:
            self.events.append(('info', f'control loop recovered: {share} missed'))

    def stop(self, t: float) -> np.ndarray:
        """Stop the loop: return the safe command (joints order); ticks stay safe until `start`."""
        return self.loop.stop(t)

    def start(self) -> None:
        """(Re)start the loop: the safe command until `resume_count` valid states arrive."""
        self.loop.start()

    # -- reading (any thread) -------------------------------------------------------------

    @property
    def row_capacity(self) -> int:
        """Return how many ~/state rows wait at most for `drain_rows` (more are dropped)."""
        return self.rows.capacity

    @property
    def cycle(self):
        """Return the loop's CycleView: what the last tick produced (its buffers)."""
        return self.loop.cycle

    @property
    def settings(self):
        """Return the loop's ControllerSettings in force (those posted, once a tick took them)."""
        return self.loop.settings

    @property
    def task(self):
        """Return the loop's TaskSpace (None: no task frame)."""
        return self.references.task

    @property
    def status(self) -> str:
        """Return the status as reported (`supervisor.reported`): `degraded` or the loop's."""
        return reported(self.supervisor.status, self.degraded)

    def tip_target(self) -> Optional[np.ndarray]:
        """Return the tip position the reference heads for now, m (None: a joint reference)."""
        return self.references.tip_target()

    def drain_rows(self) -> Iterator[Tuple[float, str, np.ndarray]]:
        """
        Yield ``(t, status, row)`` for every ~/state row since the last call, oldest first.

        `row`: the STATE_PARTS (model order, n each) one after the other, a view valid until
        the next call.
        """
        return self.rows.drain()

    def drain_events(self) -> Iterator[Tuple[str, str]]:
        """Yield the ``(level, text)`` log lines since the last call; level: info, warn, error."""
        events = self.events
        while events:
            yield events.popleft()

    def figures(self):
        """
        Return the figures as (key, value) pairs; the window figures reset each call.

        Window (since the last call): `rate_hz`; `period_*` (between two ticks' starts),
        `jitter_p99_us` (its p99 less the nominal period), `compute_*` (a tick's start to its
        end, the command sent), `input_age_*` (the receipt of the state a tick used to that
        tick's start, 0 while not active), `state_wait_*` (a new state's receipt to the first
        tick that uses it, t clock), `grid_moved_us` (how far the phase lock has moved the
        loop's deadlines over the run, runtime/phase_lock.py), `state_latency_*` (header stamp
        to receipt, wall clock), `missed_share` (of the starvation window's deadlines),
        `command_variation` (the largest of the channels' sum of |change| per second, command
        units/s: Pa/s for PMA arms, N/s or N m/s for efforts) with `command_variation_joint`
        (its channel's joint), `chatter_index` (the largest channel's high-frequency share of
        its power, 0..1) with `chatter_joint`, both of the active ticks
        (runtime/command_watch.py; NaN and '' with none). Run: `run_ticks`, `run_late_ticks`
        (ticks that started late), `run_missed_deadlines` (deadlines skipped): both as
        runtime/lateness.py defines them; the run's period and compute percentiles; the loop's
        counters (`state_timeouts`: the times it fell back to the safe command for want of
        fresh states), and ``rejected_<kind>`` for each counted kind.
        """
        now = time.perf_counter()
        window, self._window_start = now - self._window_start, now
        ticks = self.period.count
        nominal = self.options.period * 1e6
        p50, p99, pmax = self.period.window_stats()
        c50, c99, cmax = self.compute.window_stats()
        a50, a99, _ = self.age.window_stats()
        w50, w99, _ = self.wait.window_stats()
        s50, s99, _ = self.transport.window_stats()
        loop, supervisor = self.loop, self.supervisor
        rate, chatter = self.timing.watch.window()
        joints = loop.settings.joints
        worst_rate, worst_chatter = (int(np.argmax(np.nan_to_num(x, nan=-1.0)))
                                     for x in (rate, chatter))
        measured = bool(np.isfinite(rate[worst_rate]))
        values = [
            ('status', self.status),
            ('rate_hz', ticks / window if window > 0 else 0.0),
            ('period_p50_us', p50), ('period_p99_us', p99), ('period_max_us', pmax),
            ('jitter_p99_us', p99 - nominal),
            ('compute_p50_us', c50), ('compute_p99_us', c99), ('compute_max_us', cmax),
            ('input_age_p50_us', a50), ('input_age_p99_us', a99),
            ('state_wait_p50_us', w50), ('state_wait_p99_us', w99),
            ('grid_moved_us', 0.0 if self.phase is None else self.phase.moved * 1e6),
            ('state_latency_p50_us', s50), ('state_latency_p99_us', s99),
            ('missed_share', self.detector.share),
            ('command_variation', float(rate[worst_rate])),
            ('command_variation_joint', joints[worst_rate] if measured else ''),
            ('chatter_index', float(chatter[worst_chatter])),
            ('chatter_joint', joints[worst_chatter] if measured else ''),
            ('run_ticks', self.compute.total),
            ('run_late_ticks', self.late_ticks),
            ('run_missed_deadlines', self.missed),
            ('run_period_p50_us', self.period.run_percentile(0.5)),
            ('run_period_p99_us', self.period.run_percentile(0.99)),
            ('run_period_max_us', self.period.largest),
            ('run_compute_p50_us', self.compute.run_percentile(0.5)),
            ('run_compute_p99_us', self.compute.run_percentile(0.99)),
            ('run_compute_max_us', self.compute.largest),
            ('nonfinite_efforts', supervisor.nonfinite),
            ('state_timeouts', supervisor.timeouts),
            ('run_state_rows_dropped', self.rows.dropped),
        ]
        values += self._loop_figures()
        values += loop.ilc.figures()
        values += [(f'rejected_{kind}', count) for kind, count in self.rejected.items()]
        if self.correction is not None:
            values += self.correction.figures()
        return values

    def _loop_figures(self):
        """Return the task references', planner's, observer's and integral's figures."""
        loop, references = self.loop, self.references
        planner = references.planner
        seen = None if loop.reference is None else loop.reference.seen
        return [
            ('clamped_tip_targets', references.clamped_targets),
            ('reach_bounded_joints', 0 if seen is None else seen.bounded),
            ('planning', int(references.awaiting_plan)),
            ('plans', planner.plans),
            ('plan_max_s', planner.longest),
            ('planner_ready', int(planner.ready)),
            ('rejected_estimated_speed', loop.too_fast),
            ('observer_dropped_samples', 0 if loop.observer is None else loop.observer.dropped),
            ('integral_force_max', float(np.max(np.abs(loop.integral.force)))),
            ('integral_held_joints', int(np.count_nonzero(loop.integral.held))),
            ('learnt_stiffness_max', float(np.max(np.abs(loop.integral.stiffness())))),
        ]

    def verdict(self, values) -> Tuple[str, bool]:
        """
        Return the status line and whether it is OK (else WARN) of `figures` `values`.

        OK while active and the chatter index is at most the `chatter_warning` option (0:
        not checked); the line is the status, and then says how the command chatters.
        """
        figures = dict(values)
        status, chatter = figures['status'], figures['chatter_index']
        limit = self.options.chatter_warning
        if limit > 0.0 and chatter > limit:
            unit = 'Pa/s' if self.loop.settings.actuation is not None else 'N/s or N m/s'
            return (f'{status}; the command chatters: chatter index {chatter:.2f} at '
                    f'{figures["chatter_joint"]} (above {limit:g}), variation '
                    f'{figures["command_variation"]:.4g} {unit} at '
                    f'{figures["command_variation_joint"]}'), False
        return status, status == ACTIVE

    def step(self) -> None:
        """In process (no workers): make a pending plan, learn a finished trial, between ticks."""
        self.references.planner.step()
        if not self.loop.ilc.threaded:
            self.loop.ilc.step()

    def close(self) -> None:
        """Stop the planner's worker and process, and the learning's worker."""
        self.references.planner.close()
        self.loop.ilc.close()
