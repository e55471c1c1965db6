"""
The controller's task-space topics (with a `task.frame`), on the node's executor thread.

- sub ``~/tip_target`` (geometry_msgs/PoseStamped): taken serialized, size-bounded, checked
  here; the runtime's planner worker clamps it to the closest reachable point;
- sub ``~/tip_measured`` (geometry_msgs/PoseStamped, sensor-data QoS: best effort, so a
  reliable or best-effort capture driver matches; remap it to the driver's topic): the tip
  measured, checked here (frame_id, finite) and posted to the runtime's task-space
  correction (control/tip_correction.py: the FK of its own model copy, on this thread);
- pub ``~/tip_pose`` (geometry_msgs/PoseStamped): every `state_decimation` ticks' time, at
  most TIP_POSE_MAX_RATE_HZ;
- pub ``~/tip_desired`` (geometry_msgs/PoseStamped, position only) with it, while a tip
  reference runs: where the tip is to be (the path point; the IK gets it plus the
  task-space correction), to compare with a measured tip;
- pub ``~/shape`` (visualization_msgs/MarkerArray, continuum arms: rigid arms leave the shape
  to robot_state_publisher): measured and desired backbones, and the tip target, at
  SHAPE_RATE_HZ.
The timers read the runtime's cycle view and evaluate a model object of their own
(`DynamicsModel.for_thread`): the loop thread and the planner's worker have theirs.
"""

from geometry_msgs.msg import PoseStamped
import numpy as np
from rclpy.qos import qos_profile_sensor_data, QoSProfile
from visualization_msgs.msg import MarkerArray

from continuum_ctrl.control.loop import TrajectoryRejected
from continuum_ctrl.ros.conversion import Rejected
from continuum_ctrl.runtime.throttle import Throttle
from continuum_ctrl.ros.raw_input import tip_target_reader
from continuum_ctrl.ros.task_messages import read_tip_measured, read_tip_target, Shape, TipPose

#: rate of `~/shape`, Hz
SHAPE_RATE_HZ = 30.0
#: `~/tip_pose` follows `~/state` (every `state_decimation` ticks) up to this rate, Hz: the
#: executor that runs it is the loop's
TIP_POSE_MAX_RATE_HZ = 100.0
#: backbone points per section in `~/shape`
SHAPE_POINTS = 10


class TaskTopics:
    """
    The task-space topics of `node` (a ControllerNode), made once and kept over cleanup.

    `bind(runtime, model, settings, state_period)` at each configuration (timers made),
    `unbind()` at release (timers destroyed; the subscription ignores input until bound).
    """

    def __init__(self, node):
        self.node = node
        self.runtime = self.model = None
        self.timers: list = []
        self.throttle = Throttle()
        self.tip_pose_pub = node.create_publisher(PoseStamped, '~/tip_pose', 10)
        self.tip_desired_pub = node.create_publisher(PoseStamped, '~/tip_desired', 10)
        self.shape_pub = node.create_publisher(MarkerArray, '~/shape', 1)
        node.create_subscription(PoseStamped, '~/tip_target', self._on_tip_target,
                                 QoSProfile(depth=10), raw=True)
        node.create_subscription(PoseStamped, '~/tip_measured', self._on_tip_measured,
                                 qos_profile_sensor_data)

    def bind(self, runtime, model, settings, state_period):
        """Serve `runtime`'s task space (settings: its ControllerSettings); make the timers."""
        frame = settings.task.base_frame
        self.input = tip_target_reader(frame)
        self.tip_pose, self.tip_desired = TipPose(frame), TipPose(frame)
        self.shape = Shape(frame)
        self.runtime, self.model = runtime, model.for_thread()
        self.timers = [self.node.create_timer(max(state_period, 1.0 / TIP_POSE_MAX_RATE_HZ),
                                              self._publish_tip_pose)]
        if hasattr(model, 'backbone'):
            self.timers.append(self.node.create_timer(1.0 / SHAPE_RATE_HZ,
                                                      self._publish_shape))

    def unbind(self):
        """Destroy the timers; input is ignored until the next `bind`."""
        for timer in self.timers:
            self.node.destroy_timer(timer)
        self.timers = []
        self.runtime = self.model = None

    def _publish_tip_pose(self):
        runtime = self.runtime
        if runtime is not None and runtime.task is not None:
            now = self.node.now()
            pose = self.model.frame_pose(runtime.cycle.q.copy(), runtime.task.frame)
            self.tip_pose_pub.publish(self.tip_pose.fill(pose, now))
            target = runtime.tip_target()
            if target is not None:
                pose = np.eye(4)
                pose[:3, 3] = target
                self.tip_desired_pub.publish(self.tip_desired.fill(pose, now))

    def _publish_shape(self):
        runtime = self.runtime
        if runtime is None or runtime.task is None:
            return
        cycle, model = runtime.cycle, self.model
        q, q_des = cycle.q.copy(), cycle.q_des.copy()
        target = runtime.tip_target()
        self.shape_pub.publish(self.shape.fill(
            model.backbone(q, SHAPE_POINTS), model.backbone(q_des, SHAPE_POINTS),
            None if target is None else target.copy(), self.node.now()))

    def _on_tip_measured(self, msg):
        """Check a measured tip; the runtime's correction takes it, or says why not."""
        runtime = self.runtime
        if runtime is None or runtime.task is None:
            return
        now = self.node.now()
        try:
            position, stamp = read_tip_measured(msg, runtime.task.settings.base_frame)
        except Rejected as exc:
            self.node.reject('tip_measured', str(exc), 'tip_measured')
            return
        reason = runtime.post_tip(position, stamp, now)
        if reason is not None and self.throttle.ready():
            self.node.get_logger().warning(f'rejected tip_measured: {reason}')

    def _on_tip_target(self, data):
        """Bound and check a serialized tip target; the planner's worker clamps it."""
        runtime = self.runtime
        if runtime is None or runtime.task is None:
            return
        try:
            msg = self.input.read(data)
            position, rotation = read_tip_target(msg, runtime.task.settings.base_frame)
            runtime.request_tip_target(position, rotation)
        except (Rejected, TrajectoryRejected) as exc:
            self.node.reject('tip_target', str(exc), 'tip_target')
