"""
`controller_node`: computed-torque control of any model over ROS 2 (node `continuum_controller`).

A managed (lifecycle) node, with the standard `~/change_state`, `~/get_state`, ... services:
- configure: read and validate the parameters, load and warm the model (and, the first time,
  make the topics); a bad parameter fails the transition with one `parameter 'KEY': ...` line
  in the log, and the node stays unconfigured;
- activate: start the loop (the safe command until valid joint states arrive);
- deactivate: publish the safe command once, then no more commands;
- cleanup, shutdown: the same, and release the model, loop and timers (the topics stay,
  silent).
With `autostart` (default true) the node configures and activates itself when made (a bad
parameter then raises its ConfigError from the constructor, as a plain node would).

Topics (relative names, remap as needed):
- sub `joint_states` (sensor_msgs/JointState): measured state, mapped by joint name;
- sub `~/joint_trajectory` (trajectory_msgs/JointTrajectory): replaces the reference;
- sub `~/pressures` (std_msgs/Float64MultiArray, Pa, `joints` order): measured PMA pressures,
  optional; the valve compensation uses them in place of its model's estimate;
- pub `~/commands` (std_msgs/Float64MultiArray): efforts (N, N m) or pressures (Pa), `joints`
  order, as ros2_control's ForwardCommandController takes them;
- pub `~/state` (trajectory_msgs/JointTrajectory, `joints` order): points are, like
  control_msgs/JointTrajectoryControllerState, [reference (positions, velocities,
  accelerations), feedback (positions, velocities), error (positions, velocities), output
  (effort: the generalized force sent)]; header stamp: the tick time; header frame_id: the
  loop status (waiting, active, stale, stopped); every `state_decimation`-th tick;
- pub `/diagnostics` (diagnostic_msgs/DiagnosticArray, ~1 Hz): loop rate, period and compute
  time percentiles (window and whole run), input age at the tick, joint_states latency (header
  stamp to receipt, wall clock), rejected-input counts, status.
One timer at `rate_hz`, while active, on a single-threaded executor runs the loop (see
`ros.plumbing.spin`).
"""

import array
import threading
import time
from typing import Any, Dict, Optional, Tuple

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.qos import QoSProfile, qos_profile_sensor_data
from sensor_msgs.msg import JointState
from geometry_msgs.msg import PoseStamped
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import MarkerArray

from continuum_ctrl.control.loop import ACTIVE, ControlLoop, TrajectoryRejected
from continuum_ctrl.control.settings import ControllerSettings, FIELDS
from continuum_ctrl.launch_description import CONTROLLER as NODE_NAME
from continuum_ctrl.models import load_model
from continuum_ctrl.params import ConfigError
from continuum_ctrl.ros.conversion import (JointStateReader, REJECT_KINDS, Rejected, set_doubles,
                                           stamp_seconds, trajectory_arrays)
from continuum_ctrl.ros.node_settings import CONTROLLER_NODE_FIELDS, ControllerNodeSettings
from continuum_ctrl.ros.parameters import NodeParameters
from continuum_ctrl.ros.plumbing import spin, Throttle
from continuum_ctrl.ros.scheduling import apply_thread_priority
from continuum_ctrl.ros.task_messages import read_tip_target, Shape, TipPose
from continuum_ctrl.ros.timing import Durations

__all__ = ['ControllerNode', 'main', 'NODE_NAME']

#: rate of `~/shape`, Hz
SHAPE_RATE_HZ = 30.0
#: `~/tip_pose` follows `~/state` (every `state_decimation` ticks) up to this rate, Hz: the
#: executor that runs it is the loop's
TIP_POSE_MAX_RATE_HZ = 100.0
#: backbone points per section in `~/shape`
SHAPE_POINTS = 10
#: a tick is late when its period exceeds the nominal one by this factor
LATE_FACTOR = 1.5
#: every parameter the node declares besides `model.*`
NODE_FIELDS = {**CONTROLLER_NODE_FIELDS, **FIELDS}
SUCCESS, FAILURE = TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE


class ControllerNode(LifecycleNode):
    """The controller node; see the module documentation for its interface."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, automatically_declare_parameters_from_overrides=True,
                         **kwargs)
        self.params = NodeParameters(self, NODE_FIELDS, self._on_change)
        self.autostart = self.params.values.get('autostart', True)
        self.error: Optional[ConfigError] = None
        self.model = None
        self.loop: ControlLoop = None
        self.timer = None
        self.diag_timer = None
        self.command_pub = self.state_pub = self.diag_pub = None
        self.tip_pose_pub = self.shape_pub = None
        self.task_timers: list = []
        self._tip_target_serial = 0
        self._quiet_failure = False
        self._throttle = Throttle()
        if not self.autostart:
            self.get_logger().info('unconfigured: waiting for lifecycle transitions '
                                   '(autostart false)')
        elif self._autostart_configure() != SUCCESS:
            error = self.error or ConfigError('', 'configuration failed; see the log')
            self.destroy_node()
            raise error
        else:
            self.trigger_activate()

    # -- lifecycle ------------------------------------------------------------------------

    def _autostart_configure(self) -> TransitionCallbackReturn:
        """Configure at start; a failure is raised (one line from `spin`), not logged too."""
        self._quiet_failure = True
        try:
            return self.trigger_configure()
        finally:
            self._quiet_failure = False

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Read and validate the parameters, load and warm the model, make the topics."""
        try:
            self._configure()
        except Exception as exc:  # noqa: B902 - any failure: one line, the node unconfigured
            self.error = exc if isinstance(exc, ConfigError) else ConfigError(
                '', f'{type(exc).__name__}: {exc}')
            if not self._quiet_failure:
                self.get_logger().error(f'configure failed: {self.error}')
            self._release()
            return FAILURE
        self.error = None
        return SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start the loop: the safe command until valid joint states arrive."""
        self.loop.start()
        self._start_loop_timer()
        if self.executor is not None:       # a transition at run time: on the loop thread
            self.apply_realtime_priority()
        self.get_logger().info('active: control loop started')
        return SUCCESS

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Publish the safe command once, then stop publishing commands."""
        self.stop()
        self.get_logger().info('inactive: safe command sent, loop stopped')
        return SUCCESS

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release the model, the topics and the timers."""
        self._release()
        return SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop (the safe command if active) and release everything."""
        self.stop()
        self._release()
        return SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop and release after an unexpected error; back to unconfigured."""
        self.stop()
        self._release()
        return SUCCESS

    def stop(self) -> None:
        """When the loop runs: stop its timer and publish the safe command, the last command."""
        if self.timer is None:
            return
        self.destroy_timer(self.timer)
        self.timer = None
        if self.context.ok():
            set_doubles(self.command_msg.data, self.loop.stop(self._now()))
            self.command_pub.publish(self.command_msg)
        self._log_events()

    def destroy_node(self) -> None:
        """Publish the safe command (when the loop runs), then destroy the node."""
        self.stop()
        super().destroy_node()

    # -- configuration --------------------------------------------------------------------

    def _parse(self, tree: Dict[str, Any]) -> Tuple[ControllerNodeSettings, ControllerSettings]:
        node, rest = ControllerNodeSettings.split(tree)
        return node, ControllerSettings.parse(rest, self.model)

    def _configure(self) -> None:
        self.model = load_model(self.params.model)
        self.node_settings, settings = self.params.bind(self._parse)
        node = self.node_settings
        n = self.model.n
        self.loop = ControlLoop(self.model, settings, node.period)
        self.loop.stop(0.0)                 # no control before activation
        low, high = (np.asarray(b, dtype=float) for b in self.model.joint_limits())
        self.reader = JointStateReader(self.model.joint_names, low, high, node.stamp_tolerance)
        self.rejected = dict.fromkeys(REJECT_KINDS + ('trajectory', 'pressures', 'tip_target'),
                                      0)
        self._estimate_logged = False

        self.command_msg = Float64MultiArray()
        set_doubles(self.command_msg.data, self.loop.cycle.command)
        self.state_msg = JointTrajectory()
        self.state_msg.joint_names = list(settings.joints)
        self.state_msg.points = [JointTrajectoryPoint() for _ in range(4)]
        for point in self.state_msg.points:
            point.positions = array.array('d', bytes(8 * n))
            point.velocities = array.array('d', bytes(8 * n))
        self.state_msg.points[0].accelerations = array.array('d', bytes(8 * n))
        self.state_msg.points[3].effort = array.array('d', bytes(8 * n))
        self.state_msg.points[3].positions = array.array('d')
        self.state_msg.points[3].velocities = array.array('d')

        if self.command_pub is None:        # made once, kept over cleanup (see `_release`)
            self.command_pub = self.create_publisher(Float64MultiArray, '~/commands', 10)
            self.state_pub = self.create_publisher(JointTrajectory, '~/state', 10)
            self.diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
            self.create_subscription(JointState, 'joint_states', self._on_state,
                                     qos_profile_sensor_data)
            self.create_subscription(JointTrajectory, '~/joint_trajectory',
                                     self._on_trajectory, QoSProfile(depth=10))
            self.create_subscription(Float64MultiArray, '~/pressures', self._on_pressures,
                                     qos_profile_sensor_data)

        capacity = int(4 * node.rate_hz) + 16
        self.period = Durations(capacity)
        self.compute = Durations(capacity)
        self.age = Durations(capacity)
        self.transport = Durations(capacity)
        self._last_tick = None
        self.late_ticks = 0
        self._ticks = 0
        self._window_start = time.perf_counter()
        self._receive_wall = -np.inf
        self.loop.warm_up()
        self.diag_timer = self.create_timer(1.0, self._diagnostics)
        self._configure_task(settings)
        self.get_logger().info(
            f'configured: {n} joints {list(settings.joints)}, {node.rate_hz:g} Hz, output '
            f'{settings.mode}, model {type(self.model).__name__}')

    def _release(self) -> None:
        """
        Release the model, the loop and the diagnostics timer; the node is unconfigured again.

        The topics stay, silent: their callbacks ignore input without a loop. Destroying
        subscriptions from within a transition (a service callback) stalled the
        EventsExecutor, after which the node answered no service.
        """
        self.params.unbind()
        if self.diag_timer is not None:
            self.destroy_timer(self.diag_timer)
            self.diag_timer = None
        for timer in self.task_timers:
            self.destroy_timer(timer)
        self.task_timers = []
        self.model, self.loop = None, None

    def _on_change(self, settings: Tuple[ControllerNodeSettings, ControllerSettings],
                   names: list) -> None:
        node, loop_settings = settings
        old = self.node_settings
        self.node_settings = node
        reanchor = any(name.startswith('reference.') for name in names)
        self.loop.configure(loop_settings, reanchor, node.period)
        if node.rate_hz != old.rate_hz and self.timer is not None:
            self.destroy_timer(self.timer)
            self._start_loop_timer()
        if list(loop_settings.joints) != list(self.state_msg.joint_names):
            self.state_msg.joint_names = list(loop_settings.joints)
        self.reader.stamp_tolerance = node.stamp_tolerance
        self.apply_realtime_priority(old.realtime_priority)  # callbacks run on the loop thread
        self.get_logger().info(f'parameters changed: {sorted(names)}')

    def _start_loop_timer(self) -> None:
        """Start the loop timer at `rate_hz`; a period beyond LATE_FACTOR is late."""
        period = self.node_settings.period
        self._last_tick = None
        self.timer = self.create_timer(period, self._tick)
        self._late_us = LATE_FACTOR * period * 1e6

    def apply_realtime_priority(self, previous: int = 0) -> None:
        """Give the calling thread, the one that spins the loop, `realtime_priority`."""
        if self.loop is not None:
            apply_thread_priority(self.get_logger(), self.node_settings.realtime_priority,
                                  previous)

    # -- the loop -------------------------------------------------------------------------

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _reject(self, kind, reason, what='joint_states'):
        self.rejected[kind] += 1
        if kind in REJECT_KINDS:
            self.loop.reject_state()
        if self._throttle.ready():
            self.get_logger().warning(f'rejected {what} ({kind}): {reason}; totals '
                                      f'{self.rejected}')

    def _on_state(self, msg):
        if self.loop is None:
            return
        t = self._now()
        try:
            q, qd = self.reader.read(msg, t)
        except Rejected as exc:
            self._reject(exc.kind, str(exc))
            return
        if self.reader.estimating and not self._estimate_logged:
            self._estimate_logged = True
            self.get_logger().info('joint_states carry no velocities: estimating them by a '
                                   'filtered difference of positions')
        self._receive_wall = time.perf_counter()
        sent = stamp_seconds(msg.header.stamp)
        if sent > 0.0:
            self.transport.add(max(time.time() - sent, 0.0) * 1e6)
        self.loop.set_state(q, qd, t)

    def _on_trajectory(self, msg):
        if self.loop is None:
            return
        now = self._now()
        start = stamp_seconds(msg.header.stamp)
        offset = start - now if start > 0.0 else 0.0
        try:
            arrays = trajectory_arrays(msg, self.model.joint_names, offset)
            if self.loop.cycle.status != ACTIVE:
                raise Rejected('trajectory', f'controller is {self.loop.cycle.status}')
            times, positions, velocities, accelerations = arrays
            self.loop.follow(times, positions, velocities, accelerations, t=now)
        except (Rejected, TrajectoryRejected) as exc:
            self._reject('trajectory', str(exc), 'joint_trajectory')
            return
        self.get_logger().info(f'following a trajectory of {len(times)} points over '
                               f'{times[-1]:.3f} s')

    def _on_pressures(self, msg):
        try:
            self.loop.set_pressures(msg.data, self._now())
        except ValueError as exc:
            self._reject('pressures', str(exc), '~/pressures')

    # -- task space ---------------------------------------------------------------------

    def _configure_task(self, settings: ControllerSettings) -> None:
        """
        Make the task-space topics and timers when there is a task frame.

        `~/tip_pose` every `state_decimation` ticks' time (at most TIP_POSE_MAX_RATE_HZ),
        `~/shape` at SHAPE_RATE_HZ (continuum arms; rigid arms leave the shape to
        robot_state_publisher) and `~/tip_target`; the timers run on the executor and read
        the loop's cycle view.
        """
        if self.loop.task is None:
            return
        task = settings.task
        if self.tip_pose_pub is None:       # made once, kept over cleanup, like the others
            self.tip_pose_pub = self.create_publisher(PoseStamped, '~/tip_pose', 10)
            self.shape_pub = self.create_publisher(MarkerArray, '~/shape', 1)
            self.create_subscription(PoseStamped, '~/tip_target', self._on_tip_target,
                                     QoSProfile(depth=10))
        self.tip_pose = TipPose(task.base_frame)
        self.shape = Shape(task.base_frame)
        node = self.node_settings
        self.task_timers = [self.create_timer(
            max(node.period * node.state_decimation, 1.0 / TIP_POSE_MAX_RATE_HZ),
            self._publish_tip_pose)]
        if hasattr(self.model, 'backbone'):
            self.task_timers.append(self.create_timer(1.0 / SHAPE_RATE_HZ, self._publish_shape))

    def _task_ready(self):
        return self.loop is not None and self.loop.task is not None

    def _publish_tip_pose(self):
        if self._task_ready():
            q = self.loop.cycle.q.copy()
            self.tip_pose_pub.publish(self.tip_pose.fill(self.loop.task.pose(q), self._now()))

    def desired_tip_target(self):
        """Return the tip position the reference heads for now, m (None: a joint reference)."""
        reference = getattr(self.loop.reference, 'reference', None)
        return getattr(reference, 'target', None)

    def _publish_shape(self):
        if not self._task_ready():
            return
        cycle = self.loop.cycle
        q, q_des = cycle.q.copy(), cycle.q_des.copy()
        target = self.desired_tip_target()
        self.shape_pub.publish(self.shape.fill(
            self.model.backbone(q, SHAPE_POINTS), self.model.backbone(q_des, SHAPE_POINTS),
            None if target is None else target.copy(), self._now()))

    def _on_tip_target(self, msg):
        if not self._task_ready():
            return
        task = self.loop.task
        try:
            position, rotation = read_tip_target(msg, task.settings.base_frame)
            if self.loop.cycle.status != ACTIVE:
                raise Rejected('tip_target', f'controller is {self.loop.cycle.status}')
        except Rejected as exc:
            self._reject('tip_target', str(exc), 'tip_target')
            return
        rotation = rotation if task.weight > 0.0 else None
        self._tip_target_serial += 1
        threading.Thread(target=self._clamp_tip_target, daemon=True, args=(
            task, position, rotation, self.loop.q.copy(), self._tip_target_serial)).start()

    def _clamp_tip_target(self, task, position, rotation, q, serial):
        """
        Clamp a tip target to the closest reachable point, aside from the executor.

        An unreachable target takes IK a second or more; the loop keeps the current reference
        meanwhile, and a newer target supersedes this one.
        """
        goal, distance, _ = task.closest(position, q)
        if serial != self._tip_target_serial or not self._task_ready() or (
                self.loop.task is not task or self.loop.cycle.status != ACTIVE):
            return
        reference = task.to_target(self.loop.q.copy(), goal, rotation, distance)
        self.loop.install(reference, self._now())
        self.get_logger().info(f'moving the tip to {np.round(goal, 4).tolist()} m over '
                               f'{reference.path.duration:.3f} s')

    def _tick(self):
        start = time.perf_counter()
        if self._last_tick is not None:
            period = (start - self._last_tick) * 1e6
            self.period.add(period)
            if period > self._late_us:
                self.late_ticks += 1
        self._last_tick = start
        t = self._now()
        cycle = self.loop.cycle
        set_doubles(self.command_msg.data, self.loop.tick(t))
        self.command_pub.publish(self.command_msg)
        self.age.add((start - self._receive_wall) * 1e6 if cycle.status == ACTIVE else 0.0)
        self._ticks += 1
        if self._ticks >= self.node_settings.state_decimation:
            self._ticks = 0
            self._publish_state(t)
        self._log_events()
        self.compute.add((time.perf_counter() - start) * 1e6)

    def _log_events(self):
        logger = self.get_logger()
        for level, text in self.loop.take_events():
            # one call site per severity: rclpy raises ValueError when a call site's changes
            if level == 'error':
                logger.error(text)
            elif level == 'warn':
                logger.warning(text)
            else:
                logger.info(text)

    def _publish_state(self, t):
        cycle = self.loop.cycle
        order = cycle.order
        msg = self.state_msg
        msg.header.stamp.sec = int(t)
        msg.header.stamp.nanosec = int((t - int(t)) * 1e9)
        msg.header.frame_id = cycle.status
        reference, feedback, error, output = msg.points
        set_doubles(reference.positions, cycle.q_des[order])
        set_doubles(reference.velocities, cycle.qd_des[order])
        set_doubles(reference.accelerations, cycle.qdd_des[order])
        set_doubles(feedback.positions, cycle.q[order])
        set_doubles(feedback.velocities, cycle.qd[order])
        set_doubles(error.positions, (cycle.q_des - cycle.q)[order])
        set_doubles(error.velocities, (cycle.qd_des - cycle.qd)[order])
        set_doubles(output.effort, cycle.effort[order])
        self.state_pub.publish(msg)

    def diagnostics(self):
        """Return the loop's figures as (key, value) pairs; window figures reset each call."""
        now = time.perf_counter()
        window, self._window_start = now - self._window_start, now
        ticks = self.period.count
        nominal = self.node_settings.period * 1e6
        p50, p99, pmax = self.period.window_stats()
        c50, c99, cmax = self.compute.window_stats()
        a50, a99, _ = self.age.window_stats()
        s50, s99, _ = self.transport.window_stats()
        values = [
            ('status', self.loop.cycle.status),
            ('rate_hz', ticks / window if window > 0 else 0.0),
            ('period_p50_us', p50), ('period_p99_us', p99), ('period_max_us', pmax),
            ('jitter_p99_us', p99 - nominal),
            ('compute_p50_us', c50), ('compute_p99_us', c99), ('compute_max_us', cmax),
            ('input_age_p50_us', a50), ('input_age_p99_us', a99),
            ('state_latency_p50_us', s50), ('state_latency_p99_us', s99),
            ('run_ticks', self.compute.total),
            ('run_late_ticks', self.late_ticks),
            ('run_period_p50_us', self.period.run_percentile(0.5)),
            ('run_period_p99_us', self.period.run_percentile(0.99)),
            ('run_period_max_us', self.period.largest),
            ('run_compute_p50_us', self.compute.run_percentile(0.5)),
            ('run_compute_p99_us', self.compute.run_percentile(0.99)),
            ('run_compute_max_us', self.compute.largest),
            ('nonfinite_efforts', self.loop.cycle.nonfinite),
            ('clamped_tip_targets', self.loop.clamped_targets),
        ]
        values += [(f'rejected_{kind}', count) for kind, count in self.rejected.items()]
        return values

    def _diagnostics(self):
        values = self.diagnostics()
        status = DiagnosticStatus(name=f'{self.get_name()}: control loop',
                                  hardware_id=self.get_fully_qualified_name())
        state = values[0][1]
        status.level = DiagnosticStatus.OK if state == ACTIVE else DiagnosticStatus.WARN
        status.message = state
        status.values = [KeyValue(key=k, value=f'{v:.6g}' if isinstance(v, float) else str(v))
                         for k, v in values]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.diag_pub.publish(msg)


def main(argv=None):
    """Run the controller node (`ros2 run continuum_ctrl controller_node --ros-args ...`)."""
    return spin(ControllerNode, argv)
