"""
A listener on one side of the two-host rig (test/support/two_hosts.py), as a process of its own.

    ip netns exec NS python test/support/rig_listener.py {near|far} OUT.pickle

`near` (beside the controller) runs a Recorder: the controller's `~/state` (with each one's
loop status), `~/commands` and /diagnostics; it prints ``active`` once the controller
controls. `far` (beside the simulator) keeps the simulator's `joint_states` (stamp, effort)
and /diagnostics, and the controller's commands as a reliable subscriber receives them
there: (send time, receive time, values), the DDS source and reception timestamps (s, one
machine's clock: the reception is stamped by the middleware's receive thread, not when this
process gets to the callback); its history is deep, so that a listener held up by a loaded
machine loses none. The same two timestamps of each `joint_states` (`state_receipts`) say
when this side's own machine, not the link, held the reception up: the simulator publishes
them on this side, so their receipt crosses no link. Both print ``ready`` once their node
exists, record until SIGINT or SIGTERM, then write what they kept to OUT.pickle. They run at
a real-time priority below the nodes'.

A process per side, not a participant per namespace in the test process: Fast DDS looks up a
process's network interfaces once, so a second participant made in another namespace
announced the first namespace's address and was never reached.
"""

import pickle
import signal
import sys

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from continuum_ctrl.params.launch_description import CONTROLLER, SIMULATOR
from continuum_ctrl.ros.conversion import stamp_seconds
from continuum_ctrl.ros.plumbing import single_threaded_executor
from continuum_ctrl.ros.recorder import Recorder
from continuum_ctrl.runtime.scheduling import set_node_priority

#: SCHED_FIFO priority of a listener's threads: below the nodes' 50 (the shipped config), so
#: that its receive times are the network's rather than a loaded machine's
PRIORITY = 40


class FarSide:
    """The far side's node: what the simulator publishes and what reaches it."""

    def __init__(self):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = Node('rig_far_side', context=self.context)
        self.executor = single_threaded_executor(events=False, context=self.context,
                                                 logger=self.node.get_logger())
        self.executor.add_node(self.node)
        self.states, self.state_receipts, self.commands, self.diagnostics = [], [], [], []
        self.node.create_subscription(JointState, '/joint_states', self._state,
                                      QoSProfile(depth=1000))
        self.node.create_subscription(Float64MultiArray, f'/{CONTROLLER}/commands',
                                      self._command, QoSProfile(depth=1000))
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._diagnostics, 10)

    def _state(self, msg, info):
        self.states.append((stamp_seconds(msg.header.stamp), np.array(msg.effort)))
        self.state_receipts.append((info['source_timestamp'] * 1e-9,
                                    info['received_timestamp'] * 1e-9))

    def _command(self, msg, info):
        self.commands.append((info['source_timestamp'] * 1e-9,
                              info['received_timestamp'] * 1e-9, np.array(msg.data)))

    def _diagnostics(self, msg):
        for status in msg.status:
            if status.hardware_id.endswith(SIMULATOR):
                self.diagnostics.append((stamp_seconds(msg.header.stamp),
                                         {kv.key: kv.value for kv in status.values}))

    def spin_once(self):
        """Take the messages of up to 50 ms."""
        self.executor.spin_once(timeout_sec=0.05)

    def kept(self):
        """Return what was kept, as plain data."""
        return {'states': self.states, 'state_receipts': self.state_receipts,
                'commands': self.commands, 'diagnostics': self.diagnostics}


class NearSide(Recorder):
    """The near side's node: a Recorder of the controller, with each state's loop status."""

    def __init__(self):
        super().__init__()
        self.statuses = []

    def _state(self, msg, info):
        kept = len(self.states)
        super()._state(msg, info)
        if len(self.states) > kept:
            self.statuses.append(self.status)

    def spin_once(self):
        """Take the messages of up to 50 ms; say ``active`` once the controller controls."""
        before = self.active_since
        self.executor.spin_once(timeout_sec=0.05)
        if before is None and self.active_since is not None:
            print('active', flush=True)

    def kept(self):
        """Return what was kept, as plain data."""
        return {'states': self.states, 'statuses': self.statuses,
                'commands': self.commands,
                'diagnostics': list(zip(self.diagnostic_stamps, self.diagnostics))}


def main(side, out):
    """Record on `side` until SIGINT or SIGTERM; write the pickle `out`."""
    stopped = []
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stopped.append(True))
    listener = NearSide() if side == 'near' else FarSide()
    set_node_priority(PRIORITY)     # where allowed; a loaded machine then delays it less
    print('ready', flush=True)
    while not stopped:
        listener.spin_once()
    with open(out, 'wb') as file:
        pickle.dump(listener.kept(), file)


if __name__ == '__main__':
    main(*sys.argv[1:3])
