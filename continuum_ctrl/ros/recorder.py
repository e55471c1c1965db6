"""
Record a running controller from outside: its `~/state`, `~/commands` and `/diagnostics`.

Used by the closed-loop demo, the benchmark and the node tests:

    with Recorder('continuum_controller') as rec:
        rec.wait(lambda: len(rec.states) > 100, timeout=30.0)
        rec.run(5.0)
        t, q_des, q = rec.arrays()
"""

import time

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from continuum_ctrl.identify.bag import BagWriter
from continuum_ctrl.ros.conversion import stamp_seconds
from continuum_ctrl.params.launch_description import (JOINT_TRUTH_TOPIC, MOCAP_TOPIC,
                                                      TRUTH_TOPIC)
from continuum_ctrl.ros.fast_publish import FORMS
from continuum_ctrl.ros.plumbing import single_threaded_executor
from continuum_ctrl.runtime.controller_runtime import CONTROLLING
from continuum_ctrl.runtime.scheduling import set_node_priority

#: history depth of the recorded topics, messages: the middleware keeps what arrives while
#: this process waits for a core (5 s at 1 kHz); a shallow history drops the oldest messages
#: as soon as the recorder falls a batch behind, and the reliable repair then stalls the topic
DEPTH = 5000


class Recorder:
    """
    A node of its own, in its own rclpy context, listening to one controller.

    `states`: (stamp s, reference q, feedback q, output effort) per `~/state` message;
    `status`: the controller's loop status, `active_since`: stamp of the first controlling
    (active or degraded) state;
    states stamped before the recorder started (a previous run's) are ignored;
    `commands`: (send time s, values), the send time being the DDS source timestamp (the
    controller's clock when it published: a recorder that falls behind receives late, and
    its receive times would bunch up), heard as the controller's `output.message`
    (`message`); `diagnostics`: dicts of the controller's latest
    figures (strings as published); `sim_diagnostics` likewise for the simulator;
    `diagnostic_stamps`, `sim_diagnostic_stamps`: their header stamps (s); `tips`: topic ->
    (stamp s, position m) of the controller's ``~/tip_desired``, of the motion capture
    (MOCAP_TOPIC, the controller's ``~/tip_measured`` in simulation) and of the simulator's
    true tip (TRUTH_TOPIC). With
    ``record=False`` only /diagnostics is heard (light, for benchmarks). With ``bag=True``
    `messages` also keeps ``(topic, type, message, receive time ns, send time ns)`` of
    `~/state`, `~/commands`, `/joint_states`, the simulator's true ones (JOINT_TRUTH_TOPIC),
    `/diagnostics` and the tips for `write_bag`
    (written after the run, so recording costs the loop nothing). `priority`: the SCHED_FIFO
    priority of the recorder's threads while `run` records (0: normal scheduling), below the
    recorded nodes' own.
    """

    def __init__(self, controller='continuum_controller', simulator='continuum_simulator',
                 record=True, bag=False, priority=0, message='multiarray'):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = Node('continuum_recorder', context=self.context)
        # the events executor takes about half the CPU per message, but rclpy's (Kilted)
        # fails on a callback that takes the message info ("null argument to internal
        # routine"), which a recording needs for the send times: it hears /diagnostics alone
        self.executor = single_threaded_executor(events=not (record or bag),
                                                 context=self.context,
                                                 logger=self.node.get_logger())
        self.executor.add_node(self.node)
        self.controller, self.simulator = controller, simulator
        self.priority = priority
        self.states, self.commands, self.diagnostics, self.sim_diagnostics = [], [], [], []
        self.diagnostic_stamps, self.sim_diagnostic_stamps = [], []
        self.joint_names = None
        self.started = time.time()
        self.status = None
        self.active_since = None
        self.messages = [] if bag else None
        self.tips = {}
        if bag:     # typed: raw subscriptions repeat their callback under the EventsExecutor
            for topic in ('/joint_states', JOINT_TRUTH_TOPIC):
                self.node.create_subscription(JointState, topic, self._keep(
                    topic, 'sensor_msgs/msg/JointState'), QoSProfile(
                        depth=DEPTH, reliability=ReliabilityPolicy.BEST_EFFORT))
        if record:
            self.node.create_subscription(JointTrajectory, f'/{controller}/state', self._state,
                                          DEPTH)
            self.command_type = FORMS[message].msg_type
            self.node.create_subscription(self.command_type, f'/{controller}/commands',
                                          self._command, DEPTH)
            for topic in (f'/{controller}/tip_desired', MOCAP_TOPIC, TRUTH_TOPIC):
                self.tips[topic] = []
                self.node.create_subscription(PoseStamped, topic, self._tip(topic), DEPTH)
        # only a bag needs the message info (the send time), which the events executor lacks
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._diagnostics_kept
                                      if bag else self._diagnostics, 10)

    def _keep(self, topic, type_name):
        def keep(msg, info):
            self._bag(topic, type_name, msg, info)
        return keep

    def _bag(self, topic, type_name, msg, info):
        """Keep `msg` for `write_bag` (with ``bag=True``): its receive and send times, ns."""
        if self.messages is not None:
            self.messages.append((topic, type_name, msg, time.time_ns(),
                                  info['source_timestamp']))

    def _tip(self, topic):
        def keep(msg, info):
            self._bag(topic, 'geometry_msgs/msg/PoseStamped', msg, info)
            p = msg.pose.position
            self.tips[topic].append((stamp_seconds(msg.header.stamp), np.array([p.x, p.y, p.z])))
        return keep

    def _state(self, msg, info):
        self._bag(f'/{self.controller}/state', 'trajectory_msgs/msg/JointTrajectory', msg,
                  info)
        stamp = stamp_seconds(msg.header.stamp)
        if stamp < self.started:
            return
        self.joint_names = list(msg.joint_names)
        self.status = msg.header.frame_id
        if self.status in CONTROLLING and self.active_since is None:
            self.active_since = stamp
        reference, feedback, _, output = msg.points
        self.states.append((stamp, np.array(reference.positions),
                            np.array(feedback.positions), np.array(output.effort)))

    def _command(self, msg, info):
        stamped = self.command_type is JointState
        self._bag(f'/{self.controller}/commands', 'sensor_msgs/msg/JointState' if stamped
                  else 'std_msgs/msg/Float64MultiArray', msg, info)
        self.commands.append((info['source_timestamp'] * 1e-9,
                              np.array(msg.effort if stamped else msg.data)))

    def _diagnostics_kept(self, msg, info):
        self._bag('/diagnostics', 'diagnostic_msgs/msg/DiagnosticArray', msg, info)
        self._diagnostics(msg)

    def _diagnostics(self, msg):
        stamp = stamp_seconds(msg.header.stamp)
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            if status.hardware_id.endswith(self.controller):
                self.diagnostics.append(values)
                self.diagnostic_stamps.append(stamp)
            elif status.hardware_id.endswith(self.simulator):
                self.sim_diagnostics.append(values)
                self.sim_diagnostic_stamps.append(stamp)

    def grown(self, key, since, until=None, simulator=False):
        """
        Return how much the controller's (the simulator's) run count `key` grew in a span.

        The span: from the stamp `since` to `until` (s; None: the latest figure). The
        figures come once per diagnostics window; a window's growth is taken as spread
        evenly over it, so a window that straddles `since` or `until` counts by its share
        in the span. The first figure's window is taken whole when it ends after `since`.
        """
        windows, stamps = ((self.sim_diagnostics, self.sim_diagnostic_stamps) if simulator
                           else (self.diagnostics, self.diagnostic_stamps))
        counts = [(stamp, float(values[key]))
                  for stamp, values in zip(stamps, windows) if key in values]
        if not counts:
            return 0
        until = counts[-1][0] if until is None else until
        grown = counts[0][1] if since < counts[0][0] <= until else 0.0
        for (start, before), (stamp, count) in zip(counts, counts[1:]):
            overlap = min(stamp, until) - max(start, since)
            if overlap > 0 and stamp > start:
                grown += (count - before) * overlap / (stamp - start)
        return int(grown + 0.5)

    def run(self, seconds, until=None):
        """
        Process messages for `seconds` (wall time), at `priority` if one is given.

        With `until`, stop as soon as ``until()`` holds; return whether it held (True
        without).
        """
        problem = set_node_priority(self.priority) if self.priority else None
        if problem is not None:
            self.node.get_logger().warning(f'recording at normal scheduling: {problem}')
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                if until is not None and until():
                    return True
                self.executor.spin_once(timeout_sec=min(0.05, max(end - time.monotonic(),
                                                                  0.0)))
        finally:
            if self.priority and problem is None:
                set_node_priority(0)
        return until is None or until()

    def wait(self, condition, timeout, processes=()):
        """
        Process messages until `condition()` holds; return whether it did within `timeout` s.

        Stops early (False) when one of `processes` (Popen) has exited.
        """
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if condition():
                return True
            if any(p.poll() is not None for p in processes):
                return False
            self.executor.spin_once(timeout_sec=0.05)
        return condition()

    def arrays(self, since=None, until=None):
        """Return ``(t, q_des, q, effort)`` of the states stamped `since` to `until` (s)."""
        rows = [s for s in self.states
                if (since is None or s[0] >= since) and (until is None or s[0] <= until)]
        if not rows:
            return np.zeros(0), np.zeros((0, 0)), np.zeros((0, 0)), np.zeros((0, 0))
        return tuple(np.array(column) for column in zip(*rows))

    def samples(self, names, since, until, kept='/joint_states'):
        """
        Return ``(stamps s, positions (N, len(names)))`` of the kept `kept` states in `names`.

        Those stamped `since` to `until` (s), in stamp order, one per stamp: the sensor's
        samples at the time they held, or with JOINT_TRUTH_TOPIC the simulator's true states
        (``bag=True`` keeps them; else none).
        """
        rows = [(stamp_seconds(msg.header.stamp), msg) for topic, _, msg, _, _ in
                self.messages or () if topic == kept]
        rows = sorted(((s, m) for s, m in rows if since <= s <= until and
                       set(names) <= set(m.name)), key=lambda row: row[0])
        stamps, first = np.unique([s for s, _ in rows], return_index=True)   # one per stamp
        positions = [np.asarray(rows[k][1].position)[[list(rows[k][1].name).index(name)
                                                      for name in names]] for k in first]
        return stamps, np.array(positions).reshape(len(stamps), len(names))

    def write_bag(self, path):
        """
        Write the kept messages as a rosbag2 MCAP file, in send order.

        Log time: the receive time; publish time: the send time (DDS source timestamp), as
        `ros2 bag record` writes them.
        """
        with BagWriter(path) as bag:
            for topic, type_name, msg, received, sent in sorted(self.messages,
                                                                key=lambda m: m[4]):
                bag.write(topic, type_name, msg, received, sent)
        return path

    def close(self):
        """Destroy the node and shut its context down."""
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)

    def __enter__(self):
        """Return the recorder."""
        return self

    def __exit__(self, *exc):
        """Close the recorder."""
        self.close()
