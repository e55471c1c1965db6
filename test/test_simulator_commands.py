"""
The simulator node's count of commands per plant step, in process.

A real SimulatorNode (not spun: its command callback is called as the executor would, its
plant advanced by hand in whole steps of 2 ms). Two commands per step, as a 1 kHz controller
sends them, give `commands_per_step` 2 and, in the second window in a row, the one warning;
one per step gives 1 and none.
"""

import pytest
import rclpy
from rclpy.serialization import serialize_message
from std_msgs.msg import Float64MultiArray

from continuum_ctrl.ros.simulator_node import SimulatorNode
from ros_nodes import params_file

#: creates a DDS participant
pytestmark = [pytest.mark.ros]

STEP = 0.002
STEPS = 10
COMMAND = serialize_message(Float64MultiArray(data=[0.0, 0.0]))


@pytest.fixture
def node(tmp_path):
    """The 2R simulator with a 2 ms step."""
    path = params_file(tmp_path, 'planar_2r.yaml', continuum_simulator={'step': STEP})
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
