"""
`controller_node`: computed-torque control of any model over ROS 2 (node `continuum_controller`).

A managed (lifecycle) node (docs/lifecycle.md): configure reads and validates the parameters
(a bad one: one `parameter 'KEY': ...` line, the node stays unconfigured) and loads the model;
activate starts the loop (the safe command until valid joint states arrive); deactivate,
cleanup and shutdown publish the safe command until acknowledged (at most 0.2 s). With
`autostart` (default true) it configures and activates itself when made.

Topics (docs/topics.md): sub `joint_states`, `~/joint_trajectory`, `~/pressures` (taken
serialized and size-bounded, ros/controller_input.py; their callbacks are the node's part
`ControllerSubscriptions`, ros/controller_subscriptions.py); pub `~/commands` (N, N m or Pa in
`joints` order, as ros2_control's ForwardCommandController takes them, or with
`output.message: joint_state` a JointState stamped with the tick's time), `~/state`
(ros/state_message.py) and `/diagnostics`; with a `task.frame`, ros/task_topics.py adds
`~/tip_target`, `~/tip_pose` and `~/shape`.

This node only converts. Everything between the messages and the command is the ROS-free
`ControllerRuntime` (runtime/controller_runtime.py): the executor thread posts checked input
to it; while active, a loop thread (ros/loop_runner.py: absolute deadlines at `rate_hz`,
`realtime_priority`; an executor timer under ``use_sim_time``) calls `runtime.tick`, which
sends the command through the pre-serialized publisher; the executor publishes the runtime's
``~/state`` rows, log lines and figures, and runs parameters and transitions.
"""

from typing import Any, Dict, Optional, Tuple

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from trajectory_msgs.msg import JointTrajectory

from continuum_ctrl.control.loop import ControlLoop
from continuum_ctrl.control.planner import Planner
from continuum_ctrl.control.settings import ControllerSettings, FIELDS
from continuum_ctrl.params.launch_description import CONTROLLER as NODE_NAME
from continuum_ctrl.models import load_model
from continuum_ctrl.numerics.jit import on_compile
from continuum_ctrl.params import ConfigError
from continuum_ctrl.ros.controller_input import ControllerInput, KINDS
from continuum_ctrl.ros.controller_subscriptions import ControllerSubscriptions
from continuum_ctrl.ros.diagnostics import diagnostic_array
from continuum_ctrl.ros.fast_publish import CommandPublisher
from continuum_ctrl.runtime.node_settings import CONTROLLER_NODE_FIELDS, ControllerNodeSettings
from continuum_ctrl.ros.loop_runner import LoopRunner, STOP_TIMEOUT
from continuum_ctrl.ros.parameters import NodeParameters
from continuum_ctrl.ros.plumbing import deliver, log_lines, settle_heap, spin
from continuum_ctrl.ros.state_message import StateMessage
from continuum_ctrl.ros.task_topics import TaskTopics
from continuum_ctrl.runtime.controller_runtime import ControllerRuntime
from continuum_ctrl.runtime.scheduling import set_thread_priority
from continuum_ctrl.runtime.throttle import Throttle
from continuum_ctrl.tuning.nominal_check import check_gains

__all__ = ['ControllerNode', 'main', 'NODE_NAME']

#: every parameter the node declares besides `model.*`
NODE_FIELDS = {**CONTROLLER_NODE_FIELDS, **FIELDS}
SUCCESS, FAILURE = TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE
#: interval at which the executor sends the loop's ~/state rows and log lines, s
STATE_INTERVAL = 0.01
#: longest wait at configuration for the planner's IK process to serve (a tip reference), s
PLANNER_START_TIMEOUT = 60.0


class ControllerNode(ControllerSubscriptions, LifecycleNode):
    """The controller node; see the module documentation for its interface."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, automatically_declare_parameters_from_overrides=True,
                         **kwargs)
        on_compile(self.get_logger().info)      # a cold kernel cache: say so at once
        self.params = NodeParameters(self, NODE_FIELDS, self._on_change)
        self.autostart = self.params.values.get('autostart', True)
        self.error: Optional[ConfigError] = None
        self.model = None
        self.runtime: Optional[ControllerRuntime] = None
        self.runner = LoopRunner(self, self._loop_tick)
        self.running = False                # active: the loop publishes commands
        self.diag_timer = self.state_timer = None
        self.command_out = self.state_pub = self.diag_pub = self.task_topics = None
        self._quiet_failure = False
        self.throttle = Throttle()
        if not self.autostart:
            self.get_logger().info('unconfigured: waiting for lifecycle transitions '
                                   '(autostart false)')
        elif self._autostart_configure() != SUCCESS:
            error = self.error or ConfigError('', 'configuration failed; see the log')
            self.destroy_node()
            raise error
        else:
            self.trigger_activate()

    @property
    def loop(self) -> Optional[ControlLoop]:
        """Return the runtime's ControlLoop (None when unconfigured), for in-process callers."""
        return None if self.runtime is None else self.runtime.loop

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
        self.runtime.start()
        settle_heap()
        self.running = True
        self.runtime.restart(self.node_settings)
        self.runner.start(self.node_settings)
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
        """Stop (the safe command if active) and release everything (also after an error)."""
        self.stop()
        self._release()
        return SUCCESS

    on_error = on_shutdown

    def stop(self) -> None:
        """
        When the loop runs: end it (its tick in progress first), then send the safe command.

        It is repeated until acknowledged (`deliver`); every exit (signal, transition,
        failure) passes here.
        """
        if not self.running:
            return
        self.running = False
        self._stop_loop()
        if self.context.ok():
            command = self.runtime.stop(self.now()).copy()
            # each send stamped anew: a driver drops a command stamped too long ago
            deliver(self.command_out.publisher,
                    lambda: self.command_out.publish(command, self.now()),
                    self.get_logger(), 'safe command')
        self._send_loop_output()

    def destroy_node(self) -> None:
        """Publish the safe command (when the loop runs), then destroy the node."""
        self.stop()
        if self.command_out is not None:    # nothing publishes commands any more
            self.command_out.close()
        super().destroy_node()

    # -- configuration --------------------------------------------------------------------

    def _parse(self, tree: Dict[str, Any]) -> Tuple[ControllerNodeSettings, ControllerSettings]:
        node, rest = ControllerNodeSettings.split(tree)
        settings = ControllerSettings.parse(rest, self.model)
        out = self.command_out
        # the ~/commands publisher outlives cleanup (see `_release`): its type, and the names
        # a JointState command carries, stay those it was made with
        if out is not None and settings.message != out.message:
            raise ConfigError('output.message', f"is fixed for the node's life: "
                                                f"'{out.message}' (restart the node)")
        if out is not None and out.message == 'joint_state' and \
                settings.joints != out.joint_names:
            raise ConfigError('joints', "are fixed for the node's life with output.message "
                                        f"'joint_state': {list(out.joint_names)} (restart "
                                        'the node)')
        return node, settings

    def _configure(self) -> None:
        self.model = load_model(self.params.model)
        self.node_settings, settings = self.params.bind(self._parse)
        node, n = self.node_settings, self.model.n
        # the planner's worker must never run at the loop's real-time priority (it would
        # starve the executor and every normal thread on its core); its IK runs in a process
        planner = Planner(threaded=True, prepare=lambda: set_thread_priority(0),
                          model_spec=self.params.model)
        loop = ControlLoop(self.model, settings, node.period, planner)
        loop.stop(0.0)                      # no control before activation
        try:                                # the gains' margins behind the file's own valves
            warning = check_gains(loop)
        except ConfigError:                 # refused: nothing of the loop left running
            planner.close()
            loop.ilc.close()
            raise
        if warning:
            self.get_logger().warning(warning)
        if self.command_out is None:        # made once, kept over cleanup (see `_release`)
            self.command_out = CommandPublisher(self, '~/commands', settings.joints,
                                                settings.message)
        self.runtime = ControllerRuntime(loop, node, KINDS, self.command_out.publish)
        self.input = ControllerInput(self.model, node)
        self.state_msg = StateMessage(settings.joints)
        if self.state_pub is None:
            # deep enough for a whole batch (the ring): a sample lost on the way can be repaired
            self.state_pub = self.create_publisher(JointTrajectory, '~/state',
                                                   self.runtime.row_capacity)
            self.diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
            self.subscribe()
        loop.warm_up()
        # a tip reference is planned at activation: its IK process must serve by then; else
        # the process starts meanwhile (`planner_ready` in /diagnostics), and a tip target
        # sent before it serves is planned when it does (the loop keeps its reference)
        if settings.reference.needs_task_space and not planner.wait_ready(
                PLANNER_START_TIMEOUT):
            self.get_logger().warning(f'the planning process did not start within '
                                      f'{PLANNER_START_TIMEOUT} s: tip references cannot be '
                                      'planned (the loop holds the measured pose)')
        self.diag_timer = self.create_timer(1.0, self._diagnostics)
        self.state_timer = self.create_timer(STATE_INTERVAL, self._send_loop_output)
        if self.runtime.task is not None:
            self.task_topics = self.task_topics or TaskTopics(self)
            self.task_topics.bind(self.runtime, self.model, settings,
                                  node.period * node.state_decimation)
        self.get_logger().info(
            f'configured: {n} joints {list(settings.joints)}, {node.rate_hz:g} Hz, output '
            f'{settings.mode} as {settings.message}, model {type(self.model).__name__}')

    def _release(self) -> None:
        """
        Release the model, the runtime and the timers; the topics stay, silent.

        Destroying subscriptions within a transition stalled the EventsExecutor.
        """
        self.params.unbind()
        for timer in (self.diag_timer, self.state_timer):
            if timer is not None:
                self.destroy_timer(timer)
        self.diag_timer = self.state_timer = None
        if self.task_topics is not None:
            self.task_topics.unbind()
        if self.runtime is not None:
            self.runtime.close()
        self.model, self.runtime = None, None

    def _on_change(self, settings: Tuple[ControllerNodeSettings, ControllerSettings],
                   names: list) -> None:
        """Post new settings (executor thread); the loop takes them at its next tick."""
        node, loop_settings = settings
        old = self.node_settings
        self.node_settings = node
        self.input.configure(node)
        self.state_msg = StateMessage(loop_settings.joints)
        restart = self.running and (node.rate_hz, node.spin_before_us, node.max_missed_share) \
            != (old.rate_hz, old.spin_before_us, old.max_missed_share)
        if restart:
            self._stop_loop()
        self.runtime.post_settings(loop_settings, node,
                                   any(name.startswith('reference.') for name in names))
        if restart:
            self.runtime.restart(node)
            self.runner.start(node)
        else:
            self.apply_realtime_priority(old.realtime_priority)
        self.get_logger().info(f'parameters changed: {sorted(names)}')

    def _stop_loop(self) -> None:
        """End the loop thread (after its tick in progress) or the loop timer."""
        if not self.runner.stop():
            self.get_logger().error(f'the loop thread did not end within {STOP_TIMEOUT} s')

    def apply_realtime_priority(self, previous: int = 0) -> None:
        """Give the loop thread `realtime_priority`, the others one less (`spin` calls this)."""
        self.runner.apply_priority(
            self.node_settings.realtime_priority if self.runtime is not None else 0, previous)

    # -- the loop (loop thread, or the executor under sim time) ---------------------------

    def _loop_tick(self, lateness):
        """One control cycle, `lateness` s after its deadline; the runtime sends the command."""
        runtime = self.runtime
        runtime.tick(self.now(), lateness)
        if runtime.grid_move:               # the phase lock's (runtime/phase_lock.py)
            self.runner.move(runtime.grid_move)

    # -- output (executor thread) ---------------------------------------------------------

    def _send_loop_output(self):
        """Publish the runtime's ~/state rows and log its events (executor timer)."""
        runtime = self.runtime
        if runtime is None:
            return
        order = runtime.cycle.order
        for t, status, row in runtime.drain_rows():
            self.state_pub.publish(self.state_msg.fill(t, status, row, order))
        log_lines(self.get_logger(), runtime.drain_events())

    def _diagnostics(self):
        if self.runner.error is not None and self.running:
            self.get_logger().error(f'the loop thread failed: {self.runner.error!r}')
            self.stop()
        values = self.runtime.figures()
        self.diag_pub.publish(diagnostic_array(self, 'control loop', values,
                                               *self.runtime.verdict(values)))


def main(argv=None):
    """Run the controller node (`ros2 run continuum_ctrl controller_node --ros-args ...`)."""
    return spin(ControllerNode, argv)
