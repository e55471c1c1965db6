"""
The command publication as pre-serialized bytes: one copy of n doubles, no message conversion.

A `std_msgs/Float64MultiArray` with an empty layout and n doubles has a fixed serialized (CDR)
form: a prefix that depends on n only, then the n doubles in the host's byte order. rclpy's
`Publisher.publish` takes `bytes` as an already serialized message (`publish_raw`; in Kilted and
in rclpy 3.x of Humble alike), so a tick publishes ``prefix + values.tobytes()`` and skips the
conversion of a Python message into its C form and the middleware's serialization of it. The
prefix is taken from `rclpy.serialization.serialize_message` once, and checked by a round
trip, so no CDR layout is written out here. Subscribers receive an ordinary message.

`Publisher.publish` enters the publisher's handle (rclpy's `Destroyable`: it keeps the
publisher alive while in use) around every call; that and its type checks cost as much as
the write itself (0.5 us each here). A `CommandPublisher` enters the handle once, when it is
made, and calls the handle's ``publish_raw`` per message. Until `close`, a
``destroy_publisher`` or ``destroy_node`` only marks the publisher and rclpy destroys it at
the close: its owner closes it once nothing publishes any more (the controller node, when
it is destroyed, after its loop thread has ended).
"""

import contextlib

import numpy as np
from rclpy.serialization import deserialize_message, serialize_message
from std_msgs.msg import Float64MultiArray


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


class CommandPublisher:
    """
    Publish `n` float64 values as a std_msgs/Float64MultiArray on `topic` of `node`.

    ``publish(values)``: `values` a float64 NumPy array of length `n` (for example the control
    loop's command buffer); the bytes are copied at once, so the array may change afterwards.
    ``serialize(values)``: those bytes, without publishing them.
    `publisher` is the underlying rclpy publisher (for counts and `destroy_publisher`); it is
    destroyed only once `close` is called (see the module).
    """

    def __init__(self, node, topic, n, qos=10):
        self._prefix = float64_array_prefix(n)
        self._size = 8 * n
        self.publisher = node.create_publisher(Float64MultiArray, topic, qos)
        self._writer = self.publisher.handle
        self._held = contextlib.ExitStack()
        self._held.enter_context(self._writer)

    def close(self):
        """Release the publisher's handle: rclpy may destroy it (at once, if it was asked to)."""
        self._held.close()

    def serialize(self, values):
        """Return the message of `values` (float64 array of n) as its serialized bytes."""
        data = values.tobytes()
        if len(data) != self._size or values.dtype != np.float64:
            raise ValueError(f'expected {self._size // 8} float64 values, got {values.size} '
                             f'{values.dtype}')
        return self._prefix + data

    def publish(self, values):
        """Publish `values` (float64 array of n); raise ValueError for another size or type."""
        self._writer.publish_raw(self.serialize(values))
