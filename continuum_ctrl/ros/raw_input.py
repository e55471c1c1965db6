"""
Input taken as serialized bytes, checked against a size bound before it becomes Python objects.

rclpy turns a received message into Python objects (one `str` per joint name, ...) under the
GIL before any callback can look at it: a 5 MB `JointState` costs the process tens of ms
whatever the callback then does. A subscription made with ``raw=True`` gets the serialized
message as `bytes` instead; `SizeBoundReader.read` rejects it by its length alone and
deserializes (`rclpy.serialization.deserialize_message`) only what passes. `JointStateInput`
does the same for joint states, but reads those that pass in place when they are plain
little-endian CDR (ros/joint_state_cdr.py), the controller's per-state path.

Bounds, in bytes of the serialized (CDR) message:
- `joint_states_bytes(count)`: a JointState of `count` joints, names of `NAME_CHARS` characters,
  position, velocity and effort filled, a frame_id of `NAME_CHARS`. The default bound,
  `MAX_JOINT_STATES_BYTES`, is that of a 200-joint robot, so a whole robot's `joint_states`
  with this arm in it passes; `joint_states_bound` raises it to what the configured joints need.
- `trajectory_bytes(joint_names, points)`: a JointTrajectory of the configured joints (a valid
  one names exactly those) with `points` points, every field filled;
- `commands_bytes(n)`: the simulator's `commands`, a Float64MultiArray of `n` doubles with a
  layout of at most one dimension labelled with `NAME_CHARS` characters; with
  `output.message: joint_state`, a JointState of the arm's joints bounded as joint states
  (`joint_state_commands_reader`): names as configured or of `NAME_CHARS` characters,
  position, velocity and effort filled;
- `tip_target_bytes(base_frame)`: a PoseStamped whose frame_id is `base_frame` or
  `NAME_CHARS` characters, whichever is longer (a valid tip target names `base_frame`).
"""

from geometry_msgs.msg import PoseStamped
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from continuum_ctrl.ros.conversion import fields_of, Rejected
from continuum_ctrl.ros.joint_state_cdr import parse

#: characters allowed for each joint name (and the frame_id) in the default bounds
NAME_CHARS = 64
#: joints of the robot whose joint_states the default bound admits
BOUND_JOINTS = 200
#: default largest number of trajectory points (`input.max_trajectory_points`)
MAX_TRAJECTORY_POINTS = 1000


def joint_states_bytes(count, name_chars=NAME_CHARS):
    """Return the serialized size of a JointState of `count` joints (see the module doc)."""
    msg = JointState(name=['j' * name_chars] * count, position=[0.0] * count,
                     velocity=[0.0] * count, effort=[0.0] * count)
    msg.header.frame_id = 'f' * name_chars
    return len(serialize_message(msg))


#: default `input.max_joint_states_bytes`: a 200-joint robot's joint_states
MAX_JOINT_STATES_BYTES = joint_states_bytes(BOUND_JOINTS)


def joint_states_bound(joint_names, max_bytes=MAX_JOINT_STATES_BYTES):
    """Return `max_bytes`, raised if needed to a JointState of exactly `joint_names`."""
    msg = JointState(name=list(joint_names), position=[0.0] * len(joint_names),
                     velocity=[0.0] * len(joint_names), effort=[0.0] * len(joint_names))
    msg.header.frame_id = 'f' * NAME_CHARS
    return max(max_bytes, len(serialize_message(msg)))


def trajectory_bytes(joint_names, points=MAX_TRAJECTORY_POINTS):
    """Return the serialized size of a JointTrajectory of `joint_names` with `points` points."""
    n = len(joint_names)
    point = JointTrajectoryPoint(positions=[0.0] * n, velocities=[0.0] * n,
                                 accelerations=[0.0] * n, effort=[0.0] * n)
    msg = JointTrajectory(joint_names=list(joint_names), points=[point] * points)
    msg.header.frame_id = 'f' * NAME_CHARS
    return len(serialize_message(msg))


def commands_bytes(n):
    """Return the serialized size of a Float64MultiArray of `n` doubles (see the module doc)."""
    dim = MultiArrayDimension(label='d' * NAME_CHARS, size=n, stride=n)
    msg = Float64MultiArray(data=[0.0] * n)
    msg.layout.dim = [dim]
    return len(serialize_message(msg))


def tip_target_bytes(base_frame):
    """Return the serialized size of a PoseStamped in `base_frame` (see the module doc)."""
    msg = PoseStamped()
    msg.header.frame_id = 'f' * max(len(base_frame), NAME_CHARS)
    return len(serialize_message(msg))


class SizeBoundReader:
    """
    Deserialize `msg_type` messages of at most `max_bytes` serialized bytes.

    ``read(data)`` returns the message, or raises Rejected('size', reason) for a longer one
    without deserializing it (cost: one `len`), and Rejected('size', ...) too for bytes that do
    not deserialize (a truncated or foreign message).
    """

    def __init__(self, msg_type, max_bytes):
        self.msg_type = msg_type
        self.max_bytes = int(max_bytes)

    def check(self, data):
        """Raise Rejected('size', reason) if `data` (bytes) is longer than `max_bytes`."""
        if len(data) > self.max_bytes:
            raise Rejected('size', f'{len(data)} bytes, above the bound of {self.max_bytes}')

    def read(self, data):
        """Return the message serialized in `data` (bytes); raise Rejected('size', reason)."""
        self.check(data)
        try:
            return deserialize_message(data, self.msg_type)
        except Exception as exc:  # noqa: B902 - rclpy raises its own types for bad bytes
            raise Rejected('size', f'{len(data)} bytes that do not deserialize as '
                                   f'{self.msg_type.__name__}: {exc}') from None


class JointStateInput(SizeBoundReader):
    """
    Read serialized JointStates of at most `max_bytes` bytes into JointStateFields.

    ``read(data)`` rejects a longer message by its length (Rejected('size', ...)), then reads
    plain little-endian CDR in place (ros/joint_state_cdr.py) and deserializes anything else
    with rclpy (Rejected('size', ...) for bytes that are no JointState).
    """

    def __init__(self, max_bytes):
        super().__init__(JointState, max_bytes)
        self._names = b''                   # the name section read last

    def read(self, data):
        """Return the JointStateFields of `data` (bytes); raise Rejected('size', reason)."""
        self.check(data)
        fields = parse(data, self._names)
        if fields is None:
            return fields_of(super().read(data))
        self._names = fields.names
        return fields


def joint_states_reader(joint_names, max_bytes=MAX_JOINT_STATES_BYTES):
    """Return a JointStateInput bounded by `joint_states_bound(joint_names, max_bytes)`."""
    return JointStateInput(joint_states_bound(joint_names, max_bytes))


def trajectory_reader(joint_names, max_points=MAX_TRAJECTORY_POINTS):
    """Return a SizeBoundReader of JointTrajectory admitting `max_points` full points."""
    return SizeBoundReader(JointTrajectory, trajectory_bytes(joint_names, max_points))


def commands_reader(n):
    """Return a SizeBoundReader of Float64MultiArray commands of `n` doubles."""
    return SizeBoundReader(Float64MultiArray, commands_bytes(n))


def joint_state_commands_reader(joint_names):
    """Return a SizeBoundReader of JointState commands of `joint_names` (the module doc)."""
    return SizeBoundReader(JointState, joint_states_bound(
        joint_names, joint_states_bytes(len(joint_names))))


def tip_target_reader(base_frame):
    """Return a SizeBoundReader of PoseStamped tip targets in `base_frame`."""
    return SizeBoundReader(PoseStamped, tip_target_bytes(base_frame))
