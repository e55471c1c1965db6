"""
The controller's `~/state` message (trajectory_msgs/JointTrajectory) from a runtime row.

Points, like control_msgs/JointTrajectoryControllerState: [reference (positions, velocities,
accelerations), feedback (positions, velocities), error (positions, velocities; effort: the
integral force, N or N m), output (effort: the generalized force sent)], in `joints` order;
header stamp: the tick time; frame_id: the status.
"""

from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from continuum_ctrl.ros.task_messages import set_stamp
from continuum_ctrl.runtime.controller_runtime import STATE_PARTS


class StateMessage:
    """One JointTrajectory, refilled for each row (`fill`)."""

    def __init__(self, joints):
        self.msg = JointTrajectory()
        self.msg.joint_names = list(joints)
        self.msg.points = [JointTrajectoryPoint() for _ in range(4)]

    def fill(self, t, status, row, order):
        """Return the message of `row` (STATE_PARTS, model order) at `t` s, joints in `order`."""
        q_des, qd_des, qdd_des, q, qd, effort, integral = (
            part[order] for part in row.reshape(len(STATE_PARTS), -1))
        msg = self.msg
        set_stamp(msg.header, t)
        msg.header.frame_id = status
        reference, feedback, error, output = msg.points
        reference.positions, reference.velocities = q_des.tolist(), qd_des.tolist()
        reference.accelerations = qdd_des.tolist()
        feedback.positions, feedback.velocities = q.tolist(), qd.tolist()
        error.positions, error.velocities = (q_des - q).tolist(), (qd_des - qd).tolist()
        error.effort = integral.tolist()
        output.effort = effort.tolist()
        return msg
