"""
`continuum-ctrl echo TOPIC [--count N] [--timeout S]`: print a topic's messages as YAML.

What ``ros2 topic echo`` does, for environments without ros2cli (the PyPI wheels). The type is
taken from the graph; the subscription is best-effort, so it hears reliable and best-effort
publishers alike.
"""

import argparse
import array
import importlib
import time

import rclpy
from rclpy.qos import qos_profile_sensor_data
import yaml

from continuum_ctrl.params import ConfigError


def message_type(type_name):
    """Return the message class of a type name like ``sensor_msgs/msg/JointState``."""
    package, _, name = type_name.rpartition('/')
    return getattr(importlib.import_module(package.replace('/', '.')), name)


def message_dict(msg):
    """Return a message as plain Python data (nested dicts, lists, numbers, strings)."""
    if hasattr(msg, 'get_fields_and_field_types'):
        return {field: message_dict(getattr(msg, field))
                for field in msg.get_fields_and_field_types()}
    if isinstance(msg, (list, tuple, array.array)) or type(msg).__name__ == 'ndarray':
        return [message_dict(item) for item in msg]
    return msg.item() if hasattr(msg, 'item') else msg


def topic_type(node, topic, timeout):
    """Wait up to `timeout` s for `topic` to appear in the graph; return its type name."""
    end = time.monotonic() + timeout
    while True:
        types = dict(node.get_topic_names_and_types())
        if topic in types:
            return types[topic][0]
        if time.monotonic() > end:
            raise ConfigError('TOPIC', f"'{topic}' is not published (waited {timeout:g} s)")
        time.sleep(0.1)


def main(argv=None):
    """Print `--count` messages of a topic (default: until interrupted); return 0."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl echo', description=__doc__.split(
        '\n\n')[0].strip())
    parser.add_argument('topic', help='topic name, e.g. /joint_states')
    parser.add_argument('--count', type=int, default=0, help='stop after N messages')
    parser.add_argument('--timeout', type=float, default=5.0,
                        help='seconds to wait for the topic to appear (default 5)')
    args = parser.parse_args(argv)
    topic = args.topic if args.topic.startswith('/') else '/' + args.topic
    rclpy.init()
    node = rclpy.create_node('continuum_ctrl_echo')
    seen = []
    try:
        kind = message_type(topic_type(node, topic, args.timeout))

        def show(msg):
            seen.append(1)
            print(yaml.safe_dump(message_dict(msg), sort_keys=False, width=100) + '---',
                  flush=True)
        node.create_subscription(kind, topic, show, qos_profile_sensor_data)
        while rclpy.ok() and not (args.count and len(seen) >= args.count):
            rclpy.spin_once(node, timeout_sec=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0
