"""
The continuum-arm spec: the `model` namespace of a continuum arm, validated once.

Per-section values are parallel arrays under ``model.sections`` (SI units): length ``L_i`` [m],
PMA radius ``r_i`` [m], mass ``m_i`` [kg], PMA stroke ``l_max_i`` [m], stiffness [N/m] and
damping [N s/m] per PMA, fixed-joint offset ``sigma_i`` [m] and twist ``gamma_i`` [rad],
PMA effective area [m^2]. Stiffness, damping and area take one value per section or one per PMA.
"""

from dataclasses import dataclass

import numpy as np

from continuum_ctrl.models.fields import CONTINUUM_SCHEMA, DEFAULT_BETA, DEFAULT_QUADRATURE
from continuum_ctrl.params import ConfigError

#: width of the smooth onset of the limit stiffening, as a share of the stroke l_max
LIMIT_ONSET = 0.05

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


def _count(key, values, count):
    """Return `values` (the list given for `key`) if it holds `count` entries."""
    if len(values) != count:
        raise ConfigError(key, f'must have {count} entries, got {len(values)}')
    return values


def _per_pma(key, values, n):
    """Return one value per section or per PMA, as given for `key`, per PMA, shape (3n,)."""
    if len(values) == n:
        return np.repeat(values, 3)
    if len(values) == 3 * n:
        return np.array(values)
    raise ConfigError(key, f'must have {n} entries (per section) or {3 * n} (per PMA), '
                           f'got {len(values)}')


def read_spec(spec):
    """
    Validate the nested `model` namespace of a continuum arm into a ContinuumSpec.

    `CONTINUUM_SCHEMA` reads the keys; the number of sections n (of `sections.length`) then
    decides the lengths. Raises ConfigError naming the full key for a missing, unknown or
    malformed parameter.
    """
    values = CONTINUUM_SCHEMA.parse(spec, 'model')
    n = len(values['model.sections.length'])
    sec = {name: np.array(_count('model.sections.' + name,
                                 values.get('model.sections.' + name, [0.0] * n), n))
           for name in ('length', 'radius', 'mass', 'max_extension', 'offset', 'twist')}
    pma = {name: _per_pma('model.sections.' + name,
                          values.get('model.sections.' + name, [0.0] * n), n)
           for name in ('stiffness', 'damping', 'area')}
    joints = _count('model.joints', values.get('model.joints', default_joint_names(n)), 3 * n)
    if len(set(joints)) != len(joints):
        raise ConfigError('model.joints', 'must not repeat a name')
    return ContinuumSpec(kind=values['model.type'], **sec, **pma,
                         gravity=np.array(values['model.gravity']),
                         beta=np.array(values['model.cog.beta']), joint_names=tuple(joints),
                         quadrature=int(values['model.quadrature']),
                         limit_stiffness=values['model.limit_stiffness'])
