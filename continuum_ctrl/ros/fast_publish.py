"""
The command publication as pre-serialized bytes: one copy of n doubles, no message conversion.

A command message has a fixed serialized (CDR) form around its n doubles, which come last in
the host's byte order:
- `std_msgs/Float64MultiArray` with an empty layout (`output.message: multiarray`): a prefix
  that depends on n only, then the doubles;
- `sensor_msgs/JointState` with the joint names, empty positions and velocities and the
  command in `effort` (`joint_state`): the 4-byte encapsulation header, the header stamp
  (int32 s, uint32 ns), the rest of the prefix (empty frame_id, names, counts), the doubles.
rclpy's `Publisher.publish` takes `bytes` as an already serialized message (`publish_raw`; in
Kilted and in rclpy 3.x of Humble alike), so a tick publishes the prefix, its stamp and
``values.tobytes()`` joined, and skips the conversion of a Python message into its C form and
the middleware's serialization of it. The pieces are taken from
`rclpy.serialization.serialize_message` once and checked by a round trip, so no CDR layout is
written out here beyond the stamp's place. Subscribers receive an ordinary message.

`Publisher.publish` enters the publisher's handle (rclpy's `Destroyable`: it keeps the
publisher alive while in use) around every call; that and its type checks cost as much as
the write itself (0.5 us each here). A `CommandPublisher` enters the handle once, when it is
made, and calls the handle's ``publish_raw`` per message. Until `close`, a
``destroy_publisher`` or ``destroy_node`` only marks the publisher and rclpy destroys it at
the close: its owner closes it once nothing publishes any more (the controller node, when
it is destroyed, after its loop thread has ended).
"""

import contextlib
import struct

import numpy as np
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

#: a builtin_interfaces/Time as serialized: int32 sec, uint32 nanosec, host byte order
STAMP = struct.Struct('=iI')
#: where the stamp starts in a serialized message: after the encapsulation header, bytes
STAMP_AT = 4


def float64_array_prefix(n):
    """
    Return the serialized form of a Float64MultiArray of `n` doubles up to its first double.

    Raises RuntimeError if the serialized doubles are not the raw float64 values in host byte
    order at the end (then pre-serialized publishing cannot be used).
    """
    probe = np.arange(1.0, n + 1.0)
    data = serialize_message(Float64MultiArray(data=probe.tolist()))
    prefix = data[:len(data) - 8 * n]
    if data[len(prefix):] != probe.tobytes() or not np.array_equal(
            deserialize_message(prefix + (probe * 2.0).tobytes(), Float64MultiArray).data,
            probe * 2.0):
        raise RuntimeError(f'serialized Float64MultiArray of {n} doubles has no fixed layout')
    return prefix


def joint_state_pieces(names):
    """
    Return ``(head, middle)``: a JointState command of `names` is head + stamp + middle + doubles.

    The stamp is STAMP's 8 bytes, the doubles the efforts, one per name. Raises RuntimeError
    if a message so joined does not read back as that command (see `float64_array_prefix`).
    """
    n = len(names)
    probe = np.arange(1.0, n + 1.0)
    msg = JointState(name=list(names), effort=probe.tolist())
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1, 2
    data = serialize_message(msg)
    # the serializer may leave a few bytes after the efforts, which readers ignore: not kept
    end = data.find(probe.tobytes())
    head, middle = data[:STAMP_AT], data[STAMP_AT + STAMP.size:end]
    back = deserialize_message(head + STAMP.pack(3, 4) + middle + (probe * 2.0).tobytes(),
                               JointState)
    if (end < 0 or data[STAMP_AT:STAMP_AT + STAMP.size] != STAMP.pack(1, 2)
            or (back.header.stamp.sec, back.header.stamp.nanosec) != (3, 4)
            or list(back.name) != list(names) or len(back.position) or len(back.velocity)
            or not np.array_equal(back.effort, probe * 2.0)):
        raise RuntimeError(f'serialized JointState of {n} efforts has no fixed layout')
    return head, middle


def _checked(values, size):
    """Return the bytes of `values`, which must be `size` bytes of float64; else ValueError."""
    data = values.tobytes()
    if len(data) != size or values.dtype != np.float64:
        raise ValueError(f'expected {size // 8} float64 values, got {values.size} '
                         f'{values.dtype}')
    return data


class Float64ArrayCommand:
    """`output.message: multiarray`: n doubles as a Float64MultiArray; no stamp."""

    msg_type = Float64MultiArray

    def __init__(self, joint_names):
        self._size = 8 * len(joint_names)
        self._prefix = float64_array_prefix(len(joint_names))

    def serialize(self, values, stamp=0.0):
        """Return the serialized message of `values` (float64 array of n); `stamp` unused."""
        return self._prefix + _checked(values, self._size)


class JointStateCommand:
    """`output.message: joint_state`: a JointState of the names, efforts and a stamp."""

    msg_type = JointState

    def __init__(self, joint_names):
        self._size = 8 * len(joint_names)
        self._head, self._middle = joint_state_pieces(joint_names)

    def serialize(self, values, stamp=0.0):
        """Return the serialized message of `values` (float64 array of n) stamped `stamp` (s)."""
        sec, nanosec = divmod(round(stamp * 1e9), 1_000_000_000)
        return (self._head + STAMP.pack(sec, nanosec) + self._middle
                + _checked(values, self._size))


#: output.message (control.settings.MESSAGES) -> the serialized form of its command
FORMS = {'multiarray': Float64ArrayCommand, 'joint_state': JointStateCommand}


class CommandPublisher:
    """
    Publish commands of `joint_names` (joints order) on `topic` of `node` as `message`.

    `message`: a key of FORMS (`output.message`). ``publish(values, stamp)``: `values` a
    float64 NumPy array of one value per joint (for example the control loop's command
    buffer), `stamp` the command's time (s; the JointState's header stamp); the bytes are
    copied at once, so the array may change afterwards. ``serialize(values, stamp)``: those
    bytes, without publishing them. `publisher` is the underlying rclpy publisher (for counts
    and `destroy_publisher`); it is destroyed only once `close` is called (see the module).
    """

    def __init__(self, node, topic, joint_names, message='multiarray', qos=10):
        self.joint_names, self.message = tuple(joint_names), message
        form = FORMS[message](self.joint_names)
        self.serialize = form.serialize     # bound once: no lookup per tick
        self.publisher = node.create_publisher(form.msg_type, topic, qos)
        self._writer = self.publisher.handle
        self._held = contextlib.ExitStack()
        self._held.enter_context(self._writer)

    def close(self):
        """Release the publisher's handle: rclpy may destroy it (at once, if it was asked to)."""
        self._held.close()

    def publish(self, values, stamp=0.0):
        """Publish `values` (float64 array of n) stamped `stamp` (s); ValueError for others."""
        self._writer.publish_raw(self.serialize(values, stamp))
