"""
External pushes on the simulated arm: forces on a frame that the controller never sees.

    pushes = Pushes.of(values, model)   # None without `push.size`
    force = pushes.force(t)             # N, base frame, on `pushes.frame` (None: no push now)

`push.*` in the simulator's namespace: each push is a force of `push.size` N along
`push.direction` (base-frame axes, normalized), on the frame `push.frame` (default a continuum
arm's last section tip), from `push.start` for `push.duration` s on the plant's clock (0 when
it starts: its first command with `wait_for_command`). Several pushes are lists of the same
length (directions 3 numbers each, or one direction for all); overlapping ones add. Each
engine applies the force held over a plant step at the frame's origin as the step starts:
the built-in engine as the generalized force ``J^T f`` through the model's `frame_jacobian`,
MuJoCo on the frame's body (`mj_applyFT`, sim/mujoco_plant.py).
"""

from dataclasses import dataclass

import numpy as np

from continuum_ctrl.params import Check, ConfigError, Field
from continuum_ctrl.sim.report import tip_frame

#: the `push.*` parameters
FIELDS = {
    'push.frame': Field('string', ..., "the frame pushed, a frame of the plant's model "
                        "(default: a continuum arm's last section{i}_tip)"),
    'push.direction': Field('numbers', [1.0, 0.0, 0.0], 'direction of the pushes in the base '
                            'frame, normalized: 3 numbers for all, or 3 per push'),
    'push.size': Field('numbers', ..., 'force of each push, N (none: no push)', 0.0, 1e4),
    'push.start': Field('numbers', [1.0], "when each push starts, s on the plant's clock (0: "
                        'its first command), one number for all', 0.0),
    'push.duration': Field('numbers', [0.2], 'how long each push lasts, s, one number for all',
                           0.0),
}


def _per_push(key, size):
    """Return the check that `push.<key>` holds `size` numbers, or `size` per push."""
    name = f'push.{key}'
    return Check(name, (name, 'push.size'),
                 lambda values, sizes: len(values) in (size, size * len(sizes)),
                 lambda values, sizes: f'must hold {size} numbers, or {size} per push '
                                       f'({size * len(sizes)}), got {len(values)}')


#: the checks among the `push.*` keys
CHECKS = (
    _per_push('start', 1), _per_push('duration', 1), _per_push('direction', 3),
    Check('push.direction', ('push.direction',),
          lambda values: all(np.linalg.norm(values[k:k + 3]) > 0.0
                             for k in range(0, len(values) - 2, 3)),
          'each direction must be a non-zero vector'),
)


@dataclass(frozen=True)
class Pushes:
    """The pushes of `push.*`: on `frame`, `forces` (k, 3) N in the base frame, [start, end) s."""

    frame: str
    forces: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @classmethod
    def of(cls, values, model):
        """Return the pushes of the parsed `values` on `model`; None without `push.size`."""
        if 'push.size' not in values:
            return None
        frame = values.get('push.frame') or tip_frame(model)
        if frame is None:
            raise ConfigError('push.frame', 'must be given for an arm without section tips')
        if frame not in model.frame_names():
            raise ConfigError('push.frame', str(model.frame_error(frame)))
        sizes = np.asarray(values['push.size'], dtype=float)
        count = len(sizes)
        directions = np.resize(np.asarray(values['push.direction'], dtype=float), (count, 3))
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
        start = np.resize(np.asarray(values['push.start'], dtype=float), count)
        duration = np.resize(np.asarray(values['push.duration'], dtype=float), count)
        return cls(frame, sizes[:, None] * directions, start, start + duration)

    def force(self, t):
        """Return the sum of the pushes acting at `t` (s), N in base axes; None: none acts."""
        acting = (self.start <= t) & (t < self.end)
        return self.forces[acting].sum(axis=0) if acting.any() else None
