"""
The continuum-arm spec: the `model` namespace of a continuum arm, validated once.

Per-section values are parallel arrays under ``model.sections`` (SI units): length ``L_i`` [m],
PMA radius ``r_i`` [m], mass ``m_i`` [kg], PMA stroke ``l_max_i`` [m], stiffness [N/m] and
damping [N s/m] per PMA, fixed-joint offset ``sigma_i`` [m] and twist ``gamma_i`` [rad],
PMA effective area [m^2]. Stiffness, damping and area take one value per section or one per PMA.
"""

from dataclasses import dataclass

import numpy as np

from continuum_ctrl.models.fields import (DEFAULT_BETA, DEFAULT_GRAVITY, DEFAULT_QUADRATURE,
                                          MODEL_FIELDS)
from continuum_ctrl.params import ConfigError, Reader

#: width of the smooth onset of the limit stiffening, as a share of the stroke l_max
LIMIT_ONSET = 0.05

MODEL_TYPES = ('continuum_cog', 'continuum_integral')

__all__ = ['DEFAULT_BETA', 'DEFAULT_QUADRATURE', 'ContinuumSpec', 'read_spec']


@dataclass(frozen=True)
class ContinuumSpec:
    """A validated continuum arm: per-section arrays (n,), per-PMA arrays (3n,), SI units."""

    kind: str
    length: np.ndarray
    radius: np.ndarray
    mass: np.ndarray
    max_extension: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    offset: np.ndarray
    twist: np.ndarray
    area: np.ndarray
    gravity: np.ndarray
    beta: np.ndarray
    joint_names: tuple
    quadrature: int
    limit_stiffness: float

    @property
    def sections(self):
        """Return the number of sections n."""
        return len(self.length)

    @property
    def stroke(self):
        """Return each PMA's stroke, its section's `max_extension`, m (3n,)."""
        return np.repeat(np.asarray(self.max_extension, dtype=float), 3)


def default_joint_names(sections):
    """Return ``section{i}_pma{j}`` for i = 1..sections, j = 1..3."""
    return [f'section{i}_pma{j}' for i in range(1, sections + 1) for j in range(1, 4)]


def _per_pma(reader, name, n, default=...):
    """Read one value per section or per PMA (>= 0); return it per PMA, shape (3n,)."""
    values = reader.numbers(name, default, low=0.0)
    if len(values) == n:
        return np.repeat(values, 3)
    if len(values) == 3 * n:
        return np.array(values)
    raise ConfigError(reader.key(name),
                      f'must have {n} entries (per section) or {3 * n} (per PMA), '
                      f'got {len(values)}')


def read_spec(spec):
    """
    Validate the nested `model` namespace of a continuum arm into a ContinuumSpec.

    Raises ConfigError naming the full key for a missing, unknown or malformed parameter.
    """
    top = Reader(spec, 'model')
    kind = top.string('type', choices=MODEL_TYPES)
    gravity = np.array(top.numbers('gravity', list(DEFAULT_GRAVITY), length=3))
    sec = top.namespace('sections')
    length = sec.numbers('length', low=0.0, strict_low=True)
    n = len(length)
    if n == 0:
        raise ConfigError(sec.key('length'), 'must list at least one section')
    radius = sec.numbers('radius', length=n, low=0.0, strict_low=True)
    mass = sec.numbers('mass', length=n, low=0.0, strict_low=True)
    lmax = sec.numbers('max_extension', length=n, low=0.0, strict_low=True)
    stiffness = _per_pma(sec, 'stiffness', n)
    damping = _per_pma(sec, 'damping', n)
    offset = sec.numbers('offset', [0.0] * n, length=n)
    twist = sec.numbers('twist', [0.0] * n, length=n)
    area = _per_pma(sec, 'area', n, [0.0] * n)
    sec.finish()
    cog = top.namespace('cog')
    beta = np.array(cog.numbers('beta', list(DEFAULT_BETA), length=6))
    cog.finish()
    quad = top.number('quadrature', DEFAULT_QUADRATURE, low=1.0)
    if quad != int(quad):
        raise ConfigError(top.key('quadrature'), f'must be a whole number, got {quad}')
    joints = top.strings('joints', default_joint_names(n), length=3 * n)
    if len(set(joints)) != len(joints):
        raise ConfigError(top.key('joints'), 'must not repeat a name')
    limit = top.field('limit_stiffness', MODEL_FIELDS['model.limit_stiffness'])
    top.finish()
    arr = np.array
    return ContinuumSpec(kind=kind, length=arr(length), radius=arr(radius), mass=arr(mass),
                         max_extension=arr(lmax), stiffness=stiffness, damping=damping,
                         offset=arr(offset), twist=arr(twist), area=area, gravity=gravity,
                         beta=beta, joint_names=tuple(joints), quadrature=int(quad),
                         limit_stiffness=limit)
