"""
The plant's PMAs as they are: friction and hysteresis, and an area that falls with extension.

    traits = PmaTraits.of(values, vec, actuation, model, step)   # `pma.*`; None: ideal PMAs
    forces = PmaForces(traits, q)          # the state, relaxed at the length changes q (m)
    tau = forces.force(pushing, q)         # each step: the force on each PMA, N

With `pma.area_slope` c the plant's PMA pushes ``area (1 - c q / l_max) (p - deadzone)``
(actuation/pressure_map.py's `area_factor`): q its length change (m), l_max its section's
`model.sections.max_extension`, so the area falls by c over the stroke; without the key the
plant takes the controller's `output.area_slope` (a file describes one arm; `pma.*`, like
`mismatch.*`, is where the plant departs from it). With
`pma.friction.breakaway` and `pma.friction.stiffness` (one value per element, the same bank
for every PMA) a Maxwell-slip bank (actuation/maxwell_slip.py) acts on each PMA's length,
`pma.friction.scale` (per PMA or one for all) multiplying its forces and stiffnesses: the
loop keeps its shape and its width scales. The defaults leave the PMAs ideal, and the plant
then skips this module.

Both engines take the force from the plant, held over each `step` and computed at the
step's start: explicit. A sticking bank is a spring of ``sum k_e`` on a PMA whose motion the
damping D dominates (taken implicitly by either engine), and a step contracts its deflection
by ``1 - step sum k_e / D``; `of` requires ``step sum k_e <= D`` (the plant's damping,
mismatch applied), where the deflection decays without overshoot.
"""

from dataclasses import dataclass
from typing import Optional

import numpy as np

from continuum_ctrl.actuation.pressure_map import area_factor
from continuum_ctrl.params import ConfigError, Field
from continuum_ctrl.actuation.maxwell_slip import MaxwellSlip

#: the simulator's `pma.*` parameters
FIELDS = {
    'pma.area_slope': Field('numbers', ..., 'plant PMA area falls with extension: area '
                            '(1 - c q / l_max), c per PMA or one for all (0: constant area; '
                            "default: output.area_slope, the controller's map)", 0.0, 0.9,
                            per_joint=True),
    'pma.friction.breakaway': Field('numbers', ..., 'plant PMA friction, a Maxwell-slip '
                                    "bank: each element's break-away force, N, the same bank "
                                    'for every PMA (default: none, no friction)', 0.0,
                                    strict_low=True),
    'pma.friction.stiffness': Field('numbers', ..., "the bank's element stiffnesses, N/m, "
                                    'one per element (default: none); step times their sum '
                                    "must not exceed the PMA's damping", 0.0,
                                    strict_low=True),
    'pma.friction.scale': Field('numbers', [1.0], "multiplies the bank's forces and "
                                'stiffnesses, per PMA or one for all', 0.0, per_joint=True),
}


@dataclass(frozen=True)
class PmaTraits:
    """
    The `pma.*` settings, per PMA in model order.

    `slope` (n,) and `stroke` (n,), m, of the area map (None: constant area); `breakaway`
    (n, k), N, and `stiffness` (n, k), N/m, of the friction banks (None: no friction).
    """

    slope: Optional[np.ndarray]
    stroke: np.ndarray
    breakaway: Optional[np.ndarray]
    stiffness: Optional[np.ndarray]

    @classmethod
    def of(cls, values, vec, actuation, model, step):
        """
        Return the `pma.*` settings of the plant's parsed `values`; None for ideal PMAs.

        `vec`: the JointVectors; `actuation`: the plant's ActuationMap (None unless pressure
        mode); `model`: the plant (mismatch applied); `step`: its step, s. ConfigError names
        the key.
        """
        slope = (vec.to_model(values['pma.area_slope']) if 'pma.area_slope' in values
                 else _nominal_slope(actuation, vec.n))
        scale = vec.to_model(values['pma.friction.scale'])
        given = [key for key in ('pma.friction.breakaway', 'pma.friction.stiffness')
                 if key in values]
        bank = [np.array(values[key]) for key in given]
        if given and len(given) < 2:
            missing = ('pma.friction.stiffness' if given == ['pma.friction.breakaway']
                       else 'pma.friction.breakaway')
            raise ConfigError(missing, f'must be given with {given[0]}')
        if not given and not slope.any():
            return None
        key = 'pma.area_slope' if slope.any() else given[0]
        if actuation is None:
            raise ConfigError(key, "models PMAs: needs output.mode 'pressure'")
        spec = getattr(model, 'spec', None)
        if spec is None:
            raise ConfigError(key, f'applies to continuum arms, not the plant '
                                   f'{type(model).__name__}')
        breakaway = stiffness = None
        if given:
            if len(bank[0]) != len(bank[1]):
                raise ConfigError('pma.friction.stiffness', f'must have one entry per '
                                                            f'element: {len(bank[0])}, got '
                                                            f'{len(bank[1])}')
            breakaway, stiffness = (np.outer(scale, element) for element in bank)
            total = step * stiffness.sum(axis=1)
            worst = int(np.argmax(total - spec.damping))
            if total[worst] > spec.damping[worst]:
                raise ConfigError('pma.friction.stiffness', f'step {step} s times the bank '
                                                            f'stiffness {total[worst] / step:g}'
                                                            f' N/m must not exceed the PMA '
                                                            f'damping {spec.damping[worst]:g}'
                                                            f' N s/m (PMA {worst + 1})')
        return cls(slope if slope.any() else None, spec.stroke,
                   breakaway, stiffness)


def _nominal_slope(actuation, n):
    """Return the controller's `output.area_slope` (model order; zeros where it has none)."""
    if actuation is None or actuation.slope is None:
        return np.zeros(n)
    return actuation.slope


class PmaForces:
    """The PMAs' traits with their state: the friction banks' sliders, relaxed at `q` (m)."""

    def __init__(self, traits, q):
        self.traits = traits
        self.bank = (MaxwellSlip(traits.breakaway, traits.stiffness)
                     if traits.breakaway is not None else None)
        self.reset(q)

    def reset(self, q):
        """Relax the friction banks at the length changes `q` (n,), m."""
        if self.bank is not None:
            self.bank.reset(q)

    def force(self, pushing, q):
        """
        Return the force on each PMA, N: `pushing` (N, at the nominal area) at `q` (m).

        The area's share at `q` times `pushing`, plus the friction banks' force, whose
        sliders move to `q`.
        """
        traits = self.traits
        tau = np.array(pushing, dtype=float)
        if traits.slope is not None:
            tau *= area_factor(q, traits.slope, traits.stroke)
        if self.bank is not None:
            tau += self.bank.force(q)
        return tau
