"""
Pre-serialized command publication: a subscriber receives exactly the values published, as a
Float64MultiArray or as a stamped JointState of the joint names.
"""

import time

import numpy as np
import pytest
import rclpy
from std_msgs.msg import Float64MultiArray

from continuum_ctrl.control.settings import MESSAGES
from continuum_ctrl.ros.fast_publish import CommandPublisher, float64_array_prefix, FORMS


def joints(n):
    """Return `n` joint names of unequal lengths (the CDR padding after each varies)."""
    return [f'pma{"x" * k}{k}' for k in range(n)]


@pytest.fixture
def node():
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('fast_publish_test', context=context)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    node.executor_ = executor
    yield node
    node.destroy_node()
    rclpy.shutdown(context=context)


def receive(node, publisher, batches, timeout=20.0, stamps=None):
    """Publish each array of `batches` (stamped `stamps`, s) until received; return them."""
    received = []
    node.create_subscription(FORMS[publisher.message].msg_type, 'commands',
                             lambda m: received.append(m), 10)
    end = time.monotonic() + timeout
    while publisher.publisher.get_subscription_count() == 0 and time.monotonic() < end:
        node.executor_.spin_once(timeout_sec=0.05)
    for values, stamp in zip(batches, stamps or [0.0] * len(batches)):
        publisher.publish(values, stamp)
        values[:] = -1.0                        # the bytes were taken at publish time
        count = len(received)
        while len(received) == count and time.monotonic() < end:
            node.executor_.spin_once(timeout_sec=0.05)
    return received


@pytest.mark.ros
@pytest.mark.parametrize('n', [1, 9, 20])
def test_subscriber_receives_exactly_the_published_doubles(node, n):
    rng = np.random.default_rng(n)
    special = np.array([0.0, -0.0, np.pi, -1e300, 5e-324, 1e5, -2.5, 7.0, 1.0 / 3.0] * 3)
    batches = [special[:n].copy(), rng.normal(size=n) * 1e5, np.full(n, 3e5)]
    expected = [b.copy() for b in batches]
    publisher = CommandPublisher(node, 'commands', joints(n))
    received = receive(node, publisher, batches)
    publisher.close()
    assert len(received) == len(batches)
    for msg, values in zip(received, expected):
        data = np.asarray(msg.data)
        assert data.tobytes() == values.tobytes()          # bit for bit, signed zeros too
        assert msg.layout.dim == [] and msg.layout.data_offset == 0


@pytest.mark.ros
@pytest.mark.parametrize('n', [1, 9, 20])
def test_a_joint_state_command_carries_names_efforts_and_the_stamp(node, n):
    """Efforts bit for bit, the names in joints order, the stamp to the nanosecond."""
    rng = np.random.default_rng(n)
    batches = [rng.normal(size=n) * 1e5, np.full(n, -0.0), np.arange(float(n))]
    expected = [b.copy() for b in batches]
    stamps = [1796470343.960483584, 0.0, 12.000000001]
    publisher = CommandPublisher(node, 'commands', joints(n), 'joint_state')
    received = receive(node, publisher, batches, stamps=stamps)
    publisher.close()
    assert len(received) == len(batches)
    for msg, values, stamp in zip(received, expected, stamps):
        assert np.asarray(msg.effort).tobytes() == values.tobytes()
        assert list(msg.name) == joints(n) and not msg.position and not msg.velocity
        assert msg.header.frame_id == ''
        nanoseconds = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        assert nanoseconds == round(stamp * 1e9)
        assert 0 <= msg.header.stamp.nanosec < 1_000_000_000


def test_every_output_message_has_a_form():
    assert tuple(FORMS) == MESSAGES


@pytest.mark.ros
@pytest.mark.parametrize('message', MESSAGES)
def test_wrong_size_or_type_is_refused(node, message):
    publisher = CommandPublisher(node, 'commands', joints(9), message)
    for bad in (np.zeros(8), np.zeros(10), np.zeros(9, dtype=np.float32)):
        with pytest.raises(ValueError, match='expected 9 float64 values'):
            publisher.publish(bad, 1.0)
    publisher.close()


@pytest.mark.ros
def test_the_publisher_outlives_a_destroy_until_closed(node):
    """The loop thread may publish while the node is destroyed: rclpy waits for the close."""
    publisher = CommandPublisher(node, 'commands', joints(3))
    node.destroy_publisher(publisher.publisher)
    publisher.publish(np.ones(3))
    publisher.close()
    with pytest.raises(Exception, match='Failed to publish'):
        publisher.publish(np.ones(3))


def test_prefix_is_the_serialized_message_up_to_its_doubles():
    """
    The prefix and the doubles read back as the message, as long as rclpy's serialization.

    Not compared byte for byte: the CDR padding before the doubles is whatever the
    serializer's buffer held (seen as b'd' in one pytest-xdist worker).
    """
    from rclpy.serialization import deserialize_message, serialize_message
    values = np.array([1.5, -2.0, 4.0])
    whole = serialize_message(Float64MultiArray(data=values.tolist()))
    ours = float64_array_prefix(3) + values.tobytes()
    assert len(ours) == len(whole) and whole.endswith(values.tobytes())
    assert deserialize_message(ours, Float64MultiArray) == Float64MultiArray(
        data=values.tolist())
