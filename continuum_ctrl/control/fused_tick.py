"""
The active tick of a CoG continuum arm in pressure mode as one compiled call.

    fused = FusedTick.of(loop)          # None where the loop's case is not covered
    status = fused(t)                   # the loop's buffers filled, as ControlLoop.tick would

`ControlLoop.tick` is a chain of compiled kernels joined by Python: the reference sample, the
valves' walk and the damped prediction steps (control/compensation.py), the law
(control/computed_torque.py), the lead, the limits and rate limit (numerics/clipping.py), the
integral step (control/integral.py) and the pressure map (actuation/pressure_map.py). The
Python between them cost as much as the kernels. `fused_tick` calls the same kernels from one
compiled function, in the same order and with the same arithmetic, so each piece keeps its
one home and the Python path stays what it was: the path of every other case, and the tests'
oracle (the same commands to 1e-12, test/control/test_fused_tick.py).

It covers an active loop whose model is a `CogModel`, with pressure output, diagonal gains
and a joint reference with a compiled sampler (`Anchored` with a layout): the shipped
continuum files but the task-space one. A non-finite force is left to the loop's Python path
to report.

The call keeps the GIL. Released, it let the executor thread run Python meanwhile, and the
loop thread then waited for the GIL back (runtime/loop_thread.py): at 1 kHz against the
simulator, the compute time's p99 was 1.6-2.3 x that of the same call holding it, ticks on
time 0.1-0.5 points fewer, in two runs of bench/bench_node.py; under the oversized-state
flood of bench/bench_flood.py both kept 99 % of the 500 Hz rate. Holding it for the call's
20 us delays the executor's input by as much, which no deadline depends on.
"""

import math

import numpy as np

from continuum_ctrl.actuation.maxwell_slip import slip_kernel
from continuum_ctrl.actuation.pressure_map import pressure_kernel
from continuum_ctrl.actuation.valves import advance_kernel, lag_kernel
from continuum_ctrl.control.compensation import (grid_cell, INERTIA_HOLD, lead_kernel,
                                                 prediction_span, span_steps)
from continuum_ctrl.control.computed_torque import diagonal_acceleration
from continuum_ctrl.control.ilc import ilc_force, ilc_record
from continuum_ctrl.control.integral import add_learnt_force, integral_step, learn_step
from continuum_ctrl.control.observer import correction_step
from continuum_ctrl.control.samplers import (anchored_sample, blend_data, example_data,
                                             ReferenceData)
from continuum_ctrl.models.continuum.cog import cog_damped_steps, cog_run, CogModel, CQ_ALONE
from continuum_ctrl.models.continuum.model import move_passive, TASK_INVERSE
from continuum_ctrl.numerics.clipping import limit_kernel
from continuum_ctrl.numerics.jit import compiled, entry_point

#: `fused_tick` results: the loop's buffers hold the tick; the force was not finite
DONE, NONFINITE = 0, 1
#: a grid cell no tick asks for (an empty slot of the feed-forward grid)
EMPTY_CELL = -(2 ** 62)


@compiled(inline='always')     # typed in `fused_tick`: no compile of its own
def _grid_force(arm, memory, sums, layout, blend, cell, period, cells, forces, sample, raw):
    """
    Return the slot of `forces` (3, n) holding the force of perfect tracking at grid `cell`.

    Grid time k is ``blend.t0 + k period``; a missing cell is evaluated (inverse dynamics of
    the reference there, as `Compensation._feedforward`) into the slot farthest from it.
    """
    far, distance = 0, -1.0
    for slot in range(cells.size):
        if cells[slot] == cell:
            return slot
        gap = abs(float(cells[slot]) - float(cell))
        if gap > distance:
            far, distance = slot, gap
    anchored_sample(layout, blend, blend.t0 + cell * period, raw, sample)
    cog_run(arm, memory, sample[0], sample[1], CQ_ALONE, TASK_INVERSE, sample[2])
    for i in range(forces.shape[1]):
        forces[far, i] = sums.out[i]
    cells[far] = cell
    return far


@compiled()
def fused_tick(arm, memory, sums, layout, blend, t, q, qd, measured_at, sent, clock, pending,
               gains, valves, comp, observer, grid, limits, integral, output, work,
               repetition):
    """
    Run one active tick at `t` (s) into the loop's buffers; return DONE or NONFINITE.

    `sent`: when the loop's last command (`output`'s `command`) was sent (s; NaN: none yet),
    fed to the valve model first as `Actuator.command` does (the caller made room for it);
    `clock`, `pending`: the valves' (`Actuator`) clock (s) and commands pending, `valves` its
    (pressure, input, switches, inputs, time constant, max rate), advanced to `t` here;
    `gains`: (kp, kd, passive at the reference, pushing against friction, the friction
    feed-forward's bank (`MaxwellSlip`'s slip, stiffness, play, its force): moved to the
    target, as the law moves it);
    `comp`: (compensate, time constant, delay, horizon, period, deadzone, the span of
    prediction over which the inertia is held: `compensation.INERTIA_HOLD`);
    `observer`: (observing, cancelling the bias, estimate (2 or 3, n), sample (n,), their times
    (2,), gain (2n or 3n, n), `free` low and high (n,), `gate` (n,)) of the loop's Observer:
    where observing, the prediction starts from the estimate, its force bias (a third row) is
    added to the forces, the sample corrects it (`Compensation.predict`) and `q`, `qd` take
    the corrected estimate; where cancelling, the law's force less the corrected bias
    (`Compensation.effort`);
    `grid`: (cells, forces); `limits`: (low, high, step, effort) with `effort` the force sent
    (moved here); `integral`: (engaged, force, ki, limit, held, q_low, q_high, desired
    q, qd, qdd, learning, the learning's rate per tick (1,), its floor squared, window, the
    reference fed, the learnt force), learning the stiffness as `IntegralAction` does, at
    the target; `output`: (area, deadzone, p_min, p_max, order, command, the area's fall
    ``slope / stroke``, 1/m: the effective area, at the state the tick starts from, makes the
    prediction's forces and the pressures, as `ControlLoop._area_at`); `work`: scratch.
    ``work.left[0]`` holds the valve commands pending, also after an exception;
    `repetition`: (timing, tables, select, records, counts, trials) of the loop's
    `IterativeLearning`, its force added at `t` and the error recorded (control/ilc.py).
    """
    kp, kd, at_reference, rubbing, slip, slip_stiffness, play, friction = gains
    pressure, current, switches, inputs, time_constant, max_rate = valves
    compensate, lag, delay, horizon, period, deadzone, inertia_hold = comp
    observing, cancel, estimate, sample_q, times, gain, free_low, free_high, gate = observer
    cells, grid_forces = grid
    low, high, step, effort = limits
    engaged, force, ki, limit, held, q_low, q_high, q_des, qd_des, qdd_des, learning, \
        rate, floor2, window, fed, learnt = integral
    p_area, p_deadzone, p_min, p_max, order, command, falloff = output
    raw, now, ahead, sample, middles, applied, pushes, predicted, v, tau, scratch, \
        candidate, row, pressures, until, left, area = work
    n = q.shape[0]
    x0, v0 = (estimate[0], estimate[1]) if observing else (q, qd)
    for i in range(n):
        area[i] = p_area[i] * (1.0 - falloff[i] * x0[i])
    anchored_sample(layout, blend, t, raw, now)
    for i in range(n):
        q_des[i], qd_des[i], qdd_des[i] = now[0, i], now[1, i], now[2, i]
    x, xd, target = q, qd, now
    if compensate:
        if sent == sent:
            switches[pending] = sent + delay
            for i in range(n):
                inputs[pending, order[i]] = command[i]
            pending += 1
        until[0] = t
        left[0] = advance_kernel(clock, pressure, current, switches, inputs, pending, until,
                                 time_constant, max_rate, row)
        clock = max(clock, t)
        start, steps, h, hold = prediction_span(times[0] if observing else measured_at, t,
                                                horizon, period, inertia_hold, middles)
        lag_kernel(clock, pressure, current, switches[:left[0]], inputs[:left[0]],
                   middles[:steps], time_constant, max_rate, applied[:steps])
        for k in range(steps):
            for i in range(n):
                pushes[k, i] = area[i] * max(applied[k, i] - deadzone[i], 0.0)
                if observing and estimate.shape[0] > 2:
                    pushes[k, i] += estimate[2, i]
        at = correction_step(times[1], start, h, steps) if observing else -1
        cog_damped_steps(arm, memory, x0, v0, pushes[:steps], h, hold, predicted, at, gain,
                         sample_q, estimate, free_low, free_high, gate)
        if at >= 0:
            times[0], times[1] = start + at * h, math.nan
        if observing:
            for i in range(n):
                q[i], qd[i] = estimate[0, i], estimate[1, i]
        x, xd = predicted[0], predicted[1]
        anchored_sample(layout, blend, t + delay, raw, ahead)
        target = ahead
    diagonal_acceleration(kp, kd, x, xd, target[0], target[1], target[2], v)
    cog_run(arm, memory, x, xd, CQ_ALONE, TASK_INVERSE, v)
    if at_reference:
        move_passive(arm.pma, target[0], target[1], sums.passive, scratch, sums.out)
    for i in range(n):
        tau[i] = sums.out[i] + force[i] if engaged else sums.out[i]
    if engaged and learning:
        add_learnt_force(target[0], window, floor2, limit, fed, learnt, tau)
    timing, tables, select, records, counts, trials = repetition
    ilc_force(t, timing, tables, select, tau)
    if rubbing:
        slip_kernel(target[0], slip, slip_stiffness, play, friction)
        for i in range(n):
            tau[i] -= friction[i]
    for i in range(n):
        if cancel:
            tau[i] -= estimate[2, i]
    if compensate and lag > 0.0:
        cell, share = grid_cell(t + delay, blend.t0, period)
        early = _grid_force(arm, memory, sums, layout, blend, cell, period, cells, grid_forces,
                            sample, raw)
        late = _grid_force(arm, memory, sums, layout, blend, cell + 1, period, cells,
                           grid_forces, sample, raw)
        lead_kernel(tau, grid_forces[early], grid_forces[late], share, lag / period, low,
                    high, candidate)
    elif compensate:
        for i in range(n):
            candidate[i] = min(max(tau[i], low[i]), high[i])
    else:
        for i in range(n):
            candidate[i] = tau[i]
    if not limit_kernel(candidate, low, high, step, effort):
        return NONFINITE
    if engaged:
        integral_step(q, q_des, period, effort, low, high, q_low, q_high, ki, limit, force,
                      held)
        if learning:
            learn_step(fed, force, learnt, ki, rate, window)
    ilc_record(t, measured_at, timing, sample_q if observing else q, q_des, qd_des, records,
               counts, trials)
    for i in range(n):
        row[0, i] = effort[i]
    pressure_kernel(row, area, p_deadzone, p_min, p_max, pressures)
    for i in range(n):
        command[i] = pressures[0, order[i]]
    return DONE


#: `fused_tick` compiled (or loaded) for its argument types, by the first FusedTick
_compiled: list = []


class FusedTick:
    """
    `fused_tick` on one `ControlLoop`'s objects: its model, law, compensation and buffers.

    Build it with `of` (which compiles, or loads, the kernel, for every reference type at
    once: `ReferenceData`; no tick compiles) whenever the loop's settings change: it holds
    their arrays (gains, limits, integral, valves). Call it with the tick time where `covers`
    says it applies; it leaves the loop's `q_des`, `qd_des`, `qdd_des`, `effort` and
    `command` as the Python tick would.
    """

    def __init__(self, loop):
        self.loop = loop
        model, n = loop.model, loop.model.n
        law, integral, comp = loop.law, loop.integral, loop.compensation
        horizon = comp.horizon if comp is not None else 0.0
        steps = span_steps(horizon, loop.period)
        work = (np.zeros((3, n)), np.zeros((3, n)), np.zeros((3, n)), np.zeros((3, n)),
                np.zeros(steps), np.zeros((steps, n)), np.zeros((steps, n)), np.zeros((2, n)),
                np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros((1, n)),
                np.zeros((1, n)), np.zeros(1), np.zeros(1, dtype=np.int64), np.zeros(n))
        self._left = work[-2]
        self._cells = np.full(3, EMPTY_CELL, dtype=np.int64)
        self._grid_reference = None
        self._model = (model.arm, model.memory, model.data.sums)
        actuation = loop.settings.actuation
        self._diagonal = law.kp.ndim == 1 and law.kd.ndim == 1
        if comp is None:
            self._valves = None
            valves = (np.zeros(1), np.zeros(1), np.zeros(1), np.zeros((1, 1)), 0.0, 0.0)
            compensation = (False, 0.0, 0.0, 0.0, loop.period, actuation.deadzone,
                            INERTIA_HOLD)
        else:
            self._valves = comp.valves
            valves = self._valve_arrays()
            compensation = (True, comp.time_constant, comp.delay, comp.horizon, comp.period,
                            actuation.deadzone, INERTIA_HOLD)
        low, high = loop._effort_range
        observer = loop.observer
        watch = ((True, observer.settings.cancel_bias, observer.x, observer.y, observer.times,
                  observer.gain, *observer.free, observer.gate)
                 if observer is not None else
                 (False, False, np.zeros((2, n)), np.zeros(n), np.array([0.0, np.nan]),
                  np.zeros((2 * n, n)), np.full(n, -np.inf), np.full(n, np.inf),
                  np.full(n, np.inf)))
        bank = law.friction
        friction = ((True, bank.slip, bank.stiffness, bank.play, bank.out) if bank is not None
                    else (False, np.zeros((n, 1)), np.zeros((n, 1)), np.zeros((n, 1)),
                          np.zeros(n)))
        self._rest = [(law.kp, law.kd, law.passive == 'reference', *friction), valves,
                      compensation,
                      watch, (self._cells, np.zeros((3, n))), (low, high, loop._step, loop.effort),
                      (integral.engaged, integral.force, integral.ki, integral.limit,
                       integral.held, loop.low, loop.high, loop.q_des, loop.qd_des,
                       loop.qdd_des, *integral.learning(loop.period)),
                      (actuation.area, actuation.deadzone, actuation.p_min, actuation.p_max,
                       np.asarray(loop.settings.order, dtype=np.int64), loop.command,
                       actuation.falloff()),
                      work, loop.ilc.arrays()]
        if not _compiled:
            _compiled.append(entry_point(
                fused_tick, *self._model, example_data(ReferenceData), _EXAMPLE_BLEND, 0.0,
                loop.q, loop.qd, 0.0, 0.0, 0.0, 0, *self._rest, run=False))
        self._entry = _compiled[0]

    def _valve_arrays(self):
        valves = self._valves
        self._switches = valves._switches
        return (valves.pressure, valves.input, valves._switches, valves._inputs,
                valves.time_constant, valves.max_rate)

    @classmethod
    def of(cls, loop):
        """Return the fused tick of `loop`, or None where its model or output is not covered."""
        if not isinstance(loop.model, CogModel) or loop.settings.actuation is None:
            return None
        return cls(loop)

    def covers(self, reference):
        """Tell whether the tick can run fused on `reference` (an `Anchored`) and the gains."""
        return self._diagonal and reference.sampler_data is not None

    def __call__(self, t, sent=None):
        """
        Run the active tick at `t` (s); return DONE, or NONFINITE (the effort unmoved).

        `sent`: when the loop's last command was sent (s; None: none yet), for the valves.
        """
        loop = self.loop
        reference = loop.reference
        if reference is not self._grid_reference:
            self._grid_reference = reference
            self._cells[:] = EMPTY_CELL
        valves = self._valves
        if valves is None:
            clock, pending = 0.0, 0
        else:
            if valves.t is None:
                valves.t = t
            valves.make_room()
            if valves._switches is not self._switches:      # more rows pending: new arrays
                self._rest[1] = self._valve_arrays()
            clock, pending = valves.t, valves.pending
            self._left[0] = pending
        try:
            return self._entry(*self._model, reference.sampler_data, reference._blend, t, loop.q,
                               loop.qd, loop.measured_at, _NOT_SENT if sent is None else sent,
                               clock, pending, *self._rest)
        finally:
            if valves is not None:
                valves.t = max(clock, t)
                valves.pending = int(self._left[0])


_NOT_SENT = float('nan')
_EXAMPLE_BLEND = blend_data(0.0, 1.0, False, *(np.zeros(1),) * 4)
