"""
`simulator_node`: a real-time simulated arm over ROS 2 (node `continuum_simulator`).

- sub `commands` (remap to the controller's `~/commands`): efforts or pressures, as
  `output.*` says, in the message `output.message` names (ros/command_input.py): a
  std_msgs/Float64MultiArray in `joints` order, or a sensor_msgs/JointState by name in
  `effort`, stamped; a bad command (wrong length, names, non-finite, pressure outside
  ``[p_min, p_max]``) is rejected whole and counted; a command older than `command_timeout`
  means zero input. A stamped command goes stale `command_timeout` after its stamp, and one
  that old on arrival (or older than the command in force) is dropped and counted
  (`late_commands`), never applied. Commands arrive serialized and are rejected unread when
  longer than a command of the arm can be (ros/raw_input.py).
- pub `joint_states` (sensor_msgs/JointState, model joint order; effort: the applied
  generalized force, behind the valves of `actuator.*` in pressure mode) at
  `publish_rate_hz`, reliable, keep last 10 (as joint_state_broadcaster publishes them:
  default-QoS and best-effort subscribers both match); the plant integrates with the fixed
  `step` in between, following the wall clock, on the timer's grid (a step ends when the
  timer is due). What is published is the plant's sensor's sample (sim/sensor.py: noise,
  quantisation, delay, `velocity` empty without `sensor.velocity`, samples lost with
  `sensor.drop`). Its header stamp is, by default, the moment the state held (the plant's
  time less `sensor.delay`; the timer's due time when `step` divides the publishing period,
  else up to one `step` before it), as a driver stamps the moment it read the sensors; with
  `sensor.stamp: publish`, the moment it is published. With `sensor.jitter` each sample is
  held back by its random hold on a one-shot timer (no waiting in the callback); a sample
  still held when the next is due goes out first.
- pub `mocap.topic` (geometry_msgs/PoseStamped, reliable, keep last 10; with
  `mocap.rate_hz` > 0): the tip as motion capture measures it (sim/tip_capture.py: the
  engine's true tip, `mocap.frame`, in the base frame `mocap.frame_id`, with noise,
  latency and dropouts), stamped at the measurement, published once its latency has
  passed (on the plant's timer: up to one period later).
- pub `~/tip_true` (geometry_msgs/PoseStamped, reliable, keep last 10; with the capture):
  the same tip without noise, latency or dropouts, stamped at the measurement: the
  simulator's ground truth, for benchmarks and tests (bench/tip_correction.py --nodes).
- pub `~/joint_states_true` (sensor_msgs/JointState, reliable, keep last 10, as
  `joint_states`; while it has a subscriber): the plant's exact positions and velocities
  (`joint_states`' names, no effort) at each publication of `joint_states`, lost ones
  included, stamped at the plant's time: no noise, quantisation, delay or loss (sim/plant.py
  `Plant.truth`). The ground truth of the arm itself, for the demo's error per period.
- pub `/diagnostics` (~1 Hz): steps, overruns, rejected commands, commands that went stale
  (`stale_commands`: no newer command within `command_timeout`), stamped commands dropped as
  late (`late_commands`), the sensor's samples lost (`dropped_samples`, by `sensor.drop`),
  the longest time between two commands heard (`longest_command_gap_ms`), the engine and, with
  MuJoCo, `contact_force_n` (the sum of the contact normal forces at that moment, N) and
  `contact_force_max_n` (the largest such sum at a step's end since the last window); the
  totals are logged once more when the node stops (`run totals: ...`). Also
  `commands_per_step`, commands accepted per plant step in the window: the plant holds one
  command over each step, so above FAST_COMMANDS it cannot see the command's faster changes
  (at a 1 kHz controller and the 2 ms step, a period-2 alternation of the command has no
  effect on the plant, and nothing damps it): one warning, after two such windows in a row
  (the first window of a start-up can hold a burst), asks for a `step` at most the
  controller's period.
"""

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.time import Time
from sensor_msgs.msg import JointState

from continuum_ctrl.params.launch_description import SIMULATOR as NODE_NAME
from continuum_ctrl.numerics.jit import on_compile
from continuum_ctrl.params import ConfigError
from continuum_ctrl.ros.command_input import CommandInput
from continuum_ctrl.ros.conversion import Rejected, set_doubles
from continuum_ctrl.ros.diagnostics import diagnostic_array
from continuum_ctrl.ros.fast_publish import FORMS
from continuum_ctrl.ros.task_messages import TipPose
from continuum_ctrl.runtime.node_settings import SIMULATOR_NODE_FIELDS, SimulatorNodeSettings
from continuum_ctrl.ros.parameters import NodeParameters
from continuum_ctrl.ros.plumbing import spin
from continuum_ctrl.runtime.throttle import Throttle
from continuum_ctrl.runtime.scheduling import apply_thread_priority
from continuum_ctrl.sim.plant import Plant, PlantSettings, PLANT_FIELDS
from continuum_ctrl.sim.tip_capture import TipCapture

__all__ = ['main', 'NODE_NAME', 'SimulatorNode']

#: every simulator parameter besides `model.*`: the plant's and the node's own
SIMULATOR_FIELDS = {**PLANT_FIELDS, **SIMULATOR_NODE_FIELDS}
#: commands per plant step above which the node warns that the plant misses commands
FAST_COMMANDS = 1.5


class SimulatorNode(Node):
    """The simulator node; see the module documentation for its interface."""

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, automatically_declare_parameters_from_overrides=True,
                         **kwargs)
        on_compile(self.get_logger().info)      # a cold kernel cache: say so at once
        self.params = NodeParameters(self, SIMULATOR_FIELDS, self._on_change)
        self.node_settings, settings = self.params.bind(self._parse)
        self.plant = Plant(settings)
        # one step, discarded: the first model evaluation in a process loads the compiled
        # kernels (~0.4 s), which must not stall the first real-time step
        self.plant.engine.warm_up(self.plant.zero_input(), settings.step)
        n = self.plant.model.n
        self.rejected = 0
        self.resets = 0
        self._heard = None                  # node time of the last command heard, s
        self.longest_gap = 0.0              # longest time between two commands heard, s
        self._window_start = (0, 0)         # (commands, plant steps) at the window's start
        self._fast_warned = False
        self._fast_before = False           # the last window was above FAST_COMMANDS
        self._throttle = Throttle()
        self.msg = JointState()
        self.msg.name = list(self.plant.model.joint_names)
        self.msg.position = self.plant.q.tolist()
        self.msg.velocity = [0.0] * n
        self.msg.effort = [0.0] * n
        self.pub = self.create_publisher(JointState, 'joint_states', QoSProfile(depth=10))
        self.truth_state = JointState(name=self.msg.name, position=[0.0] * n,
                                      velocity=[0.0] * n)
        self.truth_state_pub = self.create_publisher(JointState, '~/joint_states_true',
                                                     QoSProfile(depth=10))
        self.diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.command_input = CommandInput(settings.vectors.joints, settings.message)
        self.create_subscription(FORMS[settings.message].msg_type, 'commands',
                                 self._on_command, QoSProfile(depth=10), raw=True)
        self.capture = self.tip_pub = self.truth_pub = None
        self._capture(settings)
        self.timer = self.create_timer(1.0 / settings.publish_rate_hz, self._tick)
        # the sample held back by `sensor.jitter`, and the one-shot timer that sends it
        self._held = None
        #: the measurement time of the last sample published (s): a timer's catch-up call
        #: finds the plant where it was and would send that sample again, stamped the same
        self._measured = -np.inf
        self._hold_timer = self.create_timer(1.0, self._send_held, autostart=False)
        self.create_timer(1.0, self._diagnostics)
        self._wall = time.perf_counter()
        self._step_time = 0.0
        self.get_logger().info(
            f'plant {type(self.plant.model).__name__} ({n} joints), engine {settings.engine}, '
            f'step {settings.step} s, {settings.publish_rate_hz:g} Hz, input {settings.mode} as '
            f'{settings.message}')

    def _parse(self, tree):
        node, rest = SimulatorNodeSettings.split(tree)
        settings = PlantSettings.parse(rest, self.params.model)
        made = getattr(self, 'plant', None)
        if made is not None and settings.message != made.settings.message:
            raise ConfigError('output.message', f"is fixed for the node's life (the type of "
                                                f"`commands`): '{made.settings.message}'")
        return node, settings

    def _capture(self, settings):
        """Capture the tip as `settings.mocap` says (its topic fixed at the first capture)."""
        mocap = settings.mocap
        self.capture = TipCapture(mocap, self.plant) if mocap.rate_hz > 0.0 else None
        if self.capture is not None and self.tip_pub is None:
            self.tip_pub = self.create_publisher(PoseStamped, mocap.topic, QoSProfile(depth=10))
            self.truth_pub = self.create_publisher(PoseStamped, '~/tip_true',
                                                   QoSProfile(depth=10))
        self.tip_msg, self.truth_msg = TipPose(mocap.frame_id), TipPose(mocap.frame_id)

    def _on_change(self, settings, names):
        previous = self.node_settings.realtime_priority
        self.node_settings, plant_settings = settings
        self.plant.update(plant_settings)
        if any(name.startswith('mocap.') for name in names):
            self._capture(plant_settings)
        # a JointState command is mapped onto the joints as they are now
        self.command_input = CommandInput(plant_settings.vectors.joints, plant_settings.message)
        self.apply_realtime_priority(previous)  # callbacks run on the loop thread
        self.get_logger().info(f'parameters changed: {sorted(names)}')

    def apply_realtime_priority(self, previous=0):
        """Give the calling thread, the one that spins the plant, `realtime_priority`."""
        apply_thread_priority(self.get_logger(), self.node_settings.realtime_priority, previous)

    def _now(self):
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_command(self, data):
        now = self._now()
        if self._heard is not None:
            self.longest_gap = max(self.longest_gap, now - self._heard)
        self._heard = now
        try:
            values, stamp = self.command_input.read(data)
            if self.plant.command(values, now, stamp):
                return
        except (Rejected, ValueError) as exc:
            self.rejected += 1
            if self._throttle.ready():
                self.get_logger().warning(f'rejected command: {exc}; {self.rejected} so far')
            return
        if self._throttle.ready():
            self.get_logger().warning(
                f'dropped a late command: stamped {now - stamp:.3f} s ago (command_timeout '
                f'{self.plant.settings.command_timeout} s), or before the command in force; '
                f'{self.plant.late_commands} so far')

    def _scheduled(self, t):
        """
        Return when the timer was due to call this tick (s on the node clock), at most `t`.

        `t` was read before the timer is asked, so the result is at most the due time: a step
        grid started there is never behind a later call.
        """
        until = self.timer.time_until_next_call()
        if until is None:
            return t
        return min(t + until * 1e-9 - self.timer.timer_period_ns * 1e-9, t)

    def _tick(self):
        t = self._now()
        start = time.perf_counter()
        try:
            self.plant.advance(t, self._scheduled(t))
        except (ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
            self.resets += 1
            self.get_logger().error(f'plant integration failed ({exc}): reset to the initial '
                                    f'pose ({self.resets} resets)')
            self.plant.reset()
        self._step_time += time.perf_counter() - start
        if self.capture is not None:
            truth = self.capture.take()
            if truth is not None:
                self.truth_pub.publish(self.truth_msg.fill(truth, self.plant.t))
            for tip in self.capture.due(t):
                self.tip_pub.publish(self.tip_msg.fill(tip.pose, tip.stamp))
        if self._held is not None:                  # still held: it goes out first
            self._send_held()
        if self.truth_state_pub.get_subscription_count():
            self._send_truth(t)
        sample = self.plant.publish(t)
        if sample is None or sample.measured_at <= self._measured:
            return
        self._measured = sample.measured_at
        effort = self.plant.effort(t)
        if sample.published <= t:
            self._send(sample, effort, t)
            return
        self._held = (sample, effort)
        self._hold_timer.timer_period_ns = round((sample.published - t) * 1e9)
        self._hold_timer.reset()

    def _send_held(self):
        self._hold_timer.cancel()
        if self._held is not None:
            (sample, effort), self._held = self._held, None
            self._send(sample, effort, self._now())

    def _send_truth(self, due):
        """Publish the plant's exact state beside the sample due at `due` (s)."""
        stamp, q, qd = self.plant.truth(due)
        msg = self.truth_state
        msg.header.stamp = Time(nanoseconds=round(stamp * 1e9)).to_msg()
        set_doubles(msg.position, q)
        set_doubles(msg.velocity, qd)
        self.truth_state_pub.publish(msg)

    def _send(self, sample, effort, now):
        """Publish `sample` with `effort` at `now` (s); a `publish` stamp is `now`."""
        msg = self.msg
        stamp = sample.measured_at if self.plant.settings.sensor.stamp == 'measurement' else now
        msg.header.stamp = Time(nanoseconds=round(stamp * 1e9)).to_msg()
        set_doubles(msg.position, sample.q)
        if sample.qd is None:
            msg.velocity = []
        else:
            set_doubles(msg.velocity, sample.qd)
        set_doubles(msg.effort, effort)
        self.pub.publish(msg)

    def totals(self):
        """
        Return the run's counts.

        Plant steps, overruns, rejected commands, resets, the commands that went stale (no
        newer one within `command_timeout`: the input fell to zero), the stamped ones dropped
        as late, the sensor's samples lost (`sensor.drop`) and the longest time between two
        commands heard (ms: a stalled command stream; beyond `command_timeout` it vents).
        """
        return {'steps': self.plant.steps, 'overruns': self.plant.overruns,
                'rejected_commands': self.rejected, 'resets': self.resets,
                'stale_commands': self.plant.stale_commands,
                'late_commands': self.plant.late_commands,
                'dropped_samples': self.plant.sensor.dropped,
                'longest_command_gap_ms': round(1e3 * self.longest_gap, 1)}

    def destroy_node(self):
        """Log the run's totals (read by the demo at the end of a run), then destroy."""
        if hasattr(self, 'plant'):          # not when the constructor failed on a parameter
            self.get_logger().info('run totals: ' + ', '.join(
                f'{key} {value}' for key, value in self.totals().items()))
        super().destroy_node()

    def commands_per_step(self):
        """
        Return the commands accepted per plant step since the last call (0 without steps).

        Warns once when above FAST_COMMANDS in two windows in a row (see the module doc).
        """
        commands, steps = self.plant.commands, self.plant.steps
        counted = commands - self._window_start[0], steps - self._window_start[1]
        self._window_start = (commands, steps)
        ratio = counted[0] / counted[1] if counted[1] else 0.0
        fast = ratio > FAST_COMMANDS
        if fast and self._fast_before and not self._fast_warned:
            self._fast_warned = True
            self.get_logger().warning(
                f'{ratio:.1f} commands arrive per plant step of {self.plant.settings.step} s: '
                f'the plant holds one per step and cannot see faster changes of the command; '
                f'set `step` to at most the controller\'s period')
        self._fast_before = fast
        return ratio

    def _diagnostics(self):
        now = time.perf_counter()
        window, self._wall = now - self._wall, now
        values = {**self.totals(), 'cpu_share_stepping': f'{self._step_time / window:.3f}',
                  'commands_per_step': f'{self.commands_per_step():.2f}',
                  'engine': self.plant.settings.engine}
        contact = self.plant.engine.contact_force()
        if contact is not None:
            values['contact_force_n'] = f'{contact:.3f}'
            values['contact_force_max_n'] = f'{self.plant.engine.largest_contact_force():.3f}'
        self._step_time = 0.0
        self.diag_pub.publish(diagnostic_array(self, 'plant', values.items(), 'running'))


def main(argv=None):
    """Run the simulator node (`ros2 run continuum_ctrl simulator_node --ros-args ...`)."""
    return spin(SimulatorNode, argv)
