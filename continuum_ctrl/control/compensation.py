"""
The controller's compensation of the PMA valves: a lead on their lag, a prediction over delay.

Pressure output only.

    comp = Compensation(model, law, actuation, time_constant, delay, period)
    tau = comp.effort(q, qd, measured_at, reference, t, bounds)   # force to command now, N
    comp.sent(pressures, t)       # every command sent (model order, Pa, at time t in s)
    comp.measured(pressures, t)   # measured PMA pressures, when the hardware gives them

The valves are modelled as in the simulator (actuation/valves.py): the applied pressure follows
the command after `delay` through a first-order lag of `time_constant` (s).

- **Delay.** The force commanded now acts `delay` seconds later, so the law acts on the state
  predicted for then: the model's forward dynamics from the measured state, driven by the
  applied pressures that the commands already sent will make meanwhile (the valve model fed
  with every command sent; where measured pressures arrive they replace its estimate). The
  prediction starts at the time the state was measured (its header stamp), so its age in
  transport and in the node's queue is predicted over too (at most MAX_AGE), and runs on past
  ``t + delay`` by one control period, to the end of the period over which the command, held
  until the next one, acts. The reference is taken at ``t + delay``. The prediction's steps
  evaluate the passive forces (the PMAs' stiffness and damping, the fast part) at every step,
  but hold ``M``, ``g`` and ``C qd`` over INERTIA_HOLD of prediction: one model evaluation
  per tick instead of one per step, since the model evaluation is most of a step's cost.
  INERTIA_HOLD spans a 10 ms dead time, a period and the state's age in one hold, since
  the arm's configuration barely changes in 20 ms: in the one-process loop of the reference
  arm behind its file's valves, the RMS error was 7.2 um held over 20 ms, 7.3 um over 10 ms
  and 7.4 um evaluated at every step; with the calibration's mismatch and sensor noise 42.6,
  42.6 and 42.7 um; behind 30 ms of lag and 10 ms of dead time 7.2, 7.4 and 7.6 um.
- **Lag.** ``p_cmd = p_des + T dp_des/dt``, in forces (the same above the dead zone, where
  the map is affine; with ``output.area_slope``, at the tick's one area, leaving out the
  area's own rate, docs/pma-model.md). ``dp_des/dt`` is the time derivative of the law
  under perfect tracking: the model's inverse dynamics along the (smooth) reference, the
  secant over the control
  period that holds ``t + delay`` on a grid of periods from the reference's start (linear in
  between for its value). Ticks a period apart share a grid time, so a tick pays one inverse
  dynamics for it. It holds no measurement, so sensor noise cannot turn into chatter. That
  force is clamped to what the PMAs can push, and where it leaves a bound (a PMA's force
  rising from zero, as in section 1 during the blend at activation) its derivative steps
  from 0 to the full slope; so the lead is limited to the clamped force's distance from the
  bound it leaves: it ramps in as the force moves away, and the command has no step.

The feedback part of the law, above all its cancellation of the PMAs' stiffness and damping
by the measured state, closes a fast loop of gain about one through the valves (the arm's
``M^-1 D`` reaches ~9e3 1/s). The lag and dead time left in that loop make it chatter; the
prediction is what keeps it quiet. Leading the feedback part as well (the law differentiated
along its commanded acceleration, the stiffness term along the measured velocity, or a
filtered difference of the feedback) chattered or, with a 20 % wrong time constant, lost
the arm, in the one-process loop at 30 ms lag and 5 ms delay. The horizon is a trade: each
ms it runs past the middle of the held command costs about 0.1 mm RMS there (to the middle:
0.14 mm; to the end: 0.25 mm; a tenth of the lag further: 0.74 mm, against 0.42 mm without
valves), and latency it does not know of brings the loop closer to chatter (states predicted
from their arrival, not their stamp, lost the arm under load). Through the nodes, the end of
the period kept the loop quiet with a loaded simulator that delayed commands by several ms;
the middle did not. So `delay` must hold every latency between the command and the valves
(driver, bus), rounded up.
"""

import math

import numpy as np

from continuum_ctrl.actuation.valves import Actuator
from continuum_ctrl.models.integrators import implicit_damping_euler_stepper
from continuum_ctrl.numerics.clipping import clip
from continuum_ctrl.numerics.jit import cached_entry_point, compiled

#: the prediction runs this many control periods past the dead time (see the module doc)
HORIZON_PERIODS = 1.0
#: s of prediction over which M, g and C qd are held (the passive forces are not; see the doc)
INERTIA_HOLD = 0.02
#: s; a state older than this is predicted from this long ago (bounds the tick's work: about
#: 50 forward steps at 500 Hz; the loop's `state_timeout` is 0.1 s by default)
MAX_AGE = 0.1


class Compensation:
    """
    Lead and prediction for valves of `time_constant` and `delay` (s); see the module doc.

    `law` is the loop's ComputedTorqueLaw, `actuation` its ActuationMap, `period` the control
    period (s): the step of the prediction and of the derivative.
    """

    def __init__(self, model, law, actuation, time_constant, delay, period):
        self.model = model
        self.law = law
        self.actuation = actuation
        self.time_constant = time_constant
        self.delay = delay
        self.period = period
        self.horizon = delay + HORIZON_PERIODS * period
        self.valves = Actuator(time_constant, delay, 0.0, actuation.p_min)
        self._steps = implicit_damping_euler_stepper(model)
        self._grid_reference = None
        self._grid = {}                 # grid time index -> force of perfect tracking, N
        self._effort = np.zeros(model.n)
        self._middles = np.zeros(span_steps(self.horizon, period))
        self._span = _spanner()
        self._lead = _leader()

    def sent(self, pressures, t):
        """Feed the valve model the command sent at `t` (model order, Pa)."""
        self.valves.command(pressures, t)

    def measured(self, pressures, t):
        """Take measured applied pressures (model order, Pa) at time `t` (s) as the estimate."""
        self.valves.advance(t)
        self.valves.pressure[:] = pressures

    def predict(self, q, qd, measured_at, t, observer=None, area=None):
        """
        Return ``(q, qd)`` measured at `measured_at` predicted to ``t + horizon`` (s).

        The applied pressures before `t` are taken as the estimate at `t` (the state is
        usually a few ms old, the valves' lag is longer). `observer` (control/observer.py):
        `q`, `qd` are its estimate at `measured_at`, which its pending sample corrects at
        the nearest step, the estimate and its time updated; its force bias, as estimated
        before the correction, is added to the applied forces. `area` (m^2, (n,)): the PMAs'
        effective area over the prediction (`ActuationMap.area_at` the state it starts
        from; None: the nominal one).
        """
        self.valves.advance(t)
        start, steps, h, hold = self._span(measured_at, t, self.horizon, self.period,
                                           INERTIA_HOLD, self._middles)
        forces = self.actuation.force(self.valves.pressures_at(self._middles[:steps]), area)
        if observer is None:
            return self._steps(q, qd, forces, h, hold)
        if observer.bias is not None:
            forces += observer.bias
        at = observer.step_at(start, h, steps)
        predicted = self._steps(q, qd, forces, h, hold,
                                (at, observer.gain, observer.y, observer.x, *observer.free,
                                 observer.gate))
        if at >= 0:
            observer.times[:] = (start + at * h, np.nan)
        return predicted

    def effort(self, q, qd, measured_at, reference, t, bounds, observer=None, area=None):
        """
        Return the force (model order, N) to command at time `t` (s).

        `q`, `qd`: the state received at time `measured_at` (s), or `observer`'s estimate
        then (see `predict`; with its `cancel_bias`, the law's force less the bias it
        estimates after the correction); `reference` samples ``(q_d, qd_d, qdd_d)`` inside
        the joint limits from its start `t0` (s; the loop's `Anchored` clamps); `bounds` =
        (low, high) forces the loop clamps to (the lead acts on clamped forces; float64 arrays
        of the model's length); `area`: see `predict`. The returned force is a buffer that
        the next call overwrites.
        """
        q, qd = self.predict(q, qd, measured_at, t, observer, area)
        t_act = t + self.delay
        low, high = bounds
        tau = np.ascontiguousarray(self.law(q, qd, *reference.sample(t_act)), dtype=float)
        if tau.shape != self._effort.shape:         # the kernel below trusts the lengths
            raise ValueError(f'the law gave {tau.shape} forces, expected {self._effort.shape}')
        if observer is not None and observer.settings.cancel_bias:
            tau = tau - observer.bias
        if self.time_constant == 0.0:
            return clip(tau, low, high)
        cell, share = grid_cell.py_func(t_act, reference.t0, self.period)
        early = self._feedforward(reference, cell)
        late = self._feedforward(reference, cell + 1)
        self._lead(tau, early, late, share, self.time_constant / self.period, low, high,
                   self._effort)
        return self._effort

    def _feedforward(self, reference, cell):
        """
        Return the force of perfect tracking at grid time `cell` (N): inverse dynamics of the ref.

        Grid time k is ``reference.t0 + k period``; those next to `cell` are kept (for one
        reference).
        """
        if reference is not self._grid_reference:
            self._grid_reference = reference
            self._grid.clear()
        force = self._grid.get(cell)
        if force is None:
            sample = reference.sample(reference.t0 + cell * self.period)
            force = self._grid[cell] = np.array(self.model.inverse_dynamics(*sample),
                                                dtype=float)
            for old in [k for k in self._grid if abs(k - cell) > 1]:
                del self._grid[old]
        return force


def span_steps(horizon, period):
    """Return how many steps a prediction of `horizon` s (see `prediction_span`) takes at most."""
    return math.ceil((MAX_AGE + horizon) / period) + 2


@compiled(inline='always')     # inlined in the fused tick, as the code it replaced
def prediction_span(measured_at, t, horizon, period, inertia_hold, middles):
    """
    Return ``(start, steps, h, hold)`` of the prediction at `t` (s); fill ``middles[:steps]``.

    The prediction of a state measured at `measured_at` (s) starts there, but no earlier than
    MAX_AGE before `t` and no later than `t`, and runs to ``t + horizon`` in `steps` equal
    steps of `h` s, the fewest no longer than `period`; ``middles[k]`` is the middle of step
    k, or `t` where earlier (the applied pressures before `t` are taken as the estimate at
    `t`); `hold`: the steps over which M, g and C qd are held (`inertia_hold` s, at least
    one). `middles`: at least `span_steps` long. The one definition of `Compensation.predict`
    and of the fused tick (control/fused_tick.py).
    """
    start = min(max(measured_at, t - MAX_AGE), t)
    steps = max(math.ceil((t + horizon - start) / period - 1e-9), 1)
    h = (t + horizon - start) / steps
    for k in range(steps):
        middles[k] = max(start + (k + 0.5) * h, t)
    return start, steps, h, max(int(inertia_hold / h), 1)


@compiled(inline='always')
def grid_cell(t_act, t0, period):
    """
    Return ``(cell, share)``: the cell of the grid of `period` s from `t0` that holds `t_act`.

    `cell` (int) counts the periods from `t0` to `t_act` (s), `share` is the place of `t_act`
    between grid times `cell` and ``cell + 1``. The lead's feed-forward grid, in
    `Compensation.effort` (as Python) and in the fused tick.
    """
    cell, share = divmod((t_act - t0) / period, 1.0)
    return int(cell), share


@compiled()
def lead_kernel(tau, early, late, share, gain, low, high, out):
    """
    Fill `out` with the law's force `tau` clamped to ``[low, high]``, plus the lead (N).

    `early`, `late`: the forces of perfect tracking at the grid times around ``t + delay``
    (clamped here too), `share` its place between them, `gain` = time constant / period. A
    NaN in `tau` stays NaN (Numba's ``max(x, b)`` returns `x` when it is NaN).
    """
    for i in range(tau.size):
        lo, hi = low[i], high[i]
        first = min(max(early[i], lo), hi)
        rise = min(max(late[i], lo), hi) - first
        middle = first + share * rise
        out[i] = min(max(tau[i], lo), hi) + min(max(gain * rise, middle - hi), middle - lo)


_spanner = cached_entry_point(prediction_span, 0.0, 0.0, 1.0, 1.0, 0.0,
                              np.zeros(span_steps(1.0, 1.0)))
_leader = cached_entry_point(lead_kernel, np.zeros(1), np.zeros(1), np.zeros(1), 0.0, 0.0,
                             np.zeros(1), np.zeros(1), np.zeros(1))
