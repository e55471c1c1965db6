"""
Valve dynamics of pneumatic muscle actuators: the pressure applied behind a commanded one.

    valves = Actuator(time_constant=0.02, delay=0.005, max_rate=0.0, initial=p0)   # per PMA
    valves.command(p_cmd, t)        # a commanded pressure (Pa) held from time t (s) on
    p_applied = valves.advance(t)   # the applied pressures at time t (s)
    ahead = valves.pressures_at(times)   # at later times, with the commands pending (Pa)

Each PMA's applied pressure ``p_a`` follows ``u(t) = p_cmd(t - delay)`` through a first-order
lag ``T dp_a/dt = u - p_a``, slew-limited to ``|dp_a/dt| <= max_rate`` (Pa/s): proportional
pressure regulators behind tubing. Commands are held until the next one (zero-order hold), so
``u`` is piecewise constant and `advance` integrates exactly between its switching times: a
ramp at `max_rate` while ``|u - p_a| > T max_rate``, then the exponential
``u + (p_a - u) exp(-t/T)``. Any delay is exact, not only a multiple of a step. ``T = 0``: no
lag; ``max_rate = 0``: no slew limit; all zero: the applied pressure is the command.
"""

from collections import deque

import numpy as np


def relax(p, u, duration, time_constant, max_rate):
    """
    Return the applied pressures after `duration` s of constant input `u` from `p` (Pa).

    The exact solution of ``dp/dt = clip((u - p)/T, -R, R)`` (``R = inf`` when `max_rate`
    is 0): a ramp at ``R`` until ``|u - p| = T R``, then exponential decay towards `u`.
    """
    gap = u - p
    rest = duration
    if max_rate > 0.0:
        ramp = np.minimum(np.maximum(np.abs(gap) - time_constant * max_rate, 0.0) / max_rate,
                          duration)
        p = p + np.sign(gap) * max_rate * ramp
        rest = duration - ramp
    if time_constant > 0.0:
        return u + (p - u) * np.exp(-rest / time_constant)
    return np.where(rest > 0.0, u, p)


class Actuator:
    """
    Applied pressures (Pa) of `initial`'s PMAs; see the module documentation.

    `pressure` is the applied pressure at time `t` (None before the first `advance`, which
    only sets the clock); `time_constant` (s), `delay` (s) and `max_rate` (Pa/s) are >= 0.
    """

    def __init__(self, time_constant, delay, max_rate, initial):
        self.time_constant = float(time_constant)
        self.delay = float(delay)
        self.max_rate = float(max_rate)
        self.pressure = np.array(initial, dtype=float)
        self.input = self.pressure.copy()
        self.pending = deque()          # (time the input switches, new input), time order
        self.t = None

    @property
    def dynamic(self):
        """Return whether the applied pressure differs from the command at all."""
        return self.time_constant > 0.0 or self.delay > 0.0 or self.max_rate > 0.0

    def reset(self, pressure, t=None):
        """Forget the pending commands; the applied pressure and the input are `pressure`."""
        self.pressure[:] = pressure
        self.input[:] = pressure
        self.pending.clear()
        self.t = t

    def command(self, values, t):
        """Command `values` (Pa) from time `t` (s) on; they act from ``t + delay``."""
        self.pending.append((t + self.delay, np.array(values, dtype=float)))

    def advance(self, t):
        """Integrate exactly up to time `t` (s) and return the applied pressures there."""
        if self.t is None:
            self.t = t
        while self.pending and self.pending[0][0] <= t:
            switch, values = self.pending.popleft()
            self._relax_until(switch)
            self.input = values
        self._relax_until(t)
        return self.pressure

    def _relax_until(self, t):
        if t > self.t:
            self.pressure = relax(self.pressure, self.input, t - self.t, self.time_constant,
                                  self.max_rate)
            self.t = t

    def pressures_at(self, times):
        """
        Return the applied pressures (len(times), n) at `times` (s), without advancing.

        `times` increase from the clock ``t`` on; the commands pending then act as in
        `advance`. Without a slew limit only (the controller's valve model): the lag is then
        linear, so the response is the free decay towards the current input plus a step
        response per pending command, one expression for all times.
        """
        if self.max_rate > 0.0:
            raise ValueError('pressures_at: valves without a slew limit only (max_rate 0)')
        times = np.asarray(times, dtype=float)
        switches = np.array([switch for switch, _ in self.pending])
        inputs = np.array([self.input, *(values for _, values in self.pending)])
        elapsed = (times - self.t)[:, None]
        after = np.maximum(times[:, None] - switches, 0.0)     # (len(times), pending)
        if self.time_constant > 0.0:
            decay = np.exp(-elapsed / self.time_constant)
            rise = -np.expm1(-after / self.time_constant)
        else:
            decay = (elapsed <= 0.0).astype(float)
            rise = (after > 0.0).astype(float)
        return (self.input + (self.pressure - self.input) * decay
                + rise @ np.diff(inputs, axis=0))
