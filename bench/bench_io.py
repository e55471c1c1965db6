"""
The cost of the controller's message handling, old and new side by side in one process.

1. Command publication (nine doubles), per publish: today's reused Float64MultiArray filled by
   `set_doubles`, against `CommandPublisher` (pre-serialized CDR bytes). Back to back, and
   woken from a 1 ms sleep before each publish (as a live tick is).
2. joint_states input, per valid message through the executor (EventsExecutor) up to arrays in
   model order (`JointStateReader`): a typed subscription, against a ``raw=True`` one whose
   bytes pass `joint_states_reader` (size check, then plain CDR read in place).
3. An oversized joint_states (100,000 names): the typed subscription's cost per message (rclpy
   builds every name before the callback) against the raw path's rejection by size.

Rounds interleave the variants; the figures are medians over rounds, with the ratio new / old.
Run: `./run bench bench/bench_io.py` (about 1 min).
"""

import os
import time

import numpy as np

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')

import rclpy  # noqa: E402 - after the DDS settings
from rclpy.qos import QoSProfile  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from continuum_ctrl.ros.conversion import JointStateReader, Rejected, set_doubles  # noqa: E402
from continuum_ctrl.ros.fast_publish import CommandPublisher  # noqa: E402
from continuum_ctrl.ros.raw_input import joint_states_reader  # noqa: E402

ROUNDS = 40
PER_ROUND = 400
BURST = 200
BIG_NAMES = 100000
JOINTS = [f'seg{s}_{axis}' for s in range(1, 4) for axis in ('u', 'v', 'w')]


def per_call_us(function, count, pause=0.0):
    """Return the median cost (us) of `function()` over `count` calls, `pause` s apart."""
    times = np.empty(count)
    for k in range(count):
        if pause:
            time.sleep(pause)
        start = time.perf_counter()
        function()
        times[k] = time.perf_counter() - start
    return float(np.median(times)) * 1e6


def bench_publish(node):
    """Return {variant: [per-round medians]} for the two ways to publish nine doubles."""
    message_pub = node.create_publisher(Float64MultiArray, 'bench_message', 10)
    fast = CommandPublisher(node, 'bench_fast', [f'j{k}' for k in range(9)])
    for topic in ('bench_message', 'bench_fast'):       # a matched reader, as live
        node.create_subscription(Float64MultiArray, topic, lambda _: None, 10)
    msg = Float64MultiArray()
    values = np.linspace(1e4, 3e5, 9)
    set_doubles(msg.data, values)
    time.sleep(1.0)                                     # discovery

    def message():
        set_doubles(msg.data, values)
        message_pub.publish(msg)

    variants = {'message': message, 'bytes': lambda: fast.publish(values)}
    out = {f'{name}{suffix}': [] for name in variants for suffix in ('', ' woken')}
    for _ in range(ROUNDS):
        for name, function in variants.items():
            out[name].append(per_call_us(function, PER_ROUND))
            out[f'{name} woken'].append(per_call_us(function, PER_ROUND // 8, pause=1e-3))
    return out


def drain(executor, received, count, timeout=10.0):
    """Spin until `received[0]` reaches `count`; return the seconds it took."""
    start = time.perf_counter()
    end = time.monotonic() + timeout
    while received[0] < count and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.01)
    return time.perf_counter() - start


def bench_input(context):
    """Return {variant: [per-round us per message]} for typed and raw joint_states input."""
    from rclpy.experimental import EventsExecutor
    node = rclpy.create_node('bench_io_input', context=context)
    low, high = np.full(9, -1.0), np.full(9, 1.0)
    typed_reader, raw_reader = JointStateReader(JOINTS, low, high), JointStateReader(
        JOINTS, low, high)
    bounded = joint_states_reader(JOINTS)
    received = {'typed': [0], 'raw': [0], 'typed big': [0], 'raw big': [0]}

    def typed(msg, counter=received['typed']):
        try:
            typed_reader.read(msg, 0.0)
        except Rejected:
            pass
        counter[0] += 1

    def raw(data, counter=received['raw']):
        try:
            raw_reader.read_fields(bounded.read(data), 0.0)
        except Rejected:
            pass
        counter[0] += 1

    qos = QoSProfile(depth=BURST)
    node.create_subscription(JointState, 'typed', typed, qos)
    node.create_subscription(JointState, 'raw', raw, qos, raw=True)
    node.create_subscription(JointState, 'typed_big', lambda m, c=received['typed big']: c.
                             __setitem__(0, c[0] + 1), QoSProfile(depth=4))
    node.create_subscription(JointState, 'raw_big', lambda d, c=received['raw big']: raw_big(
        d, c, bounded), QoSProfile(depth=4), raw=True)
    publishers = {name: node.create_publisher(JointState, name.replace(' ', '_'),
                                              QoSProfile(depth=BURST)) for name in received}
    executor = EventsExecutor(context=context)
    executor.add_node(node)
    valid = JointState(name=JOINTS, position=[0.1] * 9, velocity=[0.0] * 9)
    big = JointState(name=[f'joint_{k}' for k in range(BIG_NAMES)],
                     position=[0.0] * BIG_NAMES, velocity=[0.0] * BIG_NAMES)
    time.sleep(1.0)
    drain(executor, [0], 1, timeout=0.5)
    out = {name: [] for name in received}
    for _ in range(ROUNDS):
        for name in ('typed', 'raw'):
            received[name][0] = 0
            for _ in range(BURST):
                publishers[name].publish(valid)
            out[name].append(drain(executor, received[name], BURST) / BURST * 1e6)
        for name in ('typed big', 'raw big'):
            received[name][0] = 0
            for _ in range(2):
                publishers[name].publish(big)
            out[name].append(drain(executor, received[name], 2) / 2 * 1e6)
    executor.shutdown()
    node.destroy_node()
    return out


def raw_big(data, counter, bounded):
    """Count an oversized message once its size check rejected it."""
    try:
        bounded.read(data)
    except Rejected:
        counter[0] += 1


def report(title, out, old, new):
    """Print medians of the per-round figures of `old` and `new` and their ratio."""
    a, b = np.median(out[old]), np.median(out[new])
    print(f'{title}: {old} {a:.1f} us, {new} {b:.1f} us, ratio {b / a:.2f}')


def main():
    """Run the three comparisons and print medians and ratios."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('bench_io', context=context)
    try:
        publish = bench_publish(node)
        report('publish 9 doubles, back to back', publish, 'message', 'bytes')
        report('publish 9 doubles, woken from 1 ms sleep', publish, 'message woken',
               'bytes woken')
        received = bench_input(context)
        report('valid joint_states to arrays, per message', received, 'typed', 'raw')
        report(f'{BIG_NAMES}-name joint_states, per message', received, 'typed big', 'raw big')
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


if __name__ == '__main__':
    main()
