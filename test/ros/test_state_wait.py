"""
The controller's latency figures, in process: a new state's wait for its first tick.

A real ControllerNode (loop thread stopped; callback and ticks called as the executor and the
loop thread would) gets a state, then three ticks, 3 ms apart, the first 3 ms after it:
`state_wait_*` counts each new state once, at the first tick that uses it (about 3 ms), while
`input_age_*` counts every tick (about 3, 6 and 9 ms), so the ticks that reuse a state lift its
median to about 6 ms. The margins are milliseconds, not the microseconds of a tick, so a loaded
machine's sleeps do not reorder the medians.
"""

import time

import pytest
import rclpy
from rclpy.serialization import serialize_message

from continuum_ctrl.ros.controller_node import ControllerNode
from support.ros_nodes import params_file
from support.safety_tools import joint_state

#: creates a DDS participant
pytestmark = [pytest.mark.ros]

STATES = 20
#: from a state's receipt to the first tick, and between ticks, s
GAP = 0.003


def test_a_new_state_waits_once_and_ticks_that_reuse_it_age_it(tmp_path):
    path = params_file(tmp_path, 'planar_2r.yaml', continuum_controller={
        'resume_count': 1, 'state_timeout': 10.0})
    context = rclpy.Context()
    rclpy.init(context=context)
    node = ControllerNode(context=context, cli_args=['--ros-args', '--params-file', str(path)])
    try:
        assert node.runner.thread.stop()
        data = serialize_message(joint_state(['joint1', 'joint2'], [0.2, -0.1], [0.0, 0.0]))
        node._on_joint_states(data)
        node._loop_tick(0.0)                            # activates on the first state
        assert node.runtime.status == 'active'
        node.runtime.figures()                              # a new window from here
        for _ in range(STATES):
            node._on_joint_states(data)
            for _ in range(3):
                time.sleep(GAP)
                node._loop_tick(0.0)
        assert node.runtime.wait.count == STATES and node.runtime.age.count == 3 * STATES
        figures = dict(node.runtime.figures())
        wait, age = float(figures['state_wait_p50_us']), float(figures['input_age_p50_us'])
        assert GAP * 1e6 <= wait < 2 * GAP * 1e6 <= age, (wait, age)
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
