"""
The controller node's input side (executor thread): subscriptions, checks, posts to the runtime.

`ControllerSubscriptions` is a part of `ControllerNode` (ros/controller_node.py), which it assumes:
a `LifecycleNode` with `runtime` (its ControllerRuntime, None when unconfigured), `input`
(its ControllerInput: bounds, reads and validates serialized messages) and `throttle` (of the
rejection log lines). `subscribe` makes `joint_states`, `~/joint_trajectory` and
`~/pressures` (taken serialized, size-bounded); each callback hands what it read to the
runtime, or counts and logs (throttled) why it was rejected.
"""

import time

from rclpy.qos import QoSProfile, qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from continuum_ctrl.control.reference_manager import TrajectoryRejected
from continuum_ctrl.control.supervisor import ACTIVE
from continuum_ctrl.ros.controller_input import BAD_STATE_KINDS
from continuum_ctrl.ros.conversion import FOREIGN, Rejected


class ControllerSubscriptions:
    """The controller node's subscriptions and their callbacks (module doc)."""

    def subscribe(self) -> None:
        """Make the input subscriptions (once per node: they stay over cleanup)."""
        self.create_subscription(JointState, 'joint_states', self._on_joint_states,
                                 qos_profile_sensor_data, raw=True)
        self.create_subscription(JointTrajectory, '~/joint_trajectory',
                                 self._on_trajectory, QoSProfile(depth=10), raw=True)
        self.create_subscription(Float64MultiArray, '~/pressures', self._on_pressures,
                                 qos_profile_sensor_data, raw=True)

    def now(self) -> float:
        """Return the node's ROS time (s): /clock under `use_sim_time`, else system time."""
        clock = self.get_clock()
        if clock.ros_time_is_active:
            return clock.now().nanoseconds * 1e-9
        return time.time_ns() * 1e-9    # the system clock the ROS clock reads, 1.4 us sooner

    def reject(self, kind, reason, what='joint_states'):
        """Count a rejected input of `kind` and log it (throttled)."""
        self.runtime.post_rejection(kind, kind in BAD_STATE_KINDS)
        if kind == FOREIGN and self.runtime.cycle.status == ACTIVE:
            return          # normal traffic on a shared topic; worth a line only while waiting
        if self.throttle.ready():
            self.get_logger().warning(f'rejected {what} ({kind}): {reason}; totals '
                                      f'{self.runtime.rejected}')

    def _on_joint_states(self, data):
        """Bound, read and validate a serialized JointState; post it to the runtime."""
        if self.runtime is None:
            return
        t = self.now()
        try:
            q, qd, sent = self.input.state(data, t)
        except Rejected as exc:
            self.reject(exc.kind, str(exc))
            return
        # the stamp says when the state held (checked against `stamp_tolerance`); the valve
        # compensation predicts from then, over the time the message waited to be read here,
        # and the loop differences positions over the stamps (no velocities: qd None)
        self.runtime.post_state(q, qd, t, sent if sent > 0.0 else None,
                                time.time() - sent if sent > 0.0 else None)

    def _on_trajectory(self, data):
        """Bound and check a serialized JointTrajectory; the next tick installs it."""
        if self.runtime is None:
            return
        now = self.now()
        try:
            times, *waypoints = self.input.trajectory(data, now)
            self.runtime.follow(times, *waypoints, t=now)
        except Rejected as exc:
            self.reject(exc.kind, str(exc), 'joint_trajectory')
            return
        except TrajectoryRejected as exc:
            self.reject('trajectory', str(exc), 'joint_trajectory')
            return
        self.get_logger().info(f'following a trajectory of {len(times)} points over '
                               f'{times[-1]:.3f} s')

    def _on_pressures(self, data):
        """Bound a serialized pressure vector; the next tick applies it (and may reject it)."""
        if self.runtime is None:
            return
        try:
            pressures = self.input.pressures(data)
        except Rejected as exc:
            self.reject(exc.kind, str(exc), '~/pressures')
            return
        self.runtime.post_pressures(pressures, self.now())
