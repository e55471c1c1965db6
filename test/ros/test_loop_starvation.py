"""
The starvation detector on the controller node's own tick, in process.

The node's tick runs on a LoopThread, slowed on purpose past its deadlines for a second, then
at full speed: the status turns `degraded` (and, with `loop.safe_on_overrun`, the safe command
goes out) and recovers after. Its own module, so that no node processes of another test run
beside it and take the time its recovery needs.
"""

import time

import numpy as np
import pytest
import rclpy

from rclpy.serialization import serialize_message

from continuum_ctrl.ros.controller_node import ControllerNode
from continuum_ctrl.runtime.controller_runtime import DEGRADED
from continuum_ctrl.runtime.loop_thread import LoopThread
from support.ros_nodes import params_file
from support.safety_tools import joint_state

#: creates a DDS participant
pytestmark = [pytest.mark.ros]


@pytest.mark.parametrize('safe_on_overrun', [False, True])
def test_a_starved_loop_reports_degraded_and_recovers(tmp_path, safe_on_overrun):
    """The node's own tick, slowed past its deadlines on a LoopThread, then at full speed."""
    path = params_file(tmp_path, 'planar_2r.yaml', continuum_controller={
        'loop': {'safe_on_overrun': safe_on_overrun}, 'safe_mode': 'zero'})
    context = rclpy.Context()
    rclpy.init(context=context)
    node = ControllerNode(context=context, cli_args=['--ros-args', '--params-file', str(path)])
    try:
        assert node.runner.thread.stop()
        period = node.node_settings.period
        slow = [True]
        statuses, commands = [], []
        state = serialize_message(joint_state(['joint1', 'joint2'], [0.2, -0.1], [0.0, 0.0]))

        def tick(lateness):
            node._on_joint_states(state)       # as the executor would: the loop controls
            node._loop_tick(lateness)
            statuses.append(node.runtime.status)
            commands.append(node.loop.command.copy())
            if slow[0]:
                time.sleep(1.6 * period)        # every tick overruns the next deadline

        thread = LoopThread(tick, period)
        thread.start()
        time.sleep(1.0)
        slow[0] = False
        degraded_at = len(statuses)
        end = time.monotonic() + 10.0           # recovery: at most half the share missed
        while (len(statuses) < degraded_at + 300 or statuses[-1] == DEGRADED) and \
                time.monotonic() < end:
            time.sleep(0.1)
        assert thread.stop()
        assert DEGRADED in statuses[:degraded_at] and statuses[-1] != DEGRADED, statuses[-5:]
        assert node.runtime.status != DEGRADED
        values = dict(node.runtime.figures())
        assert values['run_missed_deadlines'] >= 0 and values['missed_share'] < 0.2
        events = [text for _, text in node.runtime.events]
        assert any('starved' in text for text in events) and any('recovered' in text
                                                                 for text in events)
        starved = [c for s, c in zip(statuses, commands) if s == DEGRADED]
        safe = [np.array_equal(c, np.zeros(2)) for c in starved]    # zero effort
        assert starved and (all(safe) if safe_on_overrun else not all(safe))
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
