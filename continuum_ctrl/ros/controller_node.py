"""
`controller_node`: computed-torque control of any model over ROS 2 (node `continuum_controller`).

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
  loop status (waiting, active, stale); every `state_decimation`-th tick;
- pub `/diagnostics` (diagnostic_msgs/DiagnosticArray, ~1 Hz): loop rate, period and compute
  time percentiles (window and whole run), input age at the tick, joint_states latency (header
  stamp to receipt, wall clock), rejected-input counts, status.
One timer at `rate_hz` on a single-threaded executor runs the loop (see `spin`).
"""

import array
import gc
import os
import signal
import sys
import time

import numpy as np
import rclpy
import rclpy.executors
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.qos import QoSProfile, qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from continuum_ctrl.config import ConfigError
from continuum_ctrl.control.loop import ACTIVE, ControlLoop
from continuum_ctrl.control.settings import ControllerSettings, FIELDS
from continuum_ctrl.models import load_model
from continuum_ctrl.ros.conversion import (JointStateReader, REJECT_KINDS, Rejected, set_doubles,
                                           stamp_seconds, trajectory_arrays)
from continuum_ctrl.ros.parameters import NodeParameters
from continuum_ctrl.ros.scheduling import apply_thread_priority
from continuum_ctrl.ros.timing import Durations

NODE_NAME = 'continuum_controller'
#: a tick is late when its period exceeds the nominal one by this factor
LATE_FACTOR = 1.5
#: default executor kind, see `make_executor`
EXECUTOR = 'events'
#: shortest interval between two log lines about rejected input, s
LOG_THROTTLE = 2.0


class ControllerNode(Node):
    """The controller node; see the module documentation for its interface."""

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self.model = None
        self.params = NodeParameters(self, FIELDS, self._parse, self._on_change)
        self.loop = ControlLoop(self.model, self.params.settings)
        settings = self.params.settings
        n = self.model.n
        low, high = self.loop.low, self.loop.high
        self.reader = JointStateReader(self.model.joint_names, low, high,
                                       settings.stamp_tolerance)
        self.rejected = dict.fromkeys(REJECT_KINDS + ('trajectory', 'pressures'), 0)
        self._last_log = -np.inf
        self._estimate_logged = False

        self.command_msg = Float64MultiArray()
        set_doubles(self.command_msg.data, self.loop.command)
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

        self.command_pub = self.create_publisher(Float64MultiArray, '~/commands', 10)
        self.state_pub = self.create_publisher(JointTrajectory, '~/state', 10)
        self.diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.create_subscription(JointState, 'joint_states', self._on_state,
                                 qos_profile_sensor_data)
        self.create_subscription(JointTrajectory, '~/joint_trajectory', self._on_trajectory,
                                 QoSProfile(depth=10))
        self.create_subscription(Float64MultiArray, '~/pressures', self._on_pressures,
                                 qos_profile_sensor_data)

        capacity = int(4 * settings.rate_hz) + 16
        self.period = Durations(capacity)
        self.compute = Durations(capacity)
        self.age = Durations(capacity)
        self.transport = Durations(capacity)
        self._last_tick = None
        self.late_ticks = 0
        self._ticks = 0
        self._window_start = time.perf_counter()
        self._receive_wall = -np.inf
        self._warm_up()
        self._start_loop_timer(settings)
        self.create_timer(1.0, self._diagnostics)
        self.get_logger().info(
            f'{n} joints {list(settings.joints)}, {settings.rate_hz:g} Hz, output '
            f'{settings.mode}, model {type(self.model).__name__}')

    def _warm_up(self):
        """
        Evaluate the control law once, at rest inside the joint limits, before the loop starts.

        The first model evaluation in a process loads the compiled kernels (~0.4 s for the
        continuum models). Paid in the first active tick, it stalled control while the
        reference, anchored at activation, blended on: control then began far behind it and
        saturated. The node now starts with its hot path loaded.
        """
        q = np.clip(np.zeros(self.model.n), self.loop.low, self.loop.high)
        rest = np.zeros(self.model.n)
        self.loop.law(q, rest, q, rest, rest)

    def _parse(self, tree, model):
        if self.model is None:
            self.model = load_model(model)
        return ControllerSettings.parse(tree, self.model)

    def _on_change(self, settings, names):
        reanchor = any(name.startswith('reference.') for name in names)
        if settings.rate_hz != self.loop.settings.rate_hz:
            self.timer.cancel()
            self.destroy_timer(self.timer)
            self._start_loop_timer(settings)
        if list(settings.joints) != list(self.state_msg.joint_names):
            self.state_msg.joint_names = list(settings.joints)
        self.reader.stamp_tolerance = settings.stamp_tolerance
        old_priority = self.loop.settings.realtime_priority
        self.loop.configure(settings, reanchor)
        self.apply_realtime_priority(old_priority)  # callbacks run on the loop thread
        self.get_logger().info(f'parameters changed: {sorted(names)}')

    def _start_loop_timer(self, settings):
        """Start the loop timer at `settings.rate_hz`; a period beyond LATE_FACTOR is late."""
        self.timer = self.create_timer(settings.period, self._tick)
        self._late_us = LATE_FACTOR * settings.period * 1e6

    def apply_realtime_priority(self, previous=0):
        """Give the calling thread, the one that spins the loop, `realtime_priority`."""
        apply_thread_priority(self.get_logger(), self.loop.settings.realtime_priority, previous)

    def _now(self):
        return self.get_clock().now().nanoseconds * 1e-9

    def _reject(self, kind, reason, what='joint_states'):
        self.rejected[kind] += 1
        if kind in REJECT_KINDS:
            self.loop.reject_state()
        wall = time.monotonic()
        if wall - self._last_log > LOG_THROTTLE:
            self._last_log = wall
            self.get_logger().warn(f'rejected {what} ({kind}): {reason}; totals {self.rejected}')

    def _on_state(self, msg):
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
        now = self._now()
        start = stamp_seconds(msg.header.stamp)
        offset = start - now if start > 0.0 else 0.0
        try:
            arrays = trajectory_arrays(msg, self.model.joint_names, offset)
            if self.loop.status != ACTIVE:
                raise Rejected('trajectory', f'controller is {self.loop.status}')
            times, positions, velocities, accelerations = arrays
            self.loop.follow(times, positions, velocities, accelerations, t=now)
        except (Rejected, ConfigError) as exc:
            self._reject('trajectory', str(exc), 'joint_trajectory')
            return
        self.get_logger().info(f'following a trajectory of {len(times)} points over '
                               f'{times[-1]:.3f} s')

    def _on_pressures(self, msg):
        try:
            self.loop.set_pressures(msg.data, self._now())
        except ValueError as exc:
            self._reject('pressures', str(exc), '~/pressures')

    def _tick(self):
        start = time.perf_counter()
        if self._last_tick is not None:
            period = (start - self._last_tick) * 1e6
            self.period.add(period)
            if period > self._late_us:
                self.late_ticks += 1
        self._last_tick = start
        t = self._now()
        command = self.loop.tick(t)
        set_doubles(self.command_msg.data, command)
        self.command_pub.publish(self.command_msg)
        self.age.add((start - self._receive_wall) * 1e6 if self.loop.status == ACTIVE else 0.0)
        self._ticks += 1
        if self._ticks >= self.loop.settings.state_decimation:
            self._ticks = 0
            self._publish_state(t)
        if self.loop.events:
            self._log_events()
        self.compute.add((time.perf_counter() - start) * 1e6)

    def _log_events(self):
        logger = self.get_logger()
        for level, text in self.loop.events:
            # one call site per severity: rclpy raises ValueError when a call site's changes
            if level == 'error':
                logger.error(text)
            elif level == 'warn':
                logger.warning(text)
            else:
                logger.info(text)
        self.loop.events.clear()

    def _publish_state(self, t):
        loop, order = self.loop, self.loop.settings.order
        msg = self.state_msg
        msg.header.stamp.sec = int(t)
        msg.header.stamp.nanosec = int((t - int(t)) * 1e9)
        msg.header.frame_id = loop.status
        reference, feedback, error, output = msg.points
        set_doubles(reference.positions, loop.q_des[order])
        set_doubles(reference.velocities, loop.qd_des[order])
        set_doubles(reference.accelerations, loop.qdd_des[order])
        set_doubles(feedback.positions, loop.q[order])
        set_doubles(feedback.velocities, loop.qd[order])
        set_doubles(error.positions, (loop.q_des - loop.q)[order])
        set_doubles(error.velocities, (loop.qd_des - loop.qd)[order])
        set_doubles(output.effort, loop.effort[order])
        self.state_pub.publish(msg)

    def diagnostics(self):
        """Return the loop's figures as (key, value) pairs; window figures reset each call."""
        now = time.perf_counter()
        window, self._window_start = now - self._window_start, now
        ticks = self.period.count
        nominal = self.loop.settings.period * 1e6
        p50, p99, pmax = self.period.window_stats()
        c50, c99, cmax = self.compute.window_stats()
        a50, a99, _ = self.age.window_stats()
        s50, s99, _ = self.transport.window_stats()
        values = [
            ('status', self.loop.status),
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
            ('nonfinite_efforts', self.loop.nonfinite),
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

    def publish_safe(self):
        """Publish the safe command once (shutdown)."""
        self.loop.status = 'stopped'
        set_doubles(self.command_msg.data, self.loop.tick(self._now()))
        self.command_pub.publish(self.command_msg)

    def destroy_node(self):
        """Publish the safe command (unless done already), then destroy the node."""
        if self.loop.status != 'stopped' and self.context.ok():
            self.publish_safe()
        super().destroy_node()


def make_executor(kind=None):
    """
    Return a single-threaded executor: 'events' (EventsExecutor) or 'single'.

    Default: the environment variable CONTINUUM_CTRL_EXECUTOR, else `EXECUTOR` (chosen by
    bench/bench_node.py measurements; see README).
    """
    kind = kind or os.environ.get('CONTINUUM_CTRL_EXECUTOR', EXECUTOR)
    if kind == 'events':
        from rclpy.experimental import EventsExecutor
        return EventsExecutor()
    return rclpy.executors.SingleThreadedExecutor()


def settle_heap():
    """
    Collect, then freeze every object made so far out of the garbage collector's scans.

    A node process holds about 140k objects after start-up (rclpy, NumPy, SciPy, Numba); a
    full collection of them takes 30 to 45 ms here. The loop allocates little, so one is rare,
    but it would stall a tick; frozen, the collector only scans what was made since.
    """
    gc.collect()
    gc.freeze()


def spin(node_class, argv=None, executor=None):
    """
    Run one node until SIGINT/SIGTERM; a ConfigError exits with status 2 naming the key.

    Before spinning, the start-up heap is frozen (`settle_heap`) and this thread, which runs
    the node's loop, gets the node's `realtime_priority`. On the way out,
    `node.publish_safe()` (when defined) is the last thing published.
    """
    args = sys.argv if argv is None else argv
    rclpy.init(args=args, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda number, frame: stop.append(number))
    node = None
    try:
        node = node_class()
        settle_heap()
        exec_ = make_executor(executor)
        exec_.add_node(node)
        node.apply_realtime_priority()      # after the executor made its threads
        while not stop and rclpy.ok():
            exec_.spin_once(timeout_sec=0.1)
    except ConfigError as exc:
        print(f'{node_class.__name__}: error: {exc}', file=sys.stderr)
        return 2
    finally:
        if node is not None:
            if hasattr(node, 'publish_safe'):
                node.publish_safe()
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


def main(argv=None):
    """Run the controller node (`ros2 run continuum_ctrl controller_node --ros-args ...`)."""
    return spin(ControllerNode, argv)
