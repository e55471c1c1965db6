"""
`continuum-ctrl demo` refuses a run whose controller hears another arm's joint_states.

A test module or another run on the same ROS_DOMAIN_ID (the tests pick theirs from their pid)
publishes `joint_states` too: the controller went active on them before its simulator
started, and the demo printed that arm's figures as its own (18 mm of "collapse" in issue
49's spread through the nodes, with a simulator that had crashed on import).
"""

from pathlib import Path
import subprocess
import sys
import threading

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState

#: starts node processes and a DDS participant for several seconds
pytestmark = [pytest.mark.ros, pytest.mark.slow]

JOINTS = [f'section{s}_pma{p}' for s in (1, 2, 3) for p in (1, 2, 3)]


def foreign_states(context, stop):
    """Publish valid joint_states of the 3-section arm at 100 Hz on `context` until `stop`."""
    node = rclpy.create_node('foreign_arm', context=context)
    pub = node.create_publisher(JointState, 'joint_states', 10)

    def send():
        msg = JointState(name=JOINTS, position=[0.02] * 9, velocity=[0.0] * 9)
        msg.header.stamp = node.get_clock().now().to_msg()
        pub.publish(msg)

    node.create_timer(0.01, send)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    while not stop.is_set():
        executor.spin_once(timeout_sec=0.05)
    node.destroy_node()


def test_the_demo_refuses_a_controller_active_before_its_simulator(tmp_path):
    context = rclpy.Context()
    rclpy.init(context=context)
    stop = threading.Event()
    thread = threading.Thread(target=foreign_states, args=(context, stop))
    thread.start()
    try:
        done = subprocess.run(
            [sys.executable, '-m', 'continuum_ctrl.apps.cli', 'demo', '--arm',
             'continuum_3section', '--engine', 'builtin', '--duration', '1',
             '--out', str(tmp_path)], capture_output=True, text=True, timeout=120)
    finally:
        stop.set()
        thread.join()
        rclpy.shutdown(context=context)
    assert done.returncode == 1, done.stdout + done.stderr
    line = done.stderr.strip().splitlines()[-1]
    # found as it went active, or (the foreign publisher discovered later) after the run
    assert ('went active before its simulator started' in line and
            'another node publishes joint_states on ROS_DOMAIN_ID' in line or
            'nodes publish joint_states on ROS_DOMAIN_ID' in line), done.stderr
    assert not (Path(tmp_path) / 'closed_loop.csv').exists()
