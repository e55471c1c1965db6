"""
A measurement prototype: the controller node with the live-tick building blocks wired in.

    python bench/prototype_node.py [--spin-before-us US] --ros-args ...   (the controller's)

The stock ControllerNode, changed only where the blocks go (bench_node.py runs it beside the
stock node, in the same run):
- the loop runs on a `LoopThread` (absolute deadlines, `realtime_priority` on itself; the
  executor and the middleware's threads one below) instead of an executor timer;
- `joint_states` arrives raw and passes the size bound (`ros/raw_input.py`) before it is
  deserialized and read, on the executor thread; the validated state reaches the loop through
  a `StateHandoff`, and rejections too;
- the command goes out as pre-serialized bytes (`CommandPublisher`);
- `/diagnostics` stays on the executor timer, off the loop thread;
- `--spin-before-us`: the loop thread's `spin_before` (default 0).
Not a product node: no rate change at run time, and its statistics are written by two
threads. The lifecycle node takes the blocks over (see the live-tick issue).
"""

import sys
import time

from continuum_ctrl.control.loop import ACTIVE
from continuum_ctrl.ros.controller_node import ControllerNode, LOG_THROTTLE, spin
from continuum_ctrl.ros.conversion import Rejected
from continuum_ctrl.ros.fast_publish import CommandPublisher
from continuum_ctrl.ros.loop_thread import LoopThread, StateHandoff
from continuum_ctrl.ros.raw_input import joint_states_reader
from continuum_ctrl.ros.scheduling import set_node_priority
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState


class PrototypeNode(ControllerNode):
    """ControllerNode with a loop thread, raw bounded input and pre-serialized commands."""

    #: the loop thread's spin before each deadline, s
    spin_before = 0.0

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        for subscription in list(self.subscriptions):
            if subscription.topic_name.endswith('/joint_states'):
                self.destroy_subscription(subscription)
        self.input = joint_states_reader(self.model.joint_names)
        self.handoff = StateHandoff()
        self.rejected['size'] = 0
        self.fast = CommandPublisher(self, '~/commands', self.model.n)
        self.create_subscription(JointState, 'joint_states', self._on_raw_state,
                                 qos_profile_sensor_data, raw=True)
        self.thread = LoopThread(self._thread_tick, self.params.settings.period,
                                 self.params.settings.realtime_priority, self.spin_before)

    def _start_loop_timer(self, settings):
        self.timer = None
        self._late_us = 1.5 * settings.period * 1e6

    def apply_realtime_priority(self, previous=0):
        """Executor and middleware threads one below the loop; then start the loop thread."""
        priority = self.loop.settings.realtime_priority
        if priority:
            set_node_priority(max(priority - 1, 1))
        if not self.thread.alive and self.thread.ticks == 0:
            self.thread.start()

    def _reject(self, kind, reason, what='joint_states'):
        self.rejected[kind] += 1
        if what == 'joint_states':
            self.handoff.post_rejection()
        wall = time.monotonic()
        if wall - self._last_log > LOG_THROTTLE:
            self._last_log = wall
            self.get_logger().warn(f'rejected {what} ({kind}): {reason}; totals {self.rejected}')

    def _on_raw_state(self, data):
        try:
            msg = self.input.read(data)
            t = self._now()
            q, qd = self.reader.read(msg, t)
        except Rejected as exc:
            self._reject(exc.kind, str(exc))
            return
        self._receive_wall = time.perf_counter()
        sent = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        if sent > 0.0:
            self.transport.add(max(time.time() - sent, 0.0) * 1e6)
        self.handoff.post(q, qd, t)

    def _thread_tick(self, lateness):
        start = time.perf_counter()
        self.handoff.take(self.loop)
        if self._last_tick is not None:
            period = (start - self._last_tick) * 1e6
            self.period.add(period)
            if period > self._late_us:
                self.late_ticks += 1
        self._last_tick = start
        t = self._now()
        self.fast.publish(self.loop.tick(t))
        self.age.add((start - self._receive_wall) * 1e6 if self.loop.status == ACTIVE else 0.0)
        self._ticks += 1
        if self._ticks >= self.loop.settings.state_decimation:
            self._ticks = 0
            self._publish_state(t)
        if self.loop.events:
            self._log_events()
        self.compute.add((time.perf_counter() - start) * 1e6)

    def publish_safe(self):
        """Stop the loop thread, then publish the safe command once."""
        self.thread.stop()
        super().publish_safe()


def main():
    """Run the prototype with the controller's command-line arguments."""
    if '--spin-before-us' in sys.argv:
        at = sys.argv.index('--spin-before-us')
        PrototypeNode.spin_before = float(sys.argv[at + 1]) * 1e-6
        del sys.argv[at:at + 2]
    return spin(PrototypeNode)


if __name__ == '__main__':
    raise SystemExit(main())
