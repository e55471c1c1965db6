"""
Actuation: generalized forces to PMA pressures and back (continuum-model.md, section 6).

A pneumatic muscle actuator (PMA) pushes along its length with force ``area * (p - deadzone)``
once its gauge pressure ``p`` (Pa) passes the dead zone, and with no force below it; it cannot
pull. Forces are in newtons, areas in m^2, pressures in pascals. Parameters are scalars or
per-PMA arrays and broadcast against the force or pressure vector.

A real PMA's effective area falls as it extends: `area_factor` scales the area linearly in
the PMA's length change (the controller's ``output.area_slope``, the simulator's
``pma.area_slope``, sim/pma_traits.py). The force ``area * area_factor(q) * (p - deadzone)``
inverts exactly, as ``tau / (area * factor) + deadzone``, wherever the factor is positive:
`ActuationMap.area_at` gives the effective area at q, which `pressure` and `force` take.
"""


import numpy as np

from continuum_ctrl.numerics.clipping import clip
from continuum_ctrl.numerics.jit import cached_entry_point, compiled
from continuum_ctrl.params import ConfigError


def force_from_pressure(p, area, deadzone):
    """Return the PMA force (N) at gauge pressure `p` (Pa): ``area * max(p - deadzone, 0)``."""
    return area * np.maximum(np.asarray(p, dtype=float) - deadzone, 0.0)


def area_factor(q, slope, stroke):
    """
    Return the effective area over the nominal one at the length changes `q` (m).

    ``1 - slope * q / stroke``: the area falls linearly, by the share `slope` of itself over
    the stroke `stroke` (m, the section's ``max_extension``); q = 0 is the rest length.
    """
    return 1.0 - slope * np.asarray(q, dtype=float) / stroke


def clamp_effort(tau, limits):
    """Return `tau` clamped to ``[-limits, limits]`` per joint (inf: unbounded)."""
    return clip(tau, np.negative(limits), limits)


class ActuationMap:
    """
    Validated PMA parameters for `n` actuators, with both directions of the pressure map.

    `area` (m^2, > 0), `deadzone` (Pa, >= 0), `p_min` <= `p_max` (Pa): scalars or n-vectors.
    `slope` (n,) and `stroke` (n,), m: the area falls as `area_factor` (`slope` None: it does
    not, `area_at` is `area`). Errors name the parameter as ``<prefix>.area`` etc. (ROS:
    ``output.area``). The force range (`force_range`, `effort_range`) is the rest length's.
    """

    def __init__(self, n, area, deadzone, p_min, p_max, prefix='output', slope=None,
                 stroke=None):
        self.n = n
        values = {}
        for key, value, low in (('area', area, 0.0), ('deadzone', deadzone, None),
                                ('p_min', p_min, None), ('p_max', p_max, None)):
            values[key] = self._vector(f'{prefix}.{key}', value, n, low)
        if np.any(values['deadzone'] < 0.0):
            raise ConfigError(f'{prefix}.deadzone', f"must be >= 0, got {deadzone!r}")
        if np.any(values['p_min'] > values['p_max']):
            raise ConfigError(f'{prefix}.p_min', f'must be <= {prefix}.p_max, got '
                                                 f'{p_min!r} > {p_max!r}')
        self.area = values['area']
        self.deadzone = values['deadzone']
        self.p_min = values['p_min']
        self.p_max = values['p_max']
        self.slope, self.stroke = slope, stroke
        self._falloff = None if slope is None else np.asarray(slope / stroke, dtype=float)
        self._low, self._high = self.force(self.p_min), self.force(self.p_max)
        self._pressure = _pressure_map()

    @staticmethod
    def _vector(key, value, n, low):
        try:
            array = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
        except (TypeError, ValueError):
            raise ConfigError(key, f'must be a number or {n} numbers, got {value!r}') from None
        if not np.all(np.isfinite(array)):
            raise ConfigError(key, f'must be finite, got {value!r}')
        if low is not None and np.any(array <= low):
            raise ConfigError(key, f'must be > {low}, got {value!r}')
        return array

    def falloff(self):
        """Return ``slope / stroke`` per PMA, 1/m: the area's relative fall per metre (n,)."""
        return np.zeros(self.n) if self._falloff is None else self._falloff

    def area_at(self, q, out=None):
        """
        Return the effective area per PMA (m^2) at the length changes `q` (n,), m.

        ``area (1 - slope q / stroke)``; `area` itself (no copy) where the area is constant.
        """
        if self.slope is None:
            return self.area
        return np.multiply(self.area, area_factor(q, self.slope, self.stroke), out=out)

    def pressure(self, tau, out=None, area=None):
        """
        Return the commanded pressure per PMA (Pa) for forces `tau` (N), shape (..., n).

        ``p = tau/area + deadzone`` where ``tau > 0``, ``p_min`` where ``tau <= 0`` or NaN (a
        PMA cannot pull, so it vents), then clamped to ``[p_min, p_max]``. One compiled call;
        `out`, if given, is a C-contiguous float64 array of `tau`'s shape; `area` (m^2, (n,)):
        the effective area (`area_at`), default the nominal one.
        """
        tau = np.ascontiguousarray(tau, dtype=float)
        if tau.shape[-1:] != (self.n,):
            raise ValueError(f'expected forces of {self.n} PMAs, got shape {tau.shape}')
        out = np.empty_like(tau) if out is None else out
        self._pressure(tau.reshape(-1, self.n), self.area if area is None else area,
                       self.deadzone, self.p_min, self.p_max, out.reshape(-1, self.n))
        return out

    def force(self, p, area=None):
        """
        Return the PMA forces (N) at pressures `p` (Pa); see `force_from_pressure`.

        `area` (m^2, (n,)): the effective area (`area_at`), default the nominal one.
        """
        return force_from_pressure(p, self.area if area is None else area, self.deadzone)

    def force_range(self):
        """Return the smallest and largest force (N) each PMA makes within ``[p_min, p_max]``."""
        return self._low.copy(), self._high.copy()

    def effort_range(self, limits=np.inf):
        """
        Return the bounds (N) of `clamp_effort`: ``[-limits, limits]`` within the force range.

        PMAs only push, so the range lies in ``force_range()``, whose lower end, the force at
        ``p_min``, wins over `limits` (limits >= 0).
        """
        return self._low, np.maximum(self._low, np.minimum(limits, self._high))

    def clamp_effort(self, tau, limits=np.inf):
        """
        Return `tau` clamped to ``[-limits, limits]`` (limits >= 0) and to the force range.

        The bounds are `effort_range`. After this clamp ``force(pressure(tau)) == tau``
        whenever ``p_min <= deadzone``.
        """
        return clip(tau, *self.effort_range(limits))


@compiled()
def pressure_kernel(tau, area, deadzone, p_min, p_max, out):
    """Fill `out` (m, n) with the pressures (Pa) of forces `tau` (m, n), N; see `pressure`."""
    for row in range(tau.shape[0]):
        for i in range(tau.shape[1]):
            force = tau[row, i]
            p = force / area[i] + deadzone[i] if force > 0.0 else p_min[i]
            out[row, i] = min(max(p, p_min[i]), p_max[i])


_pressure_map = cached_entry_point(pressure_kernel, np.zeros((1, 1)), np.zeros(1),
                                   np.zeros(1), np.zeros(1), np.zeros(1), np.zeros((1, 1)))
