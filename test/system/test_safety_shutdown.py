"""
Safe shutdown of a real controller process: after SIGTERM or SIGINT the last message on
`~/commands` is the safe command (zero effort; p_min in pressure mode), and the exit is clean;
the same when the node is destroyed by code that owns it.
"""

import signal
import time

import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.serialization import serialize_message
from std_msgs.msg import Float64MultiArray

from continuum_ctrl.params.launch_description import CONTROLLER
from continuum_ctrl.ros.controller_node import ControllerNode
from support.ros_nodes import params_file, running, START_TIMEOUT
from support.safety_tools import joint_state

#: starts node processes or DDS participants, for more than a few seconds
pytestmark = [pytest.mark.ros, pytest.mark.slow]

#: the 2R in pressure mode: PMA-like pushers, p_min above zero so that venting is visible
PRESSURE = {'output': {'mode': 'pressure', 'area': [1e-4], 'p_min': 1e4, 'p_max': 3e5}}


@pytest.mark.parametrize('sig, mode', [(signal.SIGTERM, 'effort'), (signal.SIGINT, 'effort'),
                                       (signal.SIGTERM, 'pressure')])
def test_last_command_after_a_signal_is_the_safe_command(tmp_path, sig, mode):
    """The controller runs against the simulator, is signalled, exits 0, vents last."""
    nodes = {'all': PRESSURE} if mode == 'pressure' else {}
    path = params_file(tmp_path, 'planar_2r.yaml', **nodes)
    safe = [1e4, 1e4] if mode == 'pressure' else [0.0, 0.0]
    with running(tmp_path, path) as (rec, processes):
        # controlling: commands other than the safe one (waited for, not a fixed second: the
        # recorder can lag the 500 Hz commands by more than that on a loaded machine)
        assert rec.wait(lambda: len(rec.commands) > 100, START_TIMEOUT, processes)
        sent = np.array([c for _, c in rec.commands])
        assert not np.all(sent == safe)
        processes[0].send_signal(sig)
        assert processes[0].wait(timeout=30.0) == 0
        rec.run(1.0)
    assert np.array_equal(rec.commands[-1][1], safe)


def test_destroying_the_node_publishes_the_safe_command_last(tmp_path):
    """A controller node owned by other code (composition, tests): destroy_node vents too."""
    path = params_file(tmp_path, 'planar_2r.yaml')
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = ControllerNode(context=context, cli_args=['--ros-args', '--params-file',
                                                         str(path)])
        listener = Node('listener', context=context)
        received = []
        listener.create_subscription(Float64MultiArray, f'/{CONTROLLER}/commands',
                                     lambda msg: received.append(list(msg.data)), 100)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(listener)
        state = serialize_message(joint_state(['joint1', 'joint2'], [0.2, -0.1], [0.0, 0.0]))
        end = time.monotonic() + 30.0
        while (not received or received[-1] == [0.0, 0.0]) and time.monotonic() < end:
            node._on_joint_states(state)    # as the executor would; the loop thread ticks
            executor.spin_once(timeout_sec=0.005)
        assert received and received[-1] != [0.0, 0.0]             # controlling
        node.destroy_node()
        count, quiet = len(received), time.monotonic() + 1.0        # until 1 s without news
        while time.monotonic() < quiet:
            executor.spin_once(timeout_sec=0.05)
            if len(received) != count:
                count, quiet = len(received), time.monotonic() + 1.0
        assert received[-1] == [0.0, 0.0]
        listener.destroy_node()
    finally:
        rclpy.shutdown(context=context)
