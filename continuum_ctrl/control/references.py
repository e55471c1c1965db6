"""
Reference trajectories: ``sample(t) -> (q_d, qd_d, qdd_d)``, each an (n,) float64 array.

Time ``t`` is in seconds on the caller's clock; positions are in the model's generalized
coordinates (radians, or metres for PMA lengths). In every generator ``qd_d`` is the exact time
derivative of ``q_d`` and ``qdd_d`` that of ``qd_d`` (away from the documented joins where a
trajectory starts or ends). Returned arrays are read-only; copy them before changing them.
Bad arguments raise ConfigError naming the argument as ``<name>.<argument>``. Each class's
`layout` gives its data to its compiled sampler (control.samplers), which the control loop
calls; `sample` here is the reference arithmetic, and the tests' oracle.
"""

from abc import ABC, abstractmethod
from bisect import bisect_right

import numpy as np

from continuum_ctrl.control import samplers
from continuum_ctrl.control.samplers import (HoldData, MinimumJerkData, MultisineData,
                                             SinusoidData, SplineData)
from continuum_ctrl.numerics import ramps
from continuum_ctrl.params import ConfigError


def _array(value, key, shape=(None,)):
    """
    Return `value` as a finite float64 array of `shape` (None entries: any length).

    ``shape=None`` accepts a scalar or a 1-D sequence and returns it 1-D.
    """
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ConfigError(key, f'must be numbers, got {value!r}') from exc
    if shape is None:
        array, shape = np.atleast_1d(array), (None,)
    if array.ndim != len(shape) or any(w not in (None, a) for w, a in zip(shape, array.shape)):
        want = ' x '.join('m' if w is None else str(w) for w in shape)
        raise ConfigError(key, f'must be an array of shape ({want}), got shape {array.shape}')
    if not np.all(np.isfinite(array)):
        raise ConfigError(key, f'must be finite, got {array.tolist()}')
    return array


def _inside(lowest, highest, low, high):
    """
    Return whether ``[lowest, highest]`` lies in ``[low, high]`` (per joint; arrays or scalars).

    With a margin of 1e-9 relative: a sample computed from these bounds may round past them.
    """
    margin = 1e-9 * (np.abs(lowest) + np.abs(highest))
    return bool(np.all(lowest - margin >= low) and np.all(highest + margin <= high))


def _contiguous(*arrays):
    return [np.ascontiguousarray(a, dtype=float) for a in arrays]


def _frozen(*arrays):
    for array in arrays:
        array.flags.writeable = False
    return arrays


class Reference(ABC):
    """A desired joint trajectory of ``n`` coordinates."""

    n: int

    @abstractmethod
    def sample(self, t):
        """Return ``(q_d, qd_d, qdd_d)`` at time `t` (s), each (n,)."""

    def within(self, low, high):
        """Return whether every sample's ``q_d`` lies in ``[low, high]`` (False: not known)."""
        return False

    def layout(self):
        """Return the data of its compiled sampler (control.samplers), or None (none)."""
        return None


class Hold(Reference):
    """Hold a fixed position `q` with zero velocity and acceleration."""

    def __init__(self, q, name='reference'):
        q = _array(q, f'{name}.position').copy()
        self.n = q.size
        self._sample = _frozen(q, np.zeros(self.n), np.zeros(self.n))

    def sample(self, t):
        """Return the held position, zero velocity and zero acceleration."""
        return self._sample

    def within(self, low, high):
        """Return whether the held position lies in ``[low, high]``."""
        q = self._sample[0]
        return _inside(q, q, low, high)

    def layout(self):
        """Return the `HoldData` of the held position."""
        return HoldData(*_contiguous(self._sample[0]))


class Sinusoid(Reference):
    """
    Per-joint sinusoid ``q_d = center + amplitude * sin(2 pi frequency_hz t + phase)``.

    `center`, `amplitude` (model units), `frequency_hz` (Hz, >= 0) and `phase` (rad) are
    scalars or per-joint sequences; scalars broadcast to the joints of `center`, or to `n`.
    """

    def __init__(self, center, amplitude, frequency_hz, phase=0.0, n=None, name='reference'):
        keys = [f'{name}.{k}' for k in ('center', 'amplitude', 'frequency_hz', 'phase')]
        values = [_array(v, k, shape=None)
                  for v, k in zip((center, amplitude, frequency_hz, phase), keys)]
        sizes = {v.size for v in values if v.size != 1} | ({n} if n is not None else set())
        if len(sizes) > 1:
            raise ConfigError(name, f'center, amplitude, frequency_hz and phase have '
                                    f'different lengths {[v.size for v in values]}')
        self.n = sizes.pop() if sizes else 1
        self.center, self.amplitude, frequency, self.phase = (
            np.broadcast_to(v, (self.n,)).astype(float) for v in values)
        if np.any(frequency < 0.0):
            raise ConfigError(keys[2], f'must be >= 0, got {frequency.tolist()}')
        self.omega = 2.0 * np.pi * frequency
        self._rate = self.amplitude * self.omega            # velocity amplitude
        self._curvature = -self.omega ** 2                   # qdd = curvature (q - center)

    def sample(self, t):
        """Return position, velocity and acceleration of the sinusoid at `t`."""
        angle = self.omega * t
        angle += self.phase
        s = self.amplitude * np.sin(angle)
        return _frozen(self.center + s, self._rate * np.cos(angle), self._curvature * s)

    def within(self, low, high):
        """Return whether ``center +- amplitude`` lies in ``[low, high]``."""
        swing = np.abs(self.amplitude)
        return _inside(self.center - swing, self.center + swing, low, high)

    def layout(self):
        """Return the `SinusoidData` of the sinusoid."""
        return SinusoidData(*_contiguous(self.center, self.amplitude, self.omega, self.phase,
                                         self._rate, self._curvature))


class Multisine(Reference):
    """
    Per-joint sums of sines at distinct frequencies, for identification runs.

    Joint ``j`` moves by ``sum_k a sin(2 pi f_jk t + phi_jk)`` around `center` with ``a =
    amplitude_j / components``, so it never leaves ``center +- amplitude``. The
    ``n * components`` frequencies interleave evenly over ``band = (f_low, f_high)`` Hz (joint
    ``j``, component ``k``: index ``k n + j``), so no two joints share one and the excitation
    is band-limited; Schroeder phases keep each joint's sum from peaking.
    """

    def __init__(self, center, amplitude, band, components=4, n=None, name='reference'):
        center = _array(center, f'{name}.center', shape=None)
        amplitude = _array(amplitude, f'{name}.amplitude', shape=None)
        low, high = _array(band, f'{name}.band', (2,))
        if not 0.0 < low < high:
            raise ConfigError(f'{name}.band', f'must be [f_low, f_high] Hz with 0 < f_low < '
                                              f'f_high, got {[low, high]}')
        if int(components) != components or components < 1:
            raise ConfigError(f'{name}.components', f'must be an integer >= 1, got '
                                                    f'{components!r}')
        self.n = n or max(center.size, amplitude.size)
        self.center, amplitude = (np.broadcast_to(v, (self.n,)).astype(float)
                                  for v in (center, amplitude))
        m = int(components)
        index = np.arange(m)[None, :] * self.n + np.arange(self.n)[:, None]      # (n, m)
        step = (high - low) / max(self.n * m - 1, 1)
        self.omega = 2.0 * np.pi * (low + step * index)
        self.phase = (-np.pi * np.arange(m) * (np.arange(m) + 1) / m)[None, :] + (
            2.0 * np.pi * np.arange(self.n) / self.n)[:, None]
        self.weight = np.repeat(amplitude[:, None] / m, m, axis=1)

    def sample(self, t):
        """Return position, velocity and acceleration of the sums at `t`."""
        angle = self.omega * t + self.phase
        s = self.weight * np.sin(angle)
        c = self.weight * self.omega * np.cos(angle)
        return _frozen(self.center + s.sum(axis=1), c.sum(axis=1),
                       -(s * self.omega ** 2).sum(axis=1))

    def within(self, low, high):
        """Return whether ``center +- amplitude`` lies in ``[low, high]``."""
        swing = np.abs(self.weight).sum(axis=1)
        return _inside(self.center - swing, self.center + swing, low, high)

    def layout(self):
        """Return the `MultisineData` of the sums."""
        return MultisineData(*_contiguous(self.center, self.omega, self.phase, self.weight))


#: the ramps (``(s, s', s'')`` at `elapsed` s of `duration` s): their one definition is the
#: compiled kernels (numerics.ramps, control.samplers), run here as Python
minimum_jerk_ramp = ramps.minimum_jerk_ramp.py_func
blend_ramp = samplers.blend_ramp.py_func


class MinimumJerk(Reference):
    """
    Minimum-jerk point-to-point move from `q0` to `q1`, starting at `t0` and lasting `duration`.

    ``q_d = q0 + (q1 - q0) s`` with ``s = minimum_jerk_ramp(t - t0, duration)``: zero velocity
    and acceleration at both ends; holds `q0` before `t0` and `q1` after ``t0 + duration``.
    The whole trajectory is C2.
    """

    def __init__(self, q0, q1, t0, duration, name='reference'):
        self.q0 = _array(q0, f'{name}.start')
        self.n = self.q0.size
        self.delta = _array(q1, f'{name}.goal', (self.n,)) - self.q0
        self.t0 = float(_array(t0, f'{name}.start_time', ()))
        self.duration = float(_array(duration, f'{name}.duration', ()))
        if self.duration <= 0.0:
            raise ConfigError(f'{name}.duration', f'must be > 0, got {self.duration}')

    def sample(self, t):
        """Return position, velocity and acceleration of the move at `t`."""
        s, ds, dds = minimum_jerk_ramp(t - self.t0, self.duration)
        return _frozen(self.q0 + s * self.delta, ds * self.delta, dds * self.delta)

    def within(self, low, high):
        """Return whether both ends lie in ``[low, high]`` (the move runs between them)."""
        ends = (self.q0, self.q0 + self.delta)
        return _inside(np.minimum(*ends), np.maximum(*ends), low, high)

    def layout(self):
        """Return the `MinimumJerkData` of the move."""
        return MinimumJerkData(*_contiguous(self.q0, self.delta), self.t0, self.duration)


class Waypoints(Reference):
    """
    Interpolation through timed waypoints, like ``trajectory_msgs/JointTrajectory``.

    `times` (s, strictly increasing, m entries) and `positions` (m, n). The curve between them:
    - positions only: a C2 cubic spline with zero velocity at both ends (``clamped``);
    - with `velocities` (m, n): cubic Hermite, C1, passing each point at its velocity;
    - with `velocities` and `accelerations` (m, n): quintic Hermite, C2.
    Before ``times[0]`` the first point is held and after ``times[-1]`` the last (zero velocity
    and acceleration there). To start from the measured state, prepend it as a waypoint at the
    current time. A single waypoint is held.
    """

    def __init__(self, times, positions, velocities=None, accelerations=None,
                 name='trajectory'):
        self.times = _array(times, f'{name}.times')
        m = self.times.size
        if m == 0:
            raise ConfigError(f'{name}.times', 'must hold at least one waypoint')
        if np.any(np.diff(self.times) <= 0.0):
            raise ConfigError(f'{name}.times', f'must be strictly increasing, got '
                                               f'{self.times.tolist()}')
        points = [_array(positions, f'{name}.positions', (m, None))]
        n = points[0].shape[1]
        if n == 0:
            raise ConfigError(f'{name}.positions', 'must hold one position per joint')
        if accelerations is not None and velocities is None:
            raise ConfigError(f'{name}.accelerations', 'need velocities as well')
        for key, value in (('velocities', velocities), ('accelerations', accelerations)):
            if value is not None:
                points.append(_array(value, f'{name}.{key}', (m, n)))
        self.n = n
        self._knots = self.times.tolist()
        self._first = _frozen(points[0][0].copy(), np.zeros(n), np.zeros(n))
        self._last = _frozen(points[0][-1].copy(), np.zeros(n), np.zeros(n))
        if m == 1:
            return
        # imported here: SciPy's interpolate adds about 0.5 s to every node's start-up,
        # and only trajectories need it
        from scipy.interpolate import BPoly, CubicSpline, PPoly
        if len(points) == 1:
            spline = CubicSpline(self.times, points[0], bc_type='clamped', axis=0)
        else:
            spline = PPoly.from_bernstein_basis(
                BPoly.from_derivatives(self.times, np.stack(points, axis=1)))
        # per segment, coefficients of dt^(k-1) .. dt^0 for q, qd and qdd: (m-1, k-d, n)
        self._coefficients = [np.ascontiguousarray(np.moveaxis(spline.derivative(d).c, 1, 0))
                              for d in range(3)]
        self._exponents = np.arange(spline.c.shape[0] - 1, -1, -1.0)

    @property
    def end_time(self):
        """Return the time of the last waypoint (s)."""
        return float(self.times[-1])

    def pieces(self):
        """
        Return the polynomial pieces ``(knots, coefficients)`` of the interpolant (m > 1 points).

        Piece i holds from ``knots[i]`` to ``knots[i + 1]``; its ascending coefficients (k, n)
        are those of ``t - knots[i]`` [model units / s^j].
        """
        return self.times[:-1], self._coefficients[0][:, ::-1, :]

    def layout(self):
        """Return the `SplineData` of the interpolant (`HoldData` of a single waypoint)."""
        if self.times.size == 1:
            return HoldData(*_contiguous(self._first[0]))
        return SplineData(*_contiguous(self.times, *self._coefficients, self._exponents,
                                       self._first, self._last))

    def sample(self, t):
        """Return position, velocity and acceleration of the interpolant at `t`."""
        knots = self._knots
        if t < knots[0]:
            return self._first
        if t >= knots[-1]:
            return self._last
        i = bisect_right(knots, t) - 1
        powers = (t - knots[i]) ** self._exponents
        c0, c1, c2 = self._coefficients
        return _frozen(powers @ c0[i], powers[1:] @ c1[i], powers[2:] @ c2[i])
