"""
The simulator node reports its longest gap between two commands heard, in process.

Issue 49's collapse was a command stream stalled for about 177 ms: the simulator vented
every PMA once `command_timeout` (0.1 s) had passed, and only its count of stale commands
told of it. A real SimulatorNode of the reference arm and a publisher in one executor.
"""

import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import Float64MultiArray

from continuum_ctrl.ros.simulator_node import SimulatorNode
from support.ros_nodes import params_file

#: creates a DDS participant
pytestmark = [pytest.mark.ros]

#: the silence between the two bursts of commands, s
GAP = 0.15


def test_a_stalled_command_stream_is_reported_by_its_length(tmp_path):
    path = params_file(tmp_path, 'continuum_3section.yaml')
    context = rclpy.Context()
    rclpy.init(context=context)
    executor = SingleThreadedExecutor(context=context)
    node = SimulatorNode(context=context, cli_args=['--ros-args', '--params-file', str(path)])
    sender = rclpy.create_node('gap_sender', context=context)
    publisher = sender.create_publisher(Float64MultiArray, '/commands', 10)
    command = Float64MultiArray(data=[50e3] * 9)

    def spin(seconds, send):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if send:
                publisher.publish(command)
            executor.spin_once(timeout_sec=0.002)

    try:
        executor.add_node(node)
        executor.add_node(sender)
        spin(0.3, True)
        before = node.totals()['longest_command_gap_ms']
        spin(GAP, False)
        spin(0.1, True)
        totals = node.totals()
    finally:
        executor.shutdown()
        sender.destroy_node()
        node.destroy_node()
        rclpy.shutdown(context=context)
    assert before < 0.5 * 1e3 * GAP
    # the first burst's last commands may still arrive within the silence
    assert 0.7e3 * GAP <= totals['longest_command_gap_ms'] < 1e3 * (GAP + 0.1)
    assert totals['stale_commands'] == 1
