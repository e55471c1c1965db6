"""
Foreign joint states (naming none of the arm's joints) on a shared topic, in process.

A real ControllerNode (its loop thread stopped; its callback and tick called as the executor
and the loop thread would) waits for `resume_count` consecutive valid states. Another robot's
states interleaved with them are counted (`rejected_foreign`) but do not break the streak, so
the arm starts controlling after the same number of valid states as alone. So do states
longer than `input.max_joint_states_bytes` (counted as `rejected_size`, unread): no state of
this arm is that long, and in a flood they would otherwise keep it from resuming. A bad state
of the arm itself (a missing joint) does break it, so the same interleaving keeps the arm
waiting.
"""

import pytest
import rclpy
from rclpy.serialization import serialize_message

from continuum_ctrl.ros.controller_node import ControllerNode
from support.ros_nodes import params_file
from support.safety_tools import joint_state

#: creates a DDS participant
pytestmark = [pytest.mark.ros]

RESUME_COUNT = 5
VALID = serialize_message(joint_state(['joint1', 'joint2'], [0.2, -0.1], [0.0, 0.0]))
#: another robot's state: none of the arm's joints
FOREIGN = serialize_message(joint_state(['gripper_finger'], [0.01], [0.0]))
#: longer than MAX_BYTES: 100 names
OVERSIZED = serialize_message(joint_state([f'joint{k}' for k in range(100)], [0.0] * 100,
                                          [0.0] * 100))
MAX_BYTES = 1000
#: the arm's own state with a joint missing
PARTIAL = serialize_message(joint_state(['joint1', 'gripper_finger'], [0.2, 0.01], [0.0, 0.0]))


@pytest.fixture
def node(tmp_path):
    """The 2R controller, built and activated, its loop thread stopped."""
    path = params_file(tmp_path, 'planar_2r.yaml', continuum_controller={
        'resume_count': RESUME_COUNT, 'state_timeout': 10.0,
        'input.max_joint_states_bytes': MAX_BYTES})
    context = rclpy.Context()
    rclpy.init(context=context)
    made = ControllerNode(context=context, cli_args=['--ros-args', '--params-file', str(path)])
    try:
        assert made.runner.thread.stop()
        yield made
    finally:
        made.destroy_node()
        rclpy.shutdown(context=context)


def interleave(node, other, valid_count):
    """Send `valid_count` valid states, each followed by `other`; return the statuses."""
    statuses = []
    for _ in range(valid_count):
        for data in (VALID, other):
            node._on_joint_states(data)
            node._loop_tick(0.0)
            statuses.append(node.runtime.status)
    return statuses


def test_foreign_states_between_valid_ones_do_not_delay_activation(node):
    statuses = interleave(node, FOREIGN, RESUME_COUNT)
    assert statuses[:2 * RESUME_COUNT - 2] == ['waiting'] * (2 * RESUME_COUNT - 2)
    assert statuses[-2:] == ['active', 'active'], statuses
    assert node.runtime.rejected['foreign'] == RESUME_COUNT and node.runtime.rejected['names'] == 0


def test_oversized_states_between_valid_ones_do_not_delay_activation(node):
    assert len(VALID) <= MAX_BYTES < len(OVERSIZED)
    statuses = interleave(node, OVERSIZED, RESUME_COUNT)
    assert statuses[:2 * RESUME_COUNT - 2] == ['waiting'] * (2 * RESUME_COUNT - 2)
    assert statuses[-2:] == ['active', 'active'], statuses
    assert node.runtime.rejected['size'] == RESUME_COUNT


def test_a_bad_state_of_the_arm_between_valid_ones_keeps_it_waiting(node):
    statuses = interleave(node, PARTIAL, 4 * RESUME_COUNT)
    assert set(statuses) == {'waiting'}, statuses
    rejected = node.runtime.rejected
    assert rejected['names'] == 4 * RESUME_COUNT and rejected['foreign'] == 0
