"""
`controller_node`: computed-torque control of any model over ROS 2 (node `continuum_controller`).

A managed (lifecycle) node, with the standard `~/change_state`, `~/get_state`, ... services:
- configure: read and validate the parameters, load and warm the model (and, the first time,
  make the topics); a bad parameter fails the transition with one `parameter 'KEY': ...` line
  in the log, and the node stays unconfigured;
- activate: start the loop (the safe command until valid joint states arrive);
- deactivate: publish the safe command (repeated until acknowledged, at most 0.2 s), then no
  more commands;
- cleanup, shutdown: the same, and release the model, loop and timers (the topics stay,
  silent).
With `autostart` (default true) the node configures and activates itself when made (a bad
parameter then raises its ConfigError from the constructor, as a plain node would).

Topics (relative names, remap as needed):
- sub `joint_states` (sensor_msgs/JointState): measured state, mapped by joint name;
  taken serialized and rejected unread above `input.max_joint_states_bytes`, then read in
  place (ros/joint_state_cdr.py; rclpy deserializes what is not plain LE CDR); a message naming
  none of the arm's joints (another robot's, on a shared topic) is counted as foreign and
  does not hold back the resume count;
- sub `~/joint_trajectory` (trajectory_msgs/JointTrajectory): replaces the reference;
  rejected unread above `input.max_trajectory_points` full points;
- sub `~/pressures` (std_msgs/Float64MultiArray, Pa, `joints` order): measured PMA pressures,
  optional; the valve compensation uses them in place of its model's estimate (taken
  serialized, rejected unread when longer than n doubles can be; applied by the next tick);
- pub `~/commands` (std_msgs/Float64MultiArray): efforts (N, N m) or pressures (Pa), `joints`
  order, as ros2_control's ForwardCommandController takes them;
- pub `~/state` (trajectory_msgs/JointTrajectory, `joints` order): points are, like
  control_msgs/JointTrajectoryControllerState, [reference (positions, velocities,
  accelerations), feedback (positions, velocities), error (positions, velocities; effort:
  the integral force, N or N m), output (effort: the generalized force sent)]; header
  stamp: the tick time; header frame_id: the loop status (waiting, active, stale, stopped,
  or degraded while the loop is starved); every `state_decimation`-th tick, sent from the
  executor thread in batches (every `STATE_INTERVAL` s);
- pub `/diagnostics` (diagnostic_msgs/DiagnosticArray, ~1 Hz): loop rate, period and compute
  time percentiles (window and whole run), input age at every tick, the wait of a new state
  for the first tick that uses it (`state_wait_*`: receipt to that tick), joint_states latency
  (header stamp to receipt, wall clock), missed deadlines, rejected-input counts, status.

Threads: while active, the loop runs on a thread of its own (`ros.loop_thread.LoopThread`,
absolute deadlines at `rate_hz`, `realtime_priority`; the executor's and the middleware's
threads one below). It takes the latest validated state (`StateHandoff`), runs one tick,
publishes the command as pre-serialized bytes, and hands ``~/state`` rows and log lines to the
executor thread, which does everything else: input, trajectories, parameters, ``~/state``,
``/diagnostics``, logging, transitions. Input callbacks do work bounded by the size check. The
loop misses a deadline when it starts half a period late or more; more than
`loop.max_missed_share` of them over 0.5 s makes it `degraded` (with `loop.safe_on_overrun`,
the safe command until it recovers). Under ``use_sim_time`` an executor timer runs the same
tick on the ROS clock instead (a wall-clock thread cannot follow ``/clock``).

Task space (with a `task.frame`): sub ``~/tip_target`` (geometry_msgs/PoseStamped, size-bounded
and checked on the executor; the loop's planner worker clamps it to the closest reachable point
and posts the new reference into the slot trajectories use); pub ``~/tip_pose`` and ``~/shape``
(executor timers reading the loop's cycle view). A configured tip reference is planned on the
same worker (control/planner.py): the loop holds the measured pose until the plan is made.
The loop thread, the worker and the executor each evaluate a model object of their own
(`DynamicsModel.for_thread`).
"""

import collections
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
from continuum_ctrl.control.planner import Planner
from continuum_ctrl.control.settings import ControllerSettings, FIELDS
from continuum_ctrl.control.starvation import StarvationDetector
from continuum_ctrl.launch_description import CONTROLLER as NODE_NAME
from continuum_ctrl.models import load_model
from continuum_ctrl.numerics.jit import on_compile
from continuum_ctrl.params import ConfigError
from continuum_ctrl.ros.conversion import (FOREIGN, JointStateReader, REJECT_KINDS, Rejected,
                                           stamp_seconds, trajectory_arrays)
from continuum_ctrl.ros.fast_publish import CommandPublisher
from continuum_ctrl.ros.loop_thread import LoopThread, SnapshotRing, StateHandoff
from continuum_ctrl.ros.node_settings import CONTROLLER_NODE_FIELDS, ControllerNodeSettings
from continuum_ctrl.ros.parameters import NodeParameters
from continuum_ctrl.ros.plumbing import deliver, settle_heap, spin, Throttle
from continuum_ctrl.ros.raw_input import (commands_reader, joint_states_reader,
                                          tip_target_reader, trajectory_reader)
from continuum_ctrl.ros.scheduling import set_node_priority, set_thread_priority
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
#: status reported while the loop misses too many deadlines
DEGRADED = 'degraded'
#: window of the starvation detector, s
STARVATION_WINDOW = 0.5
#: the CycleView arrays a ~/state row holds, in order (model order, n each)
STATE_PARTS = ('q_des', 'qd_des', 'qdd_des', 'q', 'qd', 'effort', 'integral')
#: interval at which the executor sends the loop's ~/state rows and log lines, s
STATE_INTERVAL = 0.01
#: rejection kinds of joint_states, counted in /diagnostics
STATE_KINDS = REJECT_KINDS + ('size',)
#: those of a bad measurement of this arm: they count against the streak needed to resume
#: (foreign states, another robot's on a shared topic, do not)
BAD_STATE_KINDS = tuple(kind for kind in STATE_KINDS if kind != FOREIGN)
#: longest wait for the loop thread to end its tick before the safe command, s
STOP_TIMEOUT = 5.0
#: longest wait at configuration for the planner's IK process to serve, s
PLANNER_START_TIMEOUT = 60.0


class ControllerNode(LifecycleNode):
    """The controller node; see the module documentation for its interface."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, automatically_declare_parameters_from_overrides=True,
                         **kwargs)
        on_compile(self.get_logger().info)      # a cold kernel cache: say so at once
        self.params = NodeParameters(self, NODE_FIELDS, self._on_change)
        self.autostart = self.params.values.get('autostart', True)
        self.error: Optional[ConfigError] = None
        self.model = None
        self.loop: ControlLoop = None
        self.thread: Optional[LoopThread] = None
        self.timer = None                   # the loop's executor timer under use_sim_time
        self.running = False                # active: the loop publishes commands
        self.diag_timer = self.state_timer = None
        self.command_out = self.state_pub = self.diag_pub = None
        self.tip_pose_pub = self.shape_pub = None
        self.task_timers: list = []
        self._quiet_failure = False
        self._throttle = Throttle()
        self._pressure_throttle = Throttle()   # the loop thread's own
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
        settle_heap()
        self.running = True
        self._start_loop()
        self.get_logger().info('active: control loop started')
        return SUCCESS

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Publish the safe command (until acknowledged), then stop publishing commands."""
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
        """
        When the loop runs: end it, then publish the safe command, the last command.

        The loop thread ends its tick in progress first (joined), so nothing it sends can
        follow the safe command, which this (the calling) thread publishes, then repeats until
        the subscribers acknowledged it, at most `plumbing.DELIVERY_TIMEOUT` s (`deliver`):
        every exit (signal, lifecycle transition, loop failure, `destroy_node`) passes here.
        """
        if not self.running:
            return
        self.running = False
        self._stop_loop()
        if self.context.ok():
            command = self.loop.stop(self._now()).copy()
            deliver(self.command_out.publisher, lambda: self.command_out.publish(command),
                    self.get_logger(), 'safe command')
        self._send_loop_output()

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
        # the planner's worker must never run at the loop's real-time priority (it would
        # starve the executor and every normal thread on its core); its IK runs in a process
        planner = Planner(threaded=True, prepare=lambda: set_thread_priority(0),
                          model_spec=self.params.model)
        self.loop = ControlLoop(self.model, settings, node.period, planner)
        self.executor_model = self.model.for_thread()     # ~/tip_pose and ~/shape
        self.loop.stop(0.0)                 # no control before activation
        low, high = (np.asarray(b, dtype=float) for b in self.model.joint_limits())
        self.reader = JointStateReader(self.model.joint_names, low, high, node.stamp_tolerance)
        self._input_bounds(node)
        self.pressure_input = commands_reader(n)
        self.handoff = StateHandoff()
        self.rejected = dict.fromkeys(
            STATE_KINDS + ('trajectory', 'trajectory_size', 'pressures', 'tip_target'), 0)
        self._estimate_logged = False
        # what the executor hands to the loop: (settings, period, reanchors), applied once
        # (see `_take_slots`); references go through the planner's slot, taken by the tick
        self._settings_slot = self._settings_seen = None
        self._reanchors = 0
        self.pressures: collections.deque = collections.deque(maxlen=64)  # (Pa, t) to apply

        self.state_msg = JointTrajectory()
        self.state_msg.joint_names = list(settings.joints)
        self.state_msg.points = [JointTrajectoryPoint() for _ in range(4)]
        self.states = SnapshotRing(int(0.1 * node.rate_hz) + 16, len(STATE_PARTS) * n)
        self.events: collections.deque = collections.deque()

        if self.command_out is None:        # made once, kept over cleanup (see `_release`)
            self.command_out = CommandPublisher(self, '~/commands', n)
            # deep enough for a whole batch (the ring): a sample lost on the way can be repaired
            self.state_pub = self.create_publisher(JointTrajectory, '~/state',
                                                   len(self.states.times))
            self.diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
            self.create_subscription(JointState, 'joint_states', self._on_joint_states,
                                     qos_profile_sensor_data, raw=True)
            self.create_subscription(JointTrajectory, '~/joint_trajectory',
                                     self._on_trajectory, QoSProfile(depth=10), raw=True)
            self.create_subscription(Float64MultiArray, '~/pressures', self._on_pressures,
                                     qos_profile_sensor_data, raw=True)

        capacity = int(4 * node.rate_hz) + 16
        self.period = Durations(capacity)
        self.compute = Durations(capacity)
        self.age = Durations(capacity)
        self.wait = Durations(capacity)
        self.transport = Durations(capacity)
        self._used_state = -np.inf          # receive time of the state the last tick used
        self._last_tick = None
        self.late_ticks = 0
        self._ticks = 0
        self._window_start = time.perf_counter()
        self._receive_wall = -np.inf
        self.detector = StarvationDetector(node.period, STARVATION_WINDOW, node.max_missed_share)
        self.degraded = False
        self.missed = 0                     # deadlines of stopped loop threads (run total)
        self.loop.warm_up()
        if not self.loop.planner.wait_ready(PLANNER_START_TIMEOUT):
            self.get_logger().warning(f'the planning process did not start within '
                                      f'{PLANNER_START_TIMEOUT} s: tip references cannot be '
                                      'planned (the loop holds the measured pose)')
        self.diag_timer = self.create_timer(1.0, self._diagnostics)
        self.state_timer = self.create_timer(STATE_INTERVAL, self._send_loop_output)
        self._configure_task(settings)
        self.get_logger().info(
            f'configured: {n} joints {list(settings.joints)}, {node.rate_hz:g} Hz, output '
            f'{settings.mode}, model {type(self.model).__name__}')

    def _input_bounds(self, node: ControllerNodeSettings) -> None:
        """Make the size-bounded readers of joint_states and trajectories from `node`."""
        names = self.model.joint_names
        self.state_input = joint_states_reader(names, node.max_joint_states_bytes)
        self.trajectory_input = trajectory_reader(names, node.max_trajectory_points)

    def _release(self) -> None:
        """
        Release the model, the loop and the executor timers; the node is unconfigured again.

        The topics stay, silent: their callbacks ignore input without a loop. Destroying
        subscriptions from within a transition (a service callback) stalled the
        EventsExecutor, after which the node answered no service.
        """
        self.params.unbind()
        for timer in (self.diag_timer, self.state_timer, *self.task_timers):
            if timer is not None:
                self.destroy_timer(timer)
        self.diag_timer = self.state_timer = None
        self.task_timers = []
        if self.loop is not None:
            self.loop.planner.close()
        self.model, self.loop = None, None

    def _on_change(self, settings: Tuple[ControllerNodeSettings, ControllerSettings],
                   names: list) -> None:
        """Post new settings (executor thread); the loop takes them at its next tick."""
        node, loop_settings = settings
        old = self.node_settings
        self.node_settings = node
        if any(name.startswith('reference.') for name in names):
            self._reanchors += 1
        self._input_bounds(node)
        self.reader.stamp_tolerance = node.stamp_tolerance
        if list(loop_settings.joints) != list(self.state_msg.joint_names):
            self.state_msg.joint_names = list(loop_settings.joints)
        restart = self.running and (node.rate_hz, node.spin_before_us, node.max_missed_share) \
            != (old.rate_hz, old.spin_before_us, old.max_missed_share)
        if restart:
            self._stop_loop()
        self._settings_slot = (loop_settings, node.period, self._reanchors)
        if restart:
            self._start_loop()
        else:
            self.apply_realtime_priority(old.realtime_priority)
        self.get_logger().info(f'parameters changed: {sorted(names)}')

    def _start_loop(self) -> None:
        """Run the loop at `rate_hz`: on a LoopThread, or an executor timer on sim time."""
        node = self.node_settings
        self._last_tick = None
        self._late_us = LATE_FACTOR * node.period * 1e6
        self.detector = StarvationDetector(node.period, STARVATION_WINDOW, node.max_missed_share)
        if self.get_parameter('use_sim_time').value:
            self.timer = self.create_timer(node.period, self._timer_tick)
            return
        self.thread = LoopThread(self._loop_tick, node.period, node.realtime_priority,
                                 node.spin_before_us * 1e-6)
        if node.realtime_priority:          # the executor's and middleware's threads below
            self._set_priorities(node.realtime_priority)
        self.thread.start()

    def _stop_loop(self) -> None:
        """End the loop thread (after its tick in progress) or the loop timer."""
        if self.timer is not None:
            self.destroy_timer(self.timer)
            self.timer = None
        if self.thread is not None:
            if not self.thread.stop(STOP_TIMEOUT):
                self.get_logger().error(f'the loop thread did not end within {STOP_TIMEOUT} s')
            self.missed += self.thread.missed
            self.thread = None

    def apply_realtime_priority(self, previous: int = 0) -> None:
        """
        Give the loop thread `realtime_priority`, the node's other threads one less.

        `spin` calls this once the executor has made its threads; 0 (when `previous` is 0
        too) leaves every thread as started, so a node started under ``chrt`` keeps it.
        """
        priority = self.node_settings.realtime_priority if self.loop is not None else 0
        if priority == previous:
            return
        problem = self._set_priorities(priority)
        logger = self.get_logger()
        if problem is not None:
            logger.warning(f'loop thread: cannot use SCHED_FIFO priority {priority}: '
                           f'{problem}; normal scheduling')
        elif priority > 0:
            logger.info(f'loop thread: SCHED_FIFO priority {priority}, other threads '
                        f'{max(priority - 1, 1)}')

    def _set_priorities(self, priority: int) -> Optional[str]:
        """Put the loop thread at `priority`, every other thread one below (0: all normal)."""
        problem = set_node_priority(priority)   # the caller at `priority`, the others below
        if problem is None and priority:
            set_thread_priority(max(priority - 1, 1))   # the caller (executor) below too
            if self.thread is not None and self.thread.native_id:
                problem = set_thread_priority(priority, self.thread.native_id)
        return problem

    # -- input (executor thread) ----------------------------------------------------------

    def _now(self) -> float:
        """Return the node's ROS time (s): /clock under `use_sim_time`, else system time."""
        clock = self.get_clock()
        if clock.ros_time_is_active:
            return clock.now().nanoseconds * 1e-9
        return time.time_ns() * 1e-9    # the system clock the ROS clock reads, 1.4 us sooner

    def _reject(self, kind, reason, what='joint_states'):
        self.rejected[kind] += 1
        if kind in BAD_STATE_KINDS:
            self.handoff.post_rejection()
        elif kind == FOREIGN and self.loop.cycle.status == ACTIVE:
            return          # normal traffic on a shared topic; worth a line only while waiting
        if self._throttle.ready():
            self.get_logger().warning(f'rejected {what} ({kind}): {reason}; totals '
                                      f'{self.rejected}')

    def _on_joint_states(self, data):
        """Bound, read and validate a serialized JointState; hand it to the loop."""
        if self.loop is None:
            return
        try:
            fields = self.state_input.read(data)
            t = self._now()
            q, qd = self.reader.read_fields(fields, t)
        except Rejected as exc:
            self._reject(exc.kind, str(exc))
            return
        if self.reader.estimating and not self._estimate_logged:
            self._estimate_logged = True
            self.get_logger().info('joint_states carry no velocities: estimating them by a '
                                   'filtered difference of positions')
        self._receive_wall = time.perf_counter()
        sent = fields.stamp
        if sent > 0.0:
            self.transport.add(max(time.time() - sent, 0.0) * 1e6)
        # the stamp says when the state held (checked against `stamp_tolerance`); the valve
        # compensation predicts from then, over the time the message waited to be read here
        self.handoff.post(q, qd, t, sent if sent > 0.0 else t)

    def _on_trajectory(self, data):
        """Bound and check a serialized JointTrajectory; the next tick installs it."""
        if self.loop is None:
            return
        try:
            msg = self.trajectory_input.read(data)
        except Rejected as exc:
            self._reject('trajectory_size', str(exc), 'joint_trajectory')
            return
        now = self._now()
        start = stamp_seconds(msg.header.stamp)
        offset = start - now if start > 0.0 else 0.0
        try:
            arrays = trajectory_arrays(msg, self.model.joint_names, offset)
            if self.loop.cycle.status != ACTIVE:
                raise Rejected('trajectory', f'controller is {self.loop.cycle.status}')
            times, positions, velocities, accelerations = arrays
            reference = self.loop.plan(times, positions, velocities, accelerations)
        except (Rejected, TrajectoryRejected) as exc:
            self._reject('trajectory', str(exc), 'joint_trajectory')
            return
        self.loop.planner.slot.post(reference, now)     # supersedes a plan being made
        self.get_logger().info(f'following a trajectory of {len(times)} points over '
                               f'{times[-1]:.3f} s')

    def _on_pressures(self, data):
        """Bound a serialized pressure vector; the next tick applies it (and may reject it)."""
        if self.loop is None:
            return
        try:
            msg = self.pressure_input.read(data)
        except Rejected as exc:
            self._reject('pressures', str(exc), '~/pressures')
            return
        self.pressures.append((np.array(msg.data, dtype=float), self._now()))

    # -- task space ---------------------------------------------------------------------

    def _configure_task(self, settings: ControllerSettings) -> None:
        """
        Make the task-space topics and timers when there is a task frame.

        `~/tip_pose` every `state_decimation` ticks' time (at most TIP_POSE_MAX_RATE_HZ),
        `~/shape` at SHAPE_RATE_HZ (continuum arms; rigid arms leave the shape to
        robot_state_publisher) and `~/tip_target` (serialized, size-bounded); the timers run
        on the executor and read the loop's cycle view.
        """
        if self.loop.task is None:
            return
        task = settings.task
        if self.tip_pose_pub is None:       # made once, kept over cleanup, like the others
            self.tip_pose_pub = self.create_publisher(PoseStamped, '~/tip_pose', 10)
            self.shape_pub = self.create_publisher(MarkerArray, '~/shape', 1)
            self.create_subscription(PoseStamped, '~/tip_target', self._on_tip_target,
                                     QoSProfile(depth=10), raw=True)
        self.tip_target_input = tip_target_reader(task.base_frame)
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
            pose = self.executor_model.frame_pose(q, self.loop.task.frame)
            self.tip_pose_pub.publish(self.tip_pose.fill(pose, self._now()))

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
        model = self.executor_model
        self.shape_pub.publish(self.shape.fill(
            model.backbone(q, SHAPE_POINTS), model.backbone(q_des, SHAPE_POINTS),
            None if target is None else target.copy(), self._now()))

    def _on_tip_target(self, data):
        """Bound and check a serialized tip target; the planner's worker clamps it."""
        if not self._task_ready():
            return
        task = self.loop.task
        try:
            msg = self.tip_target_input.read(data)
            position, rotation = read_tip_target(msg, task.settings.base_frame)
            if self.loop.cycle.status != ACTIVE:
                raise Rejected('tip_target', f'controller is {self.loop.cycle.status}')
        except Rejected as exc:
            self._reject('tip_target', str(exc), 'tip_target')
            return
        rotation = rotation if task.weight > 0.0 else None
        loop, planner = self.loop, self.loop.planner
        plan_task, q = loop.plan_task, loop.cycle.q.copy()

        def clamp():
            """
            Clamp the target to the closest reachable point (on the planner's worker).

            An unreachable target takes IK a second or more; the loop keeps the current
            reference meanwhile, and a newer target or trajectory supersedes this one.
            """
            goal, distance, _ = plan_task.closest(position, q)
            if self.loop is not loop or loop.task is not task or loop.cycle.status != ACTIVE:
                return None
            reference = plan_task.to_target(loop.cycle.q.copy(), goal, rotation, distance)
            return reference, (f'moving the tip to {np.round(goal, 4).tolist()} m over '
                               f'{reference.path.duration:.3f} s')
        planner.request(clamp)             # starts at the tick that installs it

    # -- the loop (loop thread) -----------------------------------------------------------

    def _timer_tick(self):
        """Run the loop on the executor timer (sim time): never late by the thread's measure."""
        self._loop_tick(0.0)

    def _take_slots(self, loop):
        """Apply the settings and pressures posted since the last tick (the tick takes plans)."""
        posted = self._settings_slot
        if posted is not self._settings_seen:
            seen, self._settings_seen = self._settings_seen, posted
            settings, period, reanchors = posted
            loop.configure(settings, reanchors != (seen[2] if seen else 0), period)
        while self.pressures:                   # every one, in order: each may be rejected
            try:
                loop.set_pressures(*self.pressures.popleft())
            except ValueError as exc:           # counted here, logged by the executor
                self.rejected['pressures'] += 1
                if self._pressure_throttle.ready():
                    self.events.append(('warn', f'rejected ~/pressures: {exc}; '
                                                f'{self.rejected["pressures"]} so far'))

    def _loop_tick(self, lateness):
        """One control cycle, `lateness` s after its deadline: state in, command out."""
        start = time.perf_counter()
        loop = self.loop
        self._take_slots(loop)
        self.handoff.take(loop)
        if self._last_tick is not None:
            period = (start - self._last_tick) * 1e6
            self.period.add(period)
            if period > self._late_us:
                self.late_ticks += 1
        self._last_tick = start
        t = self._now()
        if loop.last_state_time != self._used_state:
            self._used_state = loop.last_state_time     # a new state: its wait for a tick
            if loop.status == ACTIVE:
                self.wait.add(max(t - loop.last_state_time, 0.0) * 1e6)
        degraded = self.detector.record(lateness)
        if degraded != self.degraded:
            self._starvation_event(degraded)
        if degraded and self.node_settings.safe_on_overrun:
            command = loop.safe_command()
        else:
            command = loop.tick(t)
        self.command_out.publish(command)
        self.age.add((start - self._receive_wall) * 1e6 if loop.status == ACTIVE else 0.0)
        self._ticks += 1
        if self._ticks >= self.node_settings.state_decimation:
            self._ticks = 0
            self._snapshot(t, DEGRADED if degraded else loop.status)
        if loop.events:
            self.events.extend(loop.take_events())
        self.compute.add((time.perf_counter() - start) * 1e6)

    def _starvation_event(self, degraded):
        self.degraded = degraded
        share = f'{self.detector.share:.0%} of the deadlines of the last {STARVATION_WINDOW} s'
        if degraded:
            action = 'safe command' if self.node_settings.safe_on_overrun else 'reporting only'
            self.events.append(('warn', f'control loop starved: {share} missed ({action})'))
        else:
            self.events.append(('info', f'control loop recovered: {share} missed'))

    def _snapshot(self, t, status):
        row = self.states.slot()
        if row is None:
            return
        loop, n = self.loop, self.model.n
        for k, part in enumerate((loop.q_des, loop.qd_des, loop.qdd_des, loop.q, loop.qd,
                                  loop.effort, loop.integral.force)):     # STATE_PARTS
            row[k * n:(k + 1) * n] = part
        self.states.commit(t, status)

    # -- output (executor thread) ---------------------------------------------------------

    def _send_loop_output(self):
        """Publish the loop's ~/state rows and log its events (executor timer)."""
        if self.loop is None:
            return
        for t, status, row in self.states.drain():
            self._publish_state(t, status, row)
        logger = self.get_logger()
        while self.events:
            level, text = self.events.popleft()
            # one call site per severity: rclpy raises ValueError when a call site's changes
            if level == 'error':
                logger.error(text)
            elif level == 'warn':
                logger.warning(text)
            else:
                logger.info(text)

    def _publish_state(self, t, status, row):
        order = self.loop.settings.order
        q_des, qd_des, qdd_des, q, qd, effort, integral = (
            part[order] for part in row.reshape(len(STATE_PARTS), self.model.n))
        msg = self.state_msg
        msg.header.stamp.sec = int(t)
        msg.header.stamp.nanosec = int((t - int(t)) * 1e9)
        msg.header.frame_id = status
        reference, feedback, error, output = msg.points
        reference.positions, reference.velocities = q_des.tolist(), qd_des.tolist()
        reference.accelerations = qdd_des.tolist()
        feedback.positions, feedback.velocities = q.tolist(), qd.tolist()
        error.positions, error.velocities = (q_des - q).tolist(), (qd_des - qd).tolist()
        error.effort = integral.tolist()
        output.effort = effort.tolist()
        self.state_pub.publish(msg)

    def status(self):
        """Return the loop status as reported: `degraded` while starved, else the loop's."""
        return DEGRADED if self.degraded else self.loop.cycle.status

    def diagnostics(self):
        """Return the loop's figures as (key, value) pairs; window figures reset each call."""
        now = time.perf_counter()
        window, self._window_start = now - self._window_start, now
        ticks = self.period.count
        nominal = self.node_settings.period * 1e6
        p50, p99, pmax = self.period.window_stats()
        c50, c99, cmax = self.compute.window_stats()
        a50, a99, _ = self.age.window_stats()
        w50, w99, _ = self.wait.window_stats()
        s50, s99, _ = self.transport.window_stats()
        thread = self.thread
        values = [
            ('status', self.status()),
            ('rate_hz', ticks / window if window > 0 else 0.0),
            ('period_p50_us', p50), ('period_p99_us', p99), ('period_max_us', pmax),
            ('jitter_p99_us', p99 - nominal),
            ('compute_p50_us', c50), ('compute_p99_us', c99), ('compute_max_us', cmax),
            ('input_age_p50_us', a50), ('input_age_p99_us', a99),
            ('state_wait_p50_us', w50), ('state_wait_p99_us', w99),
            ('state_latency_p50_us', s50), ('state_latency_p99_us', s99),
            ('missed_share', self.detector.share),
            ('run_ticks', self.compute.total),
            ('run_late_ticks', self.late_ticks),
            ('run_missed_deadlines', self.missed + (thread.missed if thread else 0)),
            ('run_period_p50_us', self.period.run_percentile(0.5)),
            ('run_period_p99_us', self.period.run_percentile(0.99)),
            ('run_period_max_us', self.period.largest),
            ('run_compute_p50_us', self.compute.run_percentile(0.5)),
            ('run_compute_p99_us', self.compute.run_percentile(0.99)),
            ('run_compute_max_us', self.compute.largest),
            ('nonfinite_efforts', self.loop.cycle.nonfinite),
            ('run_state_rows_dropped', self.states.dropped),
            ('clamped_tip_targets', self.loop.clamped_targets),
            ('planning', int(self.loop.awaiting_plan)),
            ('plans', self.loop.planner.plans),
            ('plan_max_s', self.loop.planner.longest),
            ('integral_force_max', float(np.max(np.abs(self.loop.cycle.integral)))),
            ('integral_held_joints', int(np.count_nonzero(self.loop.integral.held))),
        ]
        values += [(f'rejected_{kind}', count) for kind, count in self.rejected.items()]
        return values

    def _diagnostics(self):
        if self.thread is not None and self.thread.error is not None and self.running:
            self.get_logger().error(f'the loop thread failed: {self.thread.error!r}')
            self.stop()
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
