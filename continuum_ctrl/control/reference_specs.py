"""
The configured reference: one spec class per `reference.type`, and the registry of them.

A spec class declares the `reference.*` keys its type reads (`fields`: Fields named without
the ``reference.`` prefix, described without the type), reads them (`read`) and builds the
reference they describe (`build(q0, task)`: a `Reference` of control.references starting at
the measured pose `q0`). `register` files a class under its `kind` in `REFERENCE_TYPES`;
the parameter table (`reference_fields`), the names `reference.type` allows, the parser
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
from continuum_ctrl.params import ConfigError, Field, Reader


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
    needs_task_space: ClassVar[bool] = False
    pose_key: ClassVar[Optional[str]] = None
    blend_time: float

    @classmethod
    @abstractmethod
    def read(cls, ref: Reader, vec: Any) -> Dict[str, Any]:
        """Return the type's values read from `ref` (per joint through `vec`, JointVectors)."""

    @abstractmethod
    def build(self, q0: np.ndarray, task: Any = None) -> Reference:
        """Return the reference from the measured pose `q0`, time from 0 (`task`: TaskSpace)."""

    def poses(self) -> Sequence[Optional[np.ndarray]]:
        """Return the fixed poses of `pose_key` (None: taken from the first state)."""
        return ()

    @classmethod
    def _joints(cls, ref: Reader, vec: Any, name: str) -> np.ndarray:
        """Read the per-joint vector `name` of this type into model order."""
        return vec.per_joint(ref, name, cls.fields[name])

    @classmethod
    def _optional_joints(cls, ref: Reader, vec: Any, name: str) -> Optional[np.ndarray]:
        return cls._joints(ref, vec, name) if ref.has(name) else None

    @classmethod
    def _times(cls, ref: Reader) -> np.ndarray:
        return np.array(ref.field('times', cls.fields['times']))


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
    descriptions are joined, prefixed by the types (``sinusoid, multisine: centre ...``).
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
        table[f'reference.{name}'] = replace(first, description=description)
    return table


#: a centre shared by the oscillating types
CENTER = Field('numbers', ..., 'centre (default: the first measured state)')
#: waypoint times shared by the waypoint types
TIMES = Field('numbers', [], 'waypoint times after the start, s, strictly increasing', 0.0,
              strict_low=True)


@register
@dataclass(frozen=True, kw_only=True)
class HoldSpec(ReferenceSpec):
    """Hold `position`, or the pose measured at the start (None)."""

    kind = 'hold'
    fields = {'position': Field('numbers', ..., 'pose to hold (default: the first measured '
                                'state)')}
    pose_key = 'position'
    position: Optional[np.ndarray] = None

    @classmethod
    def read(cls, ref, vec):
        """Return the pose to hold (None: the first state)."""
        return {'position': cls._optional_joints(ref, vec, 'position')}

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
              'amplitude': Field('numbers', ..., 'amplitude per joint'),
              'frequency': Field('numbers', ..., 'frequency per joint, Hz', 0.0),
              'phase': Field('numbers', [0.0], 'phase per joint, rad')}
    center: Optional[np.ndarray]
    amplitude: np.ndarray
    frequency: np.ndarray
    phase: np.ndarray

    @classmethod
    def read(cls, ref, vec):
        """Return centre, amplitude, frequency (Hz) and phase (rad) per joint."""
        return {'center': cls._optional_joints(ref, vec, 'center'),
                **{name: cls._joints(ref, vec, name)
                   for name in ('amplitude', 'frequency', 'phase')}}

    def build(self, q0, task=None):
        """Return the sinusoid around `center` (or `q0`)."""
        center = q0 if self.center is None else self.center
        return Sinusoid(center, self.amplitude, self.frequency, self.phase)


@register
@dataclass(frozen=True, kw_only=True)
class MinimumJerkSpec(ReferenceSpec):
    """A minimum-jerk move from the pose measured at the start to `goal` over `duration` s."""

    kind = 'min_jerk'
    fields = {'goal': Field('numbers', ..., 'goal pose, from the first measured state'),
              'duration': Field('number', ..., 'duration of the motion, s', 1e-3)}
    pose_key = 'goal'
    goal: np.ndarray
    duration: float

    @classmethod
    def read(cls, ref, vec):
        """Return the goal pose and the duration (s)."""
        return {'goal': cls._joints(ref, vec, 'goal'),
                'duration': ref.field('duration', cls.fields['duration'])}

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
    pose_key = 'positions'
    times: np.ndarray
    positions: np.ndarray

    @classmethod
    def read(cls, ref, vec):
        """Return the waypoint times and poses (model order)."""
        times = cls._times(ref)
        if np.any(np.diff(times) <= 0.0):
            raise ConfigError(ref.key('times'), f'must be strictly increasing, got '
                                                f'{times.tolist()}')
        flat = ref.numbers('positions', cls.fields['positions'].default,
                           length=len(times) * vec.n)
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
              'amplitude': Field('numbers', ..., 'largest excursion per joint'),
              'band': Field('numbers', [0.2, 3.0], '[f_low, f_high], Hz', 0.0,
                            strict_low=True),
              'components': Field('integer', 4, 'sines per joint', 1, 100)}
    center: Optional[np.ndarray]
    amplitude: np.ndarray
    band: Tuple[float, float]
    components: int

    @classmethod
    def read(cls, ref, vec):
        """Return centre, largest excursion, band (Hz) and sines per joint."""
        band = ref.numbers('band', cls.fields['band'].default, length=2, low=0.0,
                           strict_low=True)
        if band[0] >= band[1]:
            raise ConfigError(ref.key('band'), f'must be [f_low, f_high] with f_low < f_high, '
                                               f'got {band}')
        return {'center': cls._optional_joints(ref, vec, 'center'),
                'amplitude': cls._joints(ref, vec, 'amplitude'), 'band': tuple(band),
                'components': ref.field('components', cls.fields['components'])}

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
                                  'the circle passes through the tip)'),
              'tip_radius': Field('number', ..., 'radius, m', 0.0, strict_low=True),
              'tip_normal': Field('numbers', [0.0, 0.0, 1.0], "normal of the circle's plane, "
                                  'base frame'),
              'tip_frequency': Field('number', ..., 'revolutions per second, Hz', 0.0)}
    needs_task_space = True
    tip_center: Optional[np.ndarray]
    tip_radius: float
    tip_normal: np.ndarray
    tip_frequency: float

    @classmethod
    def read(cls, ref, vec):
        """Return the circle's centre, radius, plane normal and frequency."""
        center = (np.array(ref.numbers('tip_center', length=3)) if ref.has('tip_center')
                  else None)
        normal = np.array(ref.numbers('tip_normal', cls.fields['tip_normal'].default,
                                      length=3))
        if np.linalg.norm(normal) < 1e-9:
            raise ConfigError(ref.key('tip_normal'), f'must not be zero, got {normal.tolist()}')
        return {'tip_center': center, 'tip_normal': normal,
                **{name: ref.field(name, cls.fields[name])
                   for name in ('tip_radius', 'tip_frequency')}}

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
              'tip_positions': Field('numbers', [], 'tip positions at reference.times, '
                                     'len(times)*3 values [x, y, z], m, base frame')}
    needs_task_space = True
    times: np.ndarray
    tip_positions: np.ndarray

    @classmethod
    def read(cls, ref, vec):
        """Return the waypoint times and tip positions."""
        times = cls._times(ref)
        if len(times) == 0 or np.any(np.diff(times) <= 0.0):
            raise ConfigError(ref.key('times'), f'must be one or more strictly increasing '
                                                f'times, got {times.tolist()}')
        flat = ref.numbers('tip_positions', length=3 * len(times))
        return {'times': times, 'tip_positions': np.reshape(flat, (-1, 3))}

    def build(self, q0, task=None):
        """Return the spline from the tip at `q0` through the waypoints (IK: `task.waypoints`)."""
        return task.waypoints(q0, self.times, self.tip_positions)
