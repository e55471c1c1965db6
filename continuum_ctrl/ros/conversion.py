"""
ROS messages <-> arrays, by joint name, with whole-message rejection.

A `sensor_msgs/JointState` is mapped by name on every message (order is not guaranteed; extra
joints are ignored; models/joint_order.py). It is rejected whole, with a reason kind counted by
the caller, when:
- ``foreign``: it names none of the model joints: another robot's states on a shared topic,
  or joints misnamed in the configuration (the caller ignores it beyond counting it);
- ``names``: a model joint is missing or a name repeats;
- ``length``: `position` (or a non-empty `velocity`) differs in length from `name`;
- ``nonfinite``: a used position or velocity is NaN or infinite;
- ``range``: a position lies outside the joint limits widened by their span on each side (for
  an unbounded joint: beyond `MAX_POSITION`), or a given speed exceeds `MAX_SPEED`;
- ``stamp``: with a `stamp_tolerance` > 0, a non-zero header stamp lies more than that ahead of
  or behind the receive time (a zero stamp is not checked).
A message without velocities gives ``qd`` None: the loop estimates them from the positions
and their stamps (control/differencing.py), for the node and the one-process loops alike.
"""

import array

import numpy as np

from continuum_ctrl.control.differencing import MAX_SPEED
from continuum_ctrl.models.joint_order import FOREIGN, joint_columns, JointOrderError, NAMES
from continuum_ctrl.ros.joint_state_cdr import decode_names, JointStateFields

#: largest accepted |position| of an unbounded joint, rad or m: larger values only overflow
#: the law downstream (and warn) before the non-finite effort is caught
MAX_POSITION = 1e6
#: latest accepted start of a trajectory after now, s (a stamp beyond is a clock mix-up)
TRAJECTORY_HORIZON = 3600.0
#: kinds of rejected joint states, in report order
REJECT_KINDS = (FOREIGN, NAMES, 'length', 'nonfinite', 'range', 'stamp')


class Rejected(Exception):
    """A message rejected whole; `kind` is one of REJECT_KINDS (or 'trajectory')."""

    def __init__(self, kind, reason):
        super().__init__(reason)
        self.kind = kind


def stamp_seconds(stamp):
    """Return a builtin_interfaces/Time as float seconds."""
    return stamp.sec + 1e-9 * stamp.nanosec


def fields_of(msg):
    """Return the JointStateFields of a deserialized sensor_msgs/JointState."""
    return JointStateFields(stamp_seconds(msg.header.stamp), msg.name, len(msg.name),
                            msg.position, msg.velocity)


class JointStateReader:
    """
    Convert JointState messages to ``(q, qd)`` in model order (internal buffers).

    `qd` is None for a message without velocities. `joint_names` in model order; `low`,
    `high`: joint limits (+-inf where unbounded); `stamp_tolerance`: largest |receive time -
    header stamp| accepted, s (0: not checked).
    """

    def __init__(self, joint_names, low, high, stamp_tolerance=0.0):
        self.joint_names = list(joint_names)
        self.stamp_tolerance = stamp_tolerance
        self.n = len(self.joint_names)
        span = np.where(np.isfinite(high - low), high - low, np.inf)
        self.low, self.high = low - span, high + span
        self._finite_low = np.maximum(self.low, -MAX_POSITION)
        self._finite_high = np.minimum(self.high, MAX_POSITION)
        self.q = np.zeros(self.n)
        self.qd = np.zeros(self.n)
        self._names = None
        self._section = None                # the serialized name section `_index` maps
        self._index = np.zeros(self.n, dtype=int)

    def _map(self, names):
        if isinstance(names, bytes):        # a serialized name section (ros/joint_state_cdr)
            if names == self._section:
                return self._index
            try:
                decoded = decode_names(names)
            except UnicodeDecodeError:
                raise Rejected(NAMES, 'a joint name is not UTF-8') from None
            index = self._map(decoded)
            self._section = names
            return index
        if names == self._names:
            return self._index
        try:
            self._index = joint_columns(names, self.joint_names)
        except JointOrderError as exc:
            raise Rejected(exc.kind, str(exc)) from None
        self._names, self._section = list(names), None
        return self._index

    def read(self, msg, t):
        """Return ``(q, qd or None)`` from `msg` received at `t` (s); raise Rejected."""
        return self.read_fields(fields_of(msg), t)

    def read_fields(self, fields, t):
        """
        Return ``(q, qd)`` from the `fields` of a JointState received at `t` (s).

        `fields`: a ros.joint_state_cdr.JointStateFields, read from the serialized message or
        from a deserialized one. `qd` is None where the message has no velocities. Raises
        Rejected (the state kept).
        """
        position, velocity, count = fields.position, fields.velocity, fields.count
        index = self._map(fields.names)     # first: a foreign message is no one's bad input
        if len(position) != count or len(velocity) not in (0, count):
            raise Rejected('length', f'{count} names, {len(position)} positions, '
                                     f'{len(velocity)} velocities')
        q = np.asarray(position)[index]
        qd = np.asarray(velocity)[index] if len(velocity) else None
        # fast path: one comparison each; NaN and inf fail it (finite bounds), then classify
        if not ((self._finite_low <= q) & (q <= self._finite_high)).all() or (
                qd is not None and not (np.abs(qd) <= MAX_SPEED).all()):
            self._classify(q, qd)
        self._check_stamp(fields.stamp, t)
        self.q[:] = q
        if qd is None:
            return self.q, None
        self.qd[:] = qd
        return self.q, self.qd

    def _classify(self, q, qd):
        if not np.all(np.isfinite(q)) or (qd is not None and not np.all(np.isfinite(qd))):
            raise Rejected('nonfinite', 'non-finite position or velocity')
        raise Rejected('range', 'position or velocity out of range')

    def _check_stamp(self, sent, t):
        if self.stamp_tolerance > 0.0 and sent > 0.0 and abs(t - sent) > self.stamp_tolerance:
            where = 'in the future' if sent > t else 'old'
            raise Rejected('stamp', f'header stamp {abs(t - sent):.3g} s {where} (tolerance '
                                    f'{self.stamp_tolerance:g} s)')


def trajectory_arrays(msg, joint_names, start_offset):
    """
    Validate a trajectory_msgs/JointTrajectory; return its waypoints in model order.

    `start_offset`: trajectory start (header stamp, or now when zero) minus now, s. Returns
    ``(times, positions, velocities, accelerations)``: times (m,) in s after now, all > 0;
    arrays (m, n), velocities and accelerations None when not given for every point. Raises
    Rejected('trajectory', reason) for unknown, missing or repeated joints, inconsistent sizes,
    non-increasing times, non-finite values, a start in the past or beyond
    `TRAJECTORY_HORIZON`.
    """
    names = list(msg.joint_names)
    if sorted(names) != sorted(joint_names) or len(set(names)) != len(names):
        raise Rejected('trajectory', f'joint_names must list each of {list(joint_names)} '
                                     f'once, got {names}')
    if not msg.points:
        raise Rejected('trajectory', 'has no points')
    n = len(names)
    order = [names.index(name) for name in joint_names]
    fields = {}
    for key in ('positions', 'velocities', 'accelerations'):
        sizes = {len(getattr(point, key)) for point in msg.points}
        if key == 'positions' and sizes != {n}:
            raise Rejected('trajectory', f'every point needs {n} positions, got sizes '
                                         f'{sorted(sizes)}')
        if sizes not in ({0}, {n}):
            raise Rejected('trajectory', f'{key} must be empty or of size {n} in every point, '
                                         f'got sizes {sorted(sizes)}')
        if sizes == {n}:
            fields[key] = np.array([getattr(p, key) for p in msg.points])[:, order]
    if 'accelerations' in fields and 'velocities' not in fields:
        raise Rejected('trajectory', 'accelerations given without velocities')
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                      for p in msg.points]) + start_offset
    if np.any(np.diff(times) <= 0.0):
        raise Rejected('trajectory', 'time_from_start must increase strictly')
    if times[0] <= 0.0:
        raise Rejected('trajectory', 'starts in the past')
    if start_offset > TRAJECTORY_HORIZON:
        raise Rejected('trajectory', f'starts {start_offset:.0f} s in the future')
    if not all(np.all(np.isfinite(v)) for v in fields.values()):
        raise Rejected('trajectory', 'has non-finite values')
    return times, fields['positions'], fields.get('velocities'), fields.get('accelerations')


def set_doubles(msg_array, values):
    """Overwrite a message's float64[] field (array.array('d')) in place with `values`."""
    msg_array[:] = array.array('d', values.tobytes())
