"""
`continuum-ctrl record OUT.mcap TOPIC... [--duration S]`: a rosbag2 MCAP bag without ros2cli.

Waits for each topic to appear (its type from the ROS graph), keeps every message with its
receive time as log time and its send time (the DDS source timestamp) as publish time, as
`ros2 bag record` does, and writes the bag when the duration has passed or on Ctrl-C. Reads
back with `continuum-ctrl identify`, Foxglove and `ros2 bag info`.
"""

import argparse
import importlib
import sys
import time

from continuum_ctrl.params import ConfigError
from continuum_ctrl.identify.bag import BagWriter

#: seconds to wait for the topics to appear in the graph
DISCOVERY_TIMEOUT = 10.0


def message_class(type_name):
    """Return the Python class of 'pkg/msg/Type'."""
    package, kind, name = type_name.split('/')
    try:
        return getattr(importlib.import_module(f'{package}.{kind}'), name)
    except (ImportError, AttributeError):
        raise ConfigError('', f"message type '{type_name}' is not installed") from None


def _qos(node, topic):
    """Return a QoS that hears every publisher of `topic`: best effort if any publishes so."""
    from rclpy.qos import qos_profile_sensor_data, ReliabilityPolicy

    best_effort = any(info.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
                      for info in node.get_publishers_info_by_topic(topic))
    return qos_profile_sensor_data if best_effort else 100


def main(argv=None):
    """Record the topics; return 0 (ConfigError: exit status 2 through the CLI)."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl record',
                                     description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('out', help='the .mcap file to write')
    parser.add_argument('topics', nargs='+', help='topics, e.g. /joint_states')
    parser.add_argument('--duration', type=float, default=None,
                        help='seconds to record (default: until Ctrl-C)')
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.duration is not None and not args.duration > 0.0:
        raise ConfigError('--duration', f'must be > 0 s, got {args.duration}')
    import rclpy
    from rclpy.node import Node

    rclpy.init()
    node = Node('continuum_record')
    messages = []
    try:
        types = {}
        end = time.monotonic() + DISCOVERY_TIMEOUT
        while len(types) < len(args.topics) and time.monotonic() < end:
            graph = dict(node.get_topic_names_and_types())
            types = {t: graph[t][0] for t in args.topics if graph.get(t)}
            rclpy.spin_once(node, timeout_sec=0.1)
        missing = sorted(set(args.topics) - set(types))
        if missing:
            raise ConfigError('', f'topics {missing} did not appear within '
                                  f'{DISCOVERY_TIMEOUT:g} s')
        for topic, type_name in types.items():
            def keep(msg, info, topic=topic, type_name=type_name):
                messages.append((topic, type_name, msg, time.time_ns(),
                                 info['source_timestamp']))
            node.create_subscription(message_class(type_name), topic, keep, _qos(node, topic))
        print(f'recording {", ".join(f"{t} ({types[t]})" for t in args.topics)}; Ctrl-C stops')
        end = time.monotonic() + (args.duration if args.duration else float('inf'))
        try:
            while time.monotonic() < end:
                rclpy.spin_once(node, timeout_sec=min(0.1, max(end - time.monotonic(), 0.0)))
        except KeyboardInterrupt:
            pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    with BagWriter(args.out) as bag:
        for topic, type_name, msg, received, sent in messages:
            bag.write(topic, type_name, msg, received, sent)
    print(f'wrote {args.out}: {len(messages)} messages')
    return 0
