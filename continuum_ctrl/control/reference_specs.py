"""
The configured reference: one spec class per `reference.type`, and the registry of them.

A spec class declares the `reference.*` keys its type reads (`fields`: Fields named without
the ``reference.`` prefix, described without the type) and the checks among them (`checks`,
named alike), takes their parsed values (`read`) and builds the reference they describe
(`build(q0, task)`: a `Reference` of control.references starting at the measured pose `q0`).
`register` files a class under its `kind` in `REFERENCE_TYPES`; the parameter table
(`reference_fields`: each key read only where `reference.type` is one of the types that read
it) and its checks (`reference_checks`), the names `reference.type` allows, the parser
(`ControllerSettings.parse`) and the loop all take the types from there, so a new type is one
class here. Sampling stays in the reference classes. Arrays are in model order; poses in the
model's coordinates, tip positions in m in the base frame of `task.frame`.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass, fields as dataclass_fields, replace
from typing import Any, ClassVar, Dict, List, Optional, Sequence, Tuple, Type

import numpy as np

from continuum_ctrl.control.references import (Hold, MinimumJerk, Multisine, Reference,
                                               Sinusoid, Waypoints)
from continuum_ctrl.params import Check, ConfigError, Field

#: the namespace of the reference keys
PREFIX = 'reference.'


@dataclass(frozen=True, kw_only=True)
class ReferenceSpec(ABC):
    """
    A parsed `reference.*`; `blend_time` (s): the blend in from the measured state.

    `needs_task_space`: the type moves `task.frame` and is built by IK, so it needs a task
    frame, and the loop plans it aside rather than on its own thread. `pose_key`: the key of
    the fixed poses (`poses`) that must lie within the joint limits (None: none to check).
    """

    kind: ClassVar[str]
    fields: ClassVar[Dict[str, Field]]
    checks: ClassVar[Tuple[Check, ...]] = ()
    needs_task_space: ClassVar[bool] = False
    pose_key: ClassVar[Optional[str]] = None
    blend_time: float

    @classmethod
    @abstractmethod
    def read(cls, values: Dict[str, Any], vec: Any) -> Dict[str, Any]:
        """
        Return the type's attributes from its parsed `values` (named without ``reference.``).

        Per-joint lists come in joints order; `vec` (JointVectors) puts them in model order.
        """

    @abstractmethod
    def build(self, q0: np.ndarray, task: Any = None) -> Reference:
        """Return the reference from the measured pose `q0`, time from 0 (`task`: TaskSpace)."""

    def poses(self) -> Sequence[Optional[np.ndarray]]:
        """Return the fixed poses of `pose_key` (None: taken from the first state)."""
        return ()

    @staticmethod
    def _joints(values: Dict[str, Any], vec: Any, name: str) -> Optional[np.ndarray]:
        """Return the per-joint vector `name` in model order (None: not given)."""
        return vec.to_model(values[name]) if name in values else None


#: reference.type -> its spec class, in the order the types are listed
REFERENCE_TYPES: Dict[str, Type[ReferenceSpec]] = {}


def register(spec: Type[ReferenceSpec]) -> Type[ReferenceSpec]:
    """
    File the spec class `spec` under its `kind` (a class decorator, above ``@dataclass``).

    Its attributes (but `blend_time`) are its keys, so that a spec reads as its parameters.
    """
    if spec.kind in REFERENCE_TYPES:
        raise ValueError(f'reference type {spec.kind!r} is registered twice')
    names = [f.name for f in dataclass_fields(spec) if f.name != 'blend_time']
    if names != list(spec.fields):
        raise ValueError(f'reference type {spec.kind!r}: attributes {names} are not its keys '
                         f'{list(spec.fields)}')
    REFERENCE_TYPES[spec.kind] = spec
    return spec


def reference_fields() -> Dict[str, Field]:
    """
    Return the `reference.*` Fields of every type, each described with the types that read it.

    A key several types read must have the same kind, default and bounds in each; their
    descriptions are joined, prefixed by the types (``sinusoid, multisine: centre ...``). Each
    is read only `when` `reference.type` is one of those types.
    """
    uses: Dict[str, List[Tuple[str, Field]]] = {}
    for kind, spec in REFERENCE_TYPES.items():
        for name, field in spec.fields.items():
            uses.setdefault(name, []).append((kind, field))
    table = {}
    for name, pairs in uses.items():
        first = pairs[0][1]
        if any(replace(f, description='') != replace(first, description='') for _, f in pairs):
            raise ValueError(f'reference.{name}: the types {[k for k, _ in pairs]} declare it '
                             'differently')
        kinds: Dict[str, List[str]] = {}
        for kind, field in pairs:
            kinds.setdefault(field.description, []).append(kind)
        description = '; '.join(f'{", ".join(names)}: {text}' for text, names in kinds.items())
        table[PREFIX + name] = replace(first, description=description, when=(
            'reference.type', tuple(kind for kind, _ in pairs)))
    return table


def reference_checks() -> Tuple[Check, ...]:
    """Return every type's checks, keys named with ``reference.``, each run for its type."""
    return tuple(_for_type(kind, check) for kind, spec in REFERENCE_TYPES.items()
                 for check in spec.checks)


def _for_type(kind: str, check: Check) -> Check:
    """Return `check` with its keys under ``reference.``, holding unless the type is `kind`."""
    problem = check.problem
    return Check(PREFIX + check.key, ('reference.type', *(PREFIX + key for key in check.reads)),
                 lambda chosen, *values: chosen != kind or check.test(*values),
                 problem if isinstance(problem, str) else
                 (lambda chosen, *values: problem(*values)))


def increasing(times: List[float]) -> bool:
    """Whether `times` increase strictly."""
    return not bool(np.any(np.diff(times) <= 0.0))


#: a centre shared by the oscillating types
CENTER = Field('numbers', ..., 'centre (default: the first measured state)', per_joint=True)
#: waypoint times shared by the waypoint types
TIMES = Field('numbers', [], 'waypoint times after the start, s, strictly increasing', 0.0,
              strict_low=True)


@register
@dataclass(frozen=True, kw_only=True)
class HoldSpec(ReferenceSpec):
    """Hold `position`, or the pose measured at the start (None)."""

    kind = 'hold'
    fields = {'position': Field('numbers', ..., 'pose to hold (default: the first measured '
                                'state)', per_joint=True)}
    pose_key = 'position'
    position: Optional[np.ndarray] = None

    @classmethod
    def read(cls, values, vec):
        """Return the pose to hold (None: the first state)."""
        return {'position': cls._joints(values, vec, 'position')}

    def build(self, q0, task=None):
        """Return the hold of `position` (or `q0`)."""
        return Hold(q0 if self.position is None else self.position)

    def poses(self):
        """Return the held pose."""
        return [self.position]


@register
@dataclass(frozen=True, kw_only=True)
class SinusoidSpec(ReferenceSpec):
    """A per-joint sinusoid around `center` (None: the pose measured at the start)."""

    kind = 'sinusoid'
    fields = {'center': CENTER,
              'amplitude': Field('numbers', ..., 'amplitude per joint', per_joint=True,
                                 required=True),
              'frequency': Field('numbers', ..., 'frequency per joint, Hz', 0.0,
                                 per_joint=True, required=True),
              'phase': Field('numbers', [0.0], 'phase per joint, rad', per_joint=True)}
    center: Optional[np.ndarray]
    amplitude: np.ndarray
    frequency: np.ndarray
    phase: np.ndarray

    @classmethod
    def read(cls, values, vec):
        """Return centre, amplitude, frequency (Hz) and phase (rad) per joint."""
        return {name: cls._joints(values, vec, name)
                for name in ('center', 'amplitude', 'frequency', 'phase')}

    def build(self, q0, task=None):
        """Return the sinusoid around `center` (or `q0`)."""
        center = q0 if self.center is None else self.center
        return Sinusoid(center, self.amplitude, self.frequency, self.phase)


@register
@dataclass(frozen=True, kw_only=True)
class MinimumJerkSpec(ReferenceSpec):
    """A minimum-jerk move from the pose measured at the start to `goal` over `duration` s."""

    kind = 'min_jerk'
    fields = {'goal': Field('numbers', ..., 'goal pose, from the first measured state',
                            per_joint=True, required=True),
              'duration': Field('number', ..., 'duration of the motion, s', 1e-3,
                                required=True)}
    pose_key = 'goal'
    goal: np.ndarray
    duration: float

    @classmethod
    def read(cls, values, vec):
        """Return the goal pose and the duration (s)."""
        return {'goal': cls._joints(values, vec, 'goal'), 'duration': values['duration']}

    def build(self, q0, task=None):
        """Return the move from `q0` to `goal`."""
        return MinimumJerk(q0, self.goal, 0.0, self.duration)

    def poses(self):
        """Return the goal."""
        return [self.goal]


@register
@dataclass(frozen=True, kw_only=True)
class TrajectorySpec(ReferenceSpec):
    """
    Joint waypoints `positions` (m, n) at `times` (s after the start), from the start pose.

    With no waypoints the start pose is held (trajectories then come from
    `~/joint_trajectory`).
    """

    kind = 'trajectory'
    fields = {'times': TIMES,
              'positions': Field('numbers', [], 'waypoint poses, len(times)*n values, one '
                                 'pose after another')}
    checks = (Check('times', ('times',), increasing,
                    lambda times: f'must be strictly increasing, got {times}'),)
    pose_key = 'positions'
    times: np.ndarray
    positions: np.ndarray

    @classmethod
    def read(cls, values, vec):
        """Return the waypoint times and poses (model order; one pose per time)."""
        times, flat = np.array(values['times']), values['positions']
        if len(flat) != len(times) * vec.n:
            raise ConfigError(PREFIX + 'positions', f'must have {len(times) * vec.n} entries, '
                                                    f'got {len(flat)}')
        positions = np.array([vec.to_model(row) for row in
                              np.reshape(flat, (len(times), vec.n))]).reshape(-1, vec.n)
        return {'times': times, 'positions': positions}

    def build(self, q0, task=None):
        """Return the spline from `q0` through the waypoints (a hold of `q0` without any)."""
        if len(self.times) == 0:
            return Hold(q0)
        return Waypoints(np.concatenate(([0.0], self.times)), np.vstack((q0, self.positions)))

    def poses(self):
        """Return the waypoint poses."""
        return list(self.positions)


@register
@dataclass(frozen=True, kw_only=True)
class MultisineSpec(ReferenceSpec):
    """Per-joint sums of sines over `band` Hz around `center` (None: the start pose)."""

    kind = 'multisine'
    fields = {'center': CENTER,
              'amplitude': Field('numbers', ..., 'largest excursion per joint',
                                 per_joint=True, required=True),
              'band': Field('numbers', [0.2, 3.0], '[f_low, f_high], Hz', 0.0,
                            strict_low=True, length=2),
              'components': Field('integer', 4, 'sines per joint', 1, 100)}
    checks = (Check('band', ('band',), lambda band: band[0] < band[1],
                    lambda band: f'must be [f_low, f_high] with f_low < f_high, got {band}'),)
    center: Optional[np.ndarray]
    amplitude: np.ndarray
    band: Tuple[float, float]
    components: int

    @classmethod
    def read(cls, values, vec):
        """Return centre, largest excursion, band (Hz) and sines per joint."""
        return {'center': cls._joints(values, vec, 'center'),
                'amplitude': cls._joints(values, vec, 'amplitude'),
                'band': tuple(values['band']), 'components': values['components']}

    def build(self, q0, task=None):
        """Return the sums of sines around `center` (or `q0`)."""
        center = q0 if self.center is None else self.center
        return Multisine(center, self.amplitude, self.band, self.components)


@register
@dataclass(frozen=True, kw_only=True)
class TipCircleSpec(ReferenceSpec):
    """
    A tip circle: `tip_radius` m, `tip_frequency` Hz, in the plane normal to `tip_normal`.

    Around `tip_center` (None: the circle passes through the tip at the start).
    """

    kind = 'tip_circle'
    fields = {'tip_center': Field('numbers', ..., 'centre [x, y, z], m, base frame (default: '
                                  'the circle passes through the tip)', length=3),
              'tip_radius': Field('number', ..., 'radius, m', 0.0, strict_low=True,
                                  required=True),
              'tip_normal': Field('numbers', [0.0, 0.0, 1.0], "normal of the circle's plane, "
                                  'base frame', length=3),
              'tip_frequency': Field('number', ..., 'revolutions per second, Hz', 0.0,
                                     required=True)}
    checks = (Check('tip_normal', ('tip_normal',),
                    lambda normal: bool(np.linalg.norm(normal) >= 1e-9),
                    lambda normal: f'must not be zero, got {normal}'),)
    needs_task_space = True
    tip_center: Optional[np.ndarray]
    tip_radius: float
    tip_normal: np.ndarray
    tip_frequency: float

    @classmethod
    def read(cls, values, vec):
        """Return the circle's centre, radius, plane normal and frequency."""
        return {'tip_center': (np.array(values['tip_center']) if 'tip_center' in values
                               else None),
                'tip_normal': np.array(values['tip_normal']),
                **{name: values[name] for name in ('tip_radius', 'tip_frequency')}}

    def build(self, q0, task=None):
        """Return the circle from the tip at `q0` (IK: `task.circle`)."""
        return task.circle(q0, self.tip_radius, self.tip_normal, self.tip_frequency,
                           self.tip_center)


@register
@dataclass(frozen=True, kw_only=True)
class TipWaypointsSpec(ReferenceSpec):
    """Tip waypoints `tip_positions` (m, 3) at `times` (s after the start), from the tip."""

    kind = 'tip_waypoints'
    fields = {'times': TIMES,
              'tip_positions': Field('numbers', ..., 'tip positions at reference.times, '
                                     'len(times)*3 values [x, y, z], m, base frame',
                                     required=True)}
    checks = (Check('times', ('times',), lambda times: len(times) > 0 and increasing(times),
                    lambda times: f'must be one or more strictly increasing times, got '
                                  f'{times}'),
              Check('tip_positions', ('times', 'tip_positions'),
                    lambda times, flat: len(flat) == 3 * len(times),
                    lambda times, flat: f'must have {3 * len(times)} entries, got '
                                        f'{len(flat)}'))
    needs_task_space = True
    times: np.ndarray
    tip_positions: np.ndarray

    @classmethod
    def read(cls, values, vec):
        """Return the waypoint times and tip positions."""
        return {'times': np.array(values['times']),
                'tip_positions': np.reshape(values['tip_positions'], (-1, 3))}

    def build(self, q0, task=None):
        """Return the spline from the tip at `q0` through the waypoints (IK: `task.waypoints`)."""
        return task.waypoints(q0, self.times, self.tip_positions)
