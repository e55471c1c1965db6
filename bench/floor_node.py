"""
The floor under any rclpy controller here: a node that only publishes at the control rate.

    python bench/floor_node.py RATE_HZ SECONDS PRIORITY EXECUTOR [PUBLISH [LOOP]]

Named like the controller and with its topics (it subscribes to `joint_states` and publishes a
nine-element `~/commands` at RATE_HZ), it does no control work. PUBLISH: `message` (a reused
Float64MultiArray, default) or `bytes` (`CommandPublisher`, pre-serialized). LOOP: `timer` (an
executor timer, default) or `thread` (a `LoopThread` at PRIORITY, the executor and the
middleware's threads one below). Run against the
simulator, it measures what rclpy, DDS and this machine's scheduling alone cost the loop: ticks
on time, period and tick-duration percentiles and its CPU share (one core = 1.0), printed as
one JSON line after SECONDS. It is
the same-run baseline of bench_node.py.
"""

import json
import sys
import time

import numpy as np
import rclpy
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from continuum_ctrl.ros.controller_node import NODE_NAME
from continuum_ctrl.ros.fast_publish import CommandPublisher
from continuum_ctrl.runtime.loop_thread import LoopThread
from continuum_ctrl.ros.plumbing import make_executor, settle_heap
from continuum_ctrl.runtime.scheduling import set_node_priority, set_thread_priority
from continuum_ctrl.runtime.lateness import LATE_GAP

WARMUP = 3.0


def main():
    """Run the floor node; print its figures as JSON."""
    rate, seconds, priority, executor = (float(sys.argv[1]), float(sys.argv[2]),
                                         int(sys.argv[3]), sys.argv[4])
    publish_kind, loop_kind = (sys.argv[5:] + ['message', 'timer'][len(sys.argv[5:]):])[:2]
    rclpy.init()
    node = rclpy.create_node(NODE_NAME)
    if publish_kind == 'bytes':
        fast = CommandPublisher(node, '~/commands', [f'j{k}' for k in range(9)])
        values = np.zeros(9)
        publish = lambda: fast.publish(values)             # noqa: E731
    else:
        pub = node.create_publisher(Float64MultiArray, '~/commands', 10)
        msg = Float64MultiArray(data=[0.0] * 9)
        publish = lambda: pub.publish(msg)                 # noqa: E731
    node.create_subscription(JointState, 'joint_states', lambda _: None,
                             qos_profile_sensor_data)
    starts, durations = [], []

    def tick(lateness=0.0):
        start = time.perf_counter()
        publish()
        starts.append(start)
        durations.append(time.perf_counter() - start)

    thread = LoopThread(tick, 1.0 / rate, priority) if loop_kind == 'thread' else None
    if thread is None:
        node.create_timer(1.0 / rate, tick)
    settle_heap()
    spinner = make_executor(executor)
    spinner.add_node(node)
    if thread is None:
        problem = set_thread_priority(priority) if priority else None
    else:
        problem = set_node_priority(max(priority - 1, 1)) if priority else None
        thread.start()
    for phase in (WARMUP, seconds):     # the process's CPU share over the second phase
        cpu, wall = time.process_time(), time.monotonic()
        while time.monotonic() < wall + phase:
            spinner.spin_once(timeout_sec=0.1)
    cpu = (time.process_time() - cpu) / (time.monotonic() - wall)
    if thread is not None:
        thread.stop()
        problem = problem or thread.priority_problem
    first = int(WARMUP * rate)
    period = np.diff(starts)[first:] * 1e6
    duration = np.array(durations[first + 1:]) * 1e6
    print(json.dumps({
        'rate_hz': len(period) / (np.sum(period) * 1e-6),
        'on_time': float(np.mean(period < LATE_GAP * 1e6 / rate)),
        'period_p50_us': float(np.median(period)),
        'period_p99_us': float(np.percentile(period, 99)),
        'period_max_us': float(np.max(period)),
        'compute_p50_us': float(np.median(duration)),
        'compute_p99_us': float(np.percentile(duration, 99)),
        'cpu_controller': cpu,
        'priority_problem': problem}))
    node.destroy_node()
    rclpy.shutdown()


if __name__ == '__main__':
    main()
