"""
The simulator node's commands, in process: its count of commands per plant step, and stamped
JointState commands (late ones dropped and counted, bad ones rejected).

A real SimulatorNode (not spun: its command callback is called as the executor would, its
plant advanced by hand in whole steps of 2 ms). Two commands per step, as a 1 kHz controller
sends them, give `commands_per_step` 2 and, in the second window in a row, the one warning;
one per step gives 1 and none.
"""

import numpy as np
import pytest
import rclpy
from rclpy.serialization import serialize_message
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from continuum_ctrl.ros.simulator_node import SimulatorNode
from support.ros_nodes import params_file

#: creates a DDS participant
pytestmark = [pytest.mark.ros]

STEP = 0.002
STEPS = 10
COMMAND = serialize_message(Float64MultiArray(data=[0.0, 0.0]))


@pytest.fixture(params=['multiarray'])
def node(tmp_path, request):
    """The 2R simulator with a 2 ms step, taking commands of `output.message` = the param."""
    path = params_file(tmp_path, 'planar_2r.yaml', all={'output': {'message': request.param}},
                       continuum_simulator={'step': STEP})
    context = rclpy.Context()
    rclpy.init(context=context)
    made = SimulatorNode(context=context, cli_args=['--ros-args', '--params-file', str(path)])
    try:
        yield made
    finally:
        made.destroy_node()
        rclpy.shutdown(context=context)


@pytest.mark.parametrize('per_step, warned', [(2, True), (1, False)])
def test_commands_faster_than_the_plant_step_are_counted_and_warned_once(node, per_step,
                                                                         warned):
    plant = node.plant
    start = node._now()
    plant.advance(start)                        # the plant's clock starts
    node._on_command(COMMAND)                   # and its steps with the first command
    node.commands_per_step()                    # the window starts here
    for window in range(2):
        steps = plant.steps
        for k in range(window * STEPS, (window + 1) * STEPS):
            for _ in range(per_step):
                node._on_command(COMMAND)
            plant.advance(start + (k + 1.5) * STEP)
        assert plant.steps - steps == STEPS and node.rejected == 0
        assert node.commands_per_step() == per_step
        assert node._fast_warned == (warned and window == 1)   # two windows in a row


def joint_state_command(names, efforts, stamp):
    """Return a serialized JointState command: `efforts` by `names`, stamped `stamp` (s)."""
    msg = JointState(name=list(names), effort=[float(v) for v in efforts])
    msg.header.stamp = Time(nanoseconds=round(stamp * 1e9)).to_msg()
    return serialize_message(msg)


@pytest.mark.parametrize('node', ['joint_state'], indirect=True)
def test_stamped_commands_by_name_late_ones_dropped_and_counted(node):
    """
    Fresh commands apply by joint name; one stamped over `command_timeout` (0.1 s) ago, or
    before the command in force, never does and is counted in `late_commands`; bad ones
    (lengths, names, NaN, oversized) are rejected whole as before.
    """
    plant = node.plant
    assert plant.settings.message == 'joint_state'
    now = node._now()
    plant.advance(now)
    node._on_command(joint_state_command(['joint2', 'joint1'], [2.0, 1.0], now))
    assert plant.commands == 1 and np.array_equal(plant.tau, [1.0, 2.0])
    for age in (0.5, 0.1 + 1e-3):                   # replayed late: dropped
        node._on_command(joint_state_command(['joint1', 'joint2'], [9.0, 9.0],
                                             node._now() - age))
    node._on_command(joint_state_command(['joint1', 'joint2'], [9.0, 9.0], now - 1e-3))
    assert plant.late_commands == 3 and node.totals()['late_commands'] == 3
    assert plant.commands == 1 and np.array_equal(plant.tau, [1.0, 2.0])
    assert node.rejected == 0
    bad = [joint_state_command(['joint1', 'joint2'], [1.0], now),              # length
           joint_state_command(['joint1', 'joint1'], [1.0, 1.0], now),         # repeated
           joint_state_command(['joint1'], [1.0], now),                        # missing
           joint_state_command(['joint1', 'joint2'], [np.nan, 1.0], now),      # NaN
           joint_state_command([f'j{k}' for k in range(100)], np.zeros(100), now)]  # size
    for data in bad:
        node._on_command(data)
    assert node.rejected == len(bad) and plant.late_commands == 3
    assert plant.commands == 1 and np.array_equal(plant.tau, [1.0, 2.0])
    later = node._now()
    node._on_command(joint_state_command(['joint1', 'joint2', 'gripper'], [3.0, 4.0, 5.0],
                                         later))     # other joints: ignored, as in states
    assert plant.commands == 2 and np.array_equal(plant.tau, [3.0, 4.0])
    assert plant.command_time == pytest.approx(later, abs=1e-6)   # stale from its stamp


@pytest.mark.parametrize('node', ['joint_state'], indirect=True)
def test_the_message_kind_is_fixed_and_names_follow_a_change_of_joints(node):
    """`output.message` (the subscription's type) is refused at run time; `joints` is not."""
    from rclpy.parameter import Parameter
    result, = node.set_parameters([Parameter('output.message', value='multiarray')])
    assert not result.successful and 'output.message' in result.reason
    result, = node.set_parameters([Parameter('joints', value=['joint2', 'joint1'])])
    assert result.successful, result.reason
    now = node._now()
    node.plant.advance(now)
    node._on_command(joint_state_command(['joint1', 'joint2'], [1.0, 2.0], now))
    assert node.rejected == 0 and np.array_equal(node.plant.tau, [1.0, 2.0])   # model order
