"""
Helpers for the safety tests: fault-injecting messages, diagnostics.

The node processes themselves are started by test/support/ros_nodes.py (launch description command
lines); this module only adds what the fault injection needs.
"""

import math
import time

import numpy as np
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from continuum_ctrl.ros.conversion import stamp_seconds


def joint_state(names, position, velocity=(), stamp=None):
    """Return a JointState; `stamp`: float seconds (None: zero stamp, not checked)."""
    msg = JointState()
    msg.name = list(names)
    msg.position = [float(v) for v in position]
    msg.velocity = [float(v) for v in velocity]
    if stamp is not None:
        msg.header.stamp.sec = int(stamp)
        msg.header.stamp.nanosec = int((stamp - int(stamp)) * 1e9)
    return msg


def latest(rec, key, default=None):
    """Return the controller's latest /diagnostics value `key` as a float (or `default`)."""
    for values in reversed(rec.diagnostics):
        if key in values:
            return float(values[key])
    return default


def wait_diagnostics(rec, condition, timeout, processes=()):
    """Wait for a /diagnostics message after now whose values satisfy `condition(values)`."""
    start = len(rec.diagnostics)
    return rec.wait(lambda: any(condition(v) for v in rec.diagnostics[start:]), timeout,
                    processes)


def within(command, low, high, slack=1e-9):
    """Return whether every command lies in ``[low, high]`` (arrays, joints order)."""
    command = np.asarray(command, dtype=float)
    return bool(np.all(np.isfinite(command)) and np.all(command >= low - slack)
                and np.all(command <= high + slack))


def wall():
    """Return the wall clock in seconds (the nodes' ROS clock without use_sim_time)."""
    return time.time()


class Timeline:
    """
    Every `~/state` of the controller, with its loop status, from the recorder's node.

    `rows`: (stamp s, status, reference q, feedback q, effort), joints order; the stamp is the
    tick time on the controller's clock, so the rows are the controller's own timeline.
    `velocities`: each row's feedback velocity (the state the law used), in the same order.
    """

    def __init__(self, rec):
        self.rows = []
        self.velocities = []
        rec.node.create_subscription(JointTrajectory, f'/{rec.controller}/state', self._state,
                                     1000)

    def _state(self, msg):
        reference, feedback, _, output = msg.points
        self.velocities.append(np.array(feedback.velocities))
        self.rows.append((stamp_seconds(msg.header.stamp), msg.header.frame_id,
                          np.array(reference.positions), np.array(feedback.positions),
                          np.array(output.effort)))

    def shows(self, q):
        """Return whether the latest state's feedback equals `q` (the message was used)."""
        return bool(self.rows) and np.array_equal(self.rows[-1][3], q)

    def first_seen(self, q):
        """Return the stamp of the first state whose feedback equals `q` (None: never)."""
        return next((row[0] for row in self.rows if np.array_equal(row[3], q)), None)


def state_publisher(rec):
    """Return a publisher of joint states (sensor-data QoS, as the controller subscribes)."""
    return rec.node.create_publisher(JointState, '/joint_states', qos_profile_sensor_data)


def publish_until(rec, pub, msg, shown, processes, timeout=30.0):
    """
    Publish `msg` every 0.1 s until `shown()` holds; return whether it did within `timeout`.

    Joint states are best effort: the first ones from a new publisher are lost while DDS
    discovery between it and the controller is still under way.
    """
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pub.publish(msg)
        if rec.wait(shown, 0.1, processes):
            return True
    return False


class SentStates:
    """The joint states seen on `/joint_states`: feedback positions -> header stamp (s)."""

    def __init__(self, rec):
        self.stamps = {}
        rec.node.create_subscription(JointState, '/joint_states', self._state,
                                     qos_profile_sensor_data)

    def _state(self, msg):
        self.stamps[tuple(msg.position)] = stamp_seconds(msg.header.stamp)

    def sent_at(self, q):
        """Return the header stamp of the state with positions `q` (None: not seen)."""
        return self.stamps.get(tuple(q))


def trajectory(names, times, positions, velocities=None):
    """Return a JointTrajectory starting on receipt (zero stamp); rows may have any size."""
    msg = JointTrajectory(joint_names=list(names))
    for k, (t, p) in enumerate(zip(times, positions)):
        point = JointTrajectoryPoint(positions=[float(v) for v in p])
        if velocities is not None:
            point.velocities = [float(v) for v in velocities[k]]
        point.time_from_start.sec = int(math.floor(t))
        point.time_from_start.nanosec = int(round((t - math.floor(t)) * 1e9))
        msg.points.append(point)
    return msg
