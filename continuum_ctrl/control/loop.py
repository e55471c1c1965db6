"""
The controller's cycle without ROS: watchdog, reference, computed torque, limits, command.

    loop = ControlLoop(model, settings)
    loop.set_state(q, qd, t)     # a validated measurement (model order), t: receive time, s
    command = loop.tick(t)       # in `settings.joints` order: N, N m or Pa

Until `resume_count` consecutive valid states have arrived, and whenever the last one is older
than `state_timeout`, `tick` returns the safe command: zero effort or `p_min` (vent), or for
``safe_mode: hold`` gravity plus elastic compensation at the last valid state. On every
(re)start the reference is anchored at the measured pose and blends in from it over
`reference.blend_time`. Efforts are clamped to `limits.effort` (and to what the PMAs can push),
rate-limited to `limits.effort_rate`, and a non-finite effort gives the safe command. In
pressure mode, `output.time_constant` and `output.delay` compensate the valves' lag and dead
time (control/compensation.py); the limits apply to the compensated command.

A low-pass on measured velocities (`velocity_filter`) matters for PMA arms: their damping acts
on a few grams of generalized inertia, so cancelling ``D qd`` with a velocity measured a few
ms ago closes a loop of gain about one at high frequency, which chatters at 500 Hz.
"""

import numpy as np

from continuum_ctrl.config import ConfigError
from continuum_ctrl.control.actuation import clamp_effort
from continuum_ctrl.control.compensation import clamped_sample, Compensation
from continuum_ctrl.control.computed_torque import ComputedTorqueLaw
from continuum_ctrl.control.references import Hold, MinimumJerk, Sinusoid, Waypoints

#: loop status: no valid state yet, controlling, or safe command after a state timeout
WAITING, ACTIVE, STALE = 'waiting', 'active', 'stale'


def build_reference(spec, q_start):
    """Return the reference of a ReferenceSpec on a time axis starting at 0 at `q_start`."""
    start = q_start if spec.position is None else spec.position
    if spec.kind == 'hold':
        return Hold(start)
    if spec.kind == 'sinusoid':
        return Sinusoid(start, spec.amplitude, spec.frequency, spec.phase)
    if spec.kind == 'min_jerk':
        return MinimumJerk(q_start, spec.position, 0.0, spec.duration)
    if spec.times is None or len(spec.times) == 0:
        return Hold(q_start)
    return Waypoints(np.concatenate(([0.0], spec.times)), np.vstack((q_start, spec.positions)))


class Anchored:
    """
    A reference started at time `t0`, blended in from the measured pose `q_start`.

    ``q_d(t) = ref(t - t0) + (q_start - ref(0)) (1 - s)``, with ``s`` the minimum-jerk ramp
    from 0 to 1 over `blend_time` seconds, so the desired pose starts at the measured one and
    stays C2.
    """

    def __init__(self, reference, t0, q_start, blend_time):
        self.reference = reference
        self.t0 = t0
        self.blend_time = blend_time
        self.offset = np.asarray(q_start, dtype=float) - reference.sample(0.0)[0]
        self.out = tuple(np.zeros(len(self.offset)) for _ in range(3))

    def sample(self, t):
        """Return ``(q_d, qd_d, qdd_d)`` at time `t` (s, same clock as `t0`)."""
        elapsed = max(t - self.t0, 0.0)
        q, qd, qdd = self.reference.sample(elapsed)
        if elapsed >= self.blend_time:
            return q, qd, qdd
        q_out, qd_out, qdd_out = self.out
        x, T = elapsed / self.blend_time, self.blend_time
        fade = 1.0 - x ** 3 * (10.0 + x * (-15.0 + 6.0 * x))
        dfade = -x ** 2 * (30.0 + x * (-60.0 + 30.0 * x)) / T
        ddfade = -x * (60.0 + x * (-180.0 + 120.0 * x)) / T ** 2
        np.multiply(self.offset, fade, out=q_out)
        q_out += q
        np.multiply(self.offset, dfade, out=qd_out)
        qd_out += qd
        np.multiply(self.offset, ddfade, out=qdd_out)
        qdd_out += qdd
        return self.out


class ControlLoop:
    """
    One controller: state in, command out; arrays in model order unless said otherwise.

    After each `tick`: `q`, `qd` (last valid state), `q_des`, `qd_des` (reference, clamped to
    the joint limits), `effort` (generalized force sent, or implied by the safe command) and
    `command` (joints order) describe the cycle; `events` collects transitions to log once.
    """

    def __init__(self, model, settings):
        self.model = model
        n = model.n
        self.law = ComputedTorqueLaw(model, settings.kp, settings.kd)
        self.low, self.high = (np.asarray(b, dtype=float) for b in model.joint_limits())
        self._limits(settings)
        self.status = WAITING
        self.reference = None
        self.last_state_time = -np.inf
        self.valid_streak = 0
        self.nonfinite = 0
        self.events = []
        self.q, self.qd = np.zeros(n), np.zeros(n)
        self.q_des, self.qd_des, self.qdd_des = np.zeros(n), np.zeros(n), np.zeros(n)
        self.effort = np.zeros(n)
        self.command = np.zeros(n)
        self._inside = np.zeros(n, dtype=bool)
        self._nan = np.full(n, np.nan)
        self._tau = np.zeros(n)
        self._failing = False
        self._sent_time = None
        self._pressures = np.zeros(n)
        self._safe_command()

    def configure(self, settings, reanchor=False):
        """Take new validated settings (gains, limits, reference, ...) from the next tick on."""
        self.law.set_gains(settings.kp, settings.kd)
        self._limits(settings)
        if reanchor and self.status == ACTIVE:
            self.anchor(self.last_state_time)

    def _limits(self, settings):
        """Take `settings`; precompute the effort range and the largest change per tick."""
        self.settings = settings
        limit = settings.effort_limit
        self._effort_range = (settings.actuation.effort_range(limit)
                              if settings.actuation is not None else (-limit, limit))
        step = settings.effort_rate * settings.period
        self._step = step if np.isfinite(step).any() else None     # None: no rate limit
        old = getattr(self, 'compensation', None)     # kept while it fits: its estimate
        if not any(settings.compensation):
            self.compensation = None
        elif old is None or (old.time_constant, old.delay, old.period) != (
                *settings.compensation, settings.period):
            self.compensation = Compensation(self.model, self.law, settings.actuation,
                                             *settings.compensation, settings.period)
        else:
            old.actuation = settings.actuation

    def anchor(self, t):
        """Restart the configured reference at time `t` from the last measured pose."""
        spec = self.settings.reference
        self.reference = Anchored(build_reference(spec, self.q), t, self.q, spec.blend_time)

    def follow(self, times, positions, velocities=None, accelerations=None, t=0.0):
        """
        Replace the reference by waypoints (model order; times in s after `t`, all > 0).

        The measured state is prepended at `t`. Raises ConfigError (reference kept) for bad
        waypoints; a waypoint outside the joint limits is refused too, and so are waypoints
        whose interpolation overflows (huge values a few ns apart on unbounded joints).
        """
        positions = np.asarray(positions, dtype=float)
        outside = (positions < self.low) | (positions > self.high)
        if np.any(outside):
            raise ConfigError('trajectory.positions', 'lie outside the joint limits')
        with_start = [np.vstack((self.q, positions))]
        if velocities is not None:
            with_start.append(np.vstack((self.qd, velocities)))
            if accelerations is not None:
                with_start.append(np.vstack((np.zeros(self.model.n), accelerations)))
        knots = np.concatenate(([0.0], times))
        checked = np.union1d(knots, (knots[1:] + knots[:-1]) / 2)
        try:
            reference = Waypoints(knots, *with_start)
            finite = all(np.all(np.isfinite(part)) for s in checked
                         for part in reference.sample(s))
        except ConfigError:
            raise
        except (ArithmeticError, ValueError) as exc:
            raise ConfigError('trajectory', f'cannot be interpolated: {exc}') from None
        if not finite:
            raise ConfigError('trajectory', 'its interpolation is not finite')
        self.reference = Anchored(reference, t, self.q, 0.0)

    def set_state(self, q, qd, t):
        """
        Take a validated measurement at receive time `t` (s); may (re)start control.

        With `velocity_filter` > 0 the velocity passes a first-order low-pass while active.
        The streak of valid states needed to resume restarts after a gap longer than
        `state_timeout`: the states must be consecutive and fresh.
        """
        self.q[:] = q
        dt, filter_time = t - self.last_state_time, self.settings.velocity_filter
        if dt > self.settings.state_timeout:
            self.valid_streak = 0
        if self.status == ACTIVE and filter_time > 0.0 and dt > 0.0:
            self.qd += dt / (dt + filter_time) * (qd - self.qd)
        else:
            self.qd[:] = qd
        self.last_state_time = t
        self.valid_streak += 1
        if self.status != ACTIVE and self.valid_streak >= self.settings.resume_count:
            self.events.append(('info', 'valid joint states: control active, reference '
                                        'anchored at the measured pose'))
            self.status = ACTIVE
            self.anchor(t)

    def set_pressures(self, pressures, t):
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

    def reject_state(self):
        """Count a rejected measurement against the streak needed to resume."""
        self.valid_streak = 0

    def tick(self, t):
        """Return the command for time `t` (s) in joints order (an internal buffer)."""
        if self.compensation is not None and self._sent_time is not None:
            self._pressures[self.settings.order] = self.command
            self.compensation.sent(self._pressures, self._sent_time)
        self._sent_time = t
        if self.status == ACTIVE and t - self.last_state_time > self.settings.state_timeout:
            self.status = STALE
            self.valid_streak = 0
            self.events.append(('warn', f'no valid joint states for more than '
                                        f'{self.settings.state_timeout} s: safe command '
                                        f"('{self.settings.safe_mode}')"))
        if self.status != ACTIVE:
            return self._safe_command()
        clamped_sample(self.reference, t, self.low, self.high,
                       (self.q_des, self.qd_des, self.qdd_des), self._inside)
        problem = 'a non-finite effort'
        try:
            if self.compensation is None:
                tau = self.law(self.q, self.qd, self.q_des, self.qd_des, self.qdd_des)
            else:
                tau = self.compensation.effort(self.q, self.qd, self.last_state_time,
                                               self.reference, t,
                                               (self.low, self.high), self._effort_range)
        except Exception as exc:  # noqa: B902 - any failure must end in the safe command
            tau, problem = self._nan, f'{type(exc).__name__}: {exc}'
        if not np.isfinite(tau).all():
            self.nonfinite += 1
            if not self._failing:
                self.events.append(('error', f'the control law gave {problem}: safe '
                                             'command'))
            self._failing = True
            return self._safe_command()
        self._failing = False
        low, high = self._effort_range
        if self._step is None:
            np.clip(tau, low, high, out=self.effort)
        else:
            np.clip(tau, low, high, out=self._tau)
            np.clip(self._tau, self.effort - self._step, self.effort + self._step,
                    out=self.effort)
        return self._output()

    def _safe_command(self):
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

    def _output(self):
        settings = self.settings
        output = self.effort
        if settings.actuation is not None:
            output = settings.actuation.pressure(self.effort)
        return np.take(output, settings.order, out=self.command)
