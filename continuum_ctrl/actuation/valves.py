"""
Valve dynamics of pneumatic muscle actuators: the pressure applied behind a commanded one.

    valves = Actuator(time_constant=0.02, delay=0.005, max_rate=0.0, initial=p0)   # per PMA
    valves.command(p_cmd, t)        # a commanded pressure (Pa) held from time t (s) on
    p_applied = valves.advance(t)   # the applied pressures at time t (s)
    ahead = valves.pressures_at(times)   # at later times, with the commands pending (Pa)

Each PMA's applied pressure ``p_a`` follows ``u(t) = p_cmd(t - delay)`` through a first-order
lag ``T dp_a/dt = u - p_a``, slew-limited to ``|dp_a/dt| <= max_rate`` (Pa/s): proportional
pressure regulators behind tubing. Commands are held until the next one (zero-order hold), so
``u`` is piecewise constant and the solution is exact between its switching times: a ramp at
`max_rate` while ``|u - p_a| > T max_rate``, then the exponential ``u + (p_a - u) exp(-t/T)``.
Any delay is exact, not only a multiple of a step. ``T = 0``: no lag; ``max_rate = 0``: no
slew limit; all zero: the applied pressure is the command. `advance` and `pressures_at` run
one compiled walk through the times and the switches each: the controller's valve
compensation calls both every tick (about 1 us each, against 15-35 us for the same in NumPy).
"""

import math

import numpy as np

from continuum_ctrl.numerics.jit import cached_entry_point, compiled

#: rows of pending commands kept (more as needed): 50 ms of dead time at 1 kHz
PENDING_ROWS = 64


class Actuator:
    """
    Applied pressures (Pa) of `initial`'s PMAs; see the module documentation.

    `pressure` is the applied pressure at time `t` (None before the first `advance`, which
    only sets the clock); `pending` the number of commands not yet acting; `time_constant`
    (s), `delay` (s) and `max_rate` (Pa/s) are >= 0.
    """

    def __init__(self, time_constant, delay, max_rate, initial):
        self.time_constant = float(time_constant)
        self.delay = float(delay)
        self.max_rate = float(max_rate)
        self.pressure = np.array(initial, dtype=float)
        self.input = self.pressure.copy()
        self.t = None
        # pending commands, time order: switch times (s) and inputs (Pa) in the first rows
        self.pending = 0
        self._switches = np.zeros(PENDING_ROWS)
        self._inputs = np.zeros((PENDING_ROWS, self.pressure.size))
        self._now = np.zeros(1)
        self._row = np.zeros((1, self.pressure.size))
        self._walk = _lag_walk()        # compiled or loaded now, not at the first command
        self._advance = _advancer()

    @property
    def dynamic(self):
        """Return whether the applied pressure differs from the command at all."""
        return self.time_constant > 0.0 or self.delay > 0.0 or self.max_rate > 0.0

    def reset(self, pressure, t=None):
        """Forget the pending commands; the applied pressure and the input are `pressure`."""
        self.pressure[:] = pressure
        self.input[:] = pressure
        self.pending = 0
        self.t = t

    def command(self, values, t):
        """Command `values` (Pa) from time `t` (s) on; they act from ``t + delay``."""
        self.make_room()
        k = self.pending
        self._switches[k] = t + self.delay
        self._inputs[k] = values
        self.pending = k + 1

    def make_room(self):
        """Make sure the pending rows have room for one more command (doubling them if not)."""
        k = self.pending
        if k == self._switches.size:
            self._switches = np.concatenate((self._switches, np.zeros(k)))
            self._inputs = np.concatenate((self._inputs, np.zeros_like(self._inputs)))

    def advance(self, t):
        """
        Integrate exactly up to time `t` (s) and return the applied pressures there.

        The returned array is `pressure`, updated in place by the next `advance`.
        """
        if self.t is None:
            self.t = t
        self._now[0] = t
        self.pending = self._advance(self.t, self.pressure, self.input, self._switches,
                                     self._inputs, self.pending, self._now, self.time_constant,
                                     self.max_rate, self._row)
        self.t = max(self.t, t)
        return self.pressure

    def pressures_at(self, times):
        """
        Return the applied pressures (len(times), n) at `times` (s), without advancing.

        `times` increase from the clock ``t`` on (with no clock yet, from ``times[0]``); the
        commands pending then act as in `advance`.
        """
        times = np.ascontiguousarray(times, dtype=float)
        k = self.pending
        out = np.empty((times.size, self.pressure.size))
        if times.size:
            clock = times[0] if self.t is None else self.t      # as `advance`
            self._walk(clock, self.pressure, self.input, self._switches[:k], self._inputs[:k],
                       times, self.time_constant, self.max_rate, out)
        return out


@compiled()
def _relax(p, u, duration, time_constant, max_rate):
    """
    Return the applied pressure after `duration` s of constant input `u` from `p` (Pa).

    The exact solution of ``dp/dt = clip((u - p)/T, -R, R)`` (``R = inf`` when `max_rate`
    is 0): a ramp at ``R`` until ``|u - p| = T R``, then exponential decay towards `u`.
    """
    rest = duration
    if max_rate > 0.0:
        gap = u - p
        ramp = min(max(abs(gap) - time_constant * max_rate, 0.0) / max_rate, duration)
        p += math.copysign(max_rate * ramp, gap)
        rest -= ramp
    if time_constant > 0.0:
        return u + (p - u) * math.exp(-rest / time_constant)
    return u if rest > 0.0 else p


@compiled()
def lag_kernel(t, pressure, current, switches, inputs, times, time_constant, max_rate, out):
    """
    Fill `out` (len(times), n) with the applied pressures (Pa) at `times` (s, increasing).

    From `pressure` at clock `t` under input `current`; pending input ``inputs[j]`` from
    ``switches[j]`` on.
    """
    n = pressure.size
    clock = t
    j = 0
    for i in range(times.size):
        for k in range(n):
            out[i, k] = pressure[k] if i == 0 else out[i - 1, k]
        while True:
            end = times[i]
            switching = j < switches.size and switches[j] <= end
            if switching:
                end = switches[j]
            if end > clock:
                for k in range(n):
                    u = current[k] if j == 0 else inputs[j - 1, k]
                    out[i, k] = _relax(out[i, k], u, end - clock, time_constant, max_rate)
                clock = end
            if not switching:
                break
            j += 1


@compiled()
def advance_kernel(t, pressure, current, switches, inputs, pending, now, time_constant,
                   max_rate, row):
    """
    Move the valves from clock `t` to ``now[0]`` (s) in place; return the commands left pending.

    `pressure` and `current` (the input acting) are updated; the pending rows of `switches`
    and `inputs` that took effect by then are dropped (the rest move to the front); `row`
    (1, n) is work space.
    """
    if now[0] > t:
        lag_kernel(t, pressure, current, switches[:pending], inputs[:pending], now,
                   time_constant, max_rate, row)
        for k in range(pressure.size):
            pressure[k] = row[0, k]
    due = 0
    while due < pending and switches[due] <= now[0]:
        due += 1
    if due:
        for k in range(pressure.size):
            current[k] = inputs[due - 1, k]
        for j in range(pending - due):
            switches[j] = switches[j + due]
            for k in range(pressure.size):
                inputs[j, k] = inputs[j + due, k]
    return pending - due


_advancer = cached_entry_point(advance_kernel, 0.0, np.zeros(1), np.zeros(1), np.zeros(1),
                               np.zeros((1, 1)), 0, np.zeros(1), 0.0, 0.0, np.zeros((1, 1)))
_lag_walk = cached_entry_point(lag_kernel, 0.0, np.zeros(1), np.zeros(1), np.zeros(1),
                               np.zeros((1, 1)), np.zeros(1), 0.0, 0.0, np.zeros((1, 1)))
