"""
Task-space messages of the controller: `~/tip_pose`, `~/tip_target` and `~/shape`.

- `TipPose` fills a geometry_msgs/PoseStamped from a 4x4 pose [m] in the base frame;
- `read_tip_target` checks a geometry_msgs/PoseStamped target (frame_id the base frame,
  finite values, a unit quaternion) and returns its position [m] and rotation matrix, or
  raises Rejected('tip_target', reason);
- `read_tip_measured` checks a measured tip (frame_id the base frame, a finite position)
  and returns its position [m] and stamp [s], or raises Rejected('tip_measured', reason);
- `Shape` fills a visualization_msgs/MarkerArray: the measured and the desired backbone as
  LINE_STRIP markers (two colours) and the tip target as a SPHERE, in the base frame.
"""

import numpy as np
import pinocchio as pin
from geometry_msgs.msg import Point, PoseStamped
from visualization_msgs.msg import Marker, MarkerArray

from continuum_ctrl.ros.conversion import Rejected

#: marker ids of `~/shape`: measured backbone, desired backbone, tip target
MEASURED, DESIRED, TARGET = 0, 1, 2
#: RGBA colours of the three markers
COLOURS = {MEASURED: (0.1, 0.4, 1.0, 1.0), DESIRED: (1.0, 0.5, 0.0, 0.8),
           TARGET: (0.1, 0.8, 0.2, 0.8)}
#: line width of the backbones and diameter of the target sphere, m
LINE_WIDTH, TARGET_SIZE = 0.004, 0.012
#: how far a target quaternion's norm may be from 1
QUATERNION_TOLERANCE = 1e-3


def set_stamp(header, t):
    """Set `header.stamp` to `t` seconds."""
    header.stamp.sec = int(t)
    header.stamp.nanosec = int((t - int(t)) * 1e9)


class TipPose:
    """A reused PoseStamped of the task frame in `frame_id`."""

    def __init__(self, frame_id):
        self.msg = PoseStamped()
        self.msg.header.frame_id = frame_id

    def fill(self, pose, t):
        """Fill from a 4x4 pose [m] at time `t` (s); return the message."""
        msg = self.msg
        set_stamp(msg.header, t)
        p = msg.pose.position
        p.x, p.y, p.z = (float(v) for v in pose[:3, 3])
        x, y, z, w = pin.Quaternion(pose[:3, :3]).coeffs()
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = float(x), float(y), float(z), float(w)
        return msg


def read_tip_target(msg, frame_id):
    """
    Return ``(position (3,), rotation (3, 3))`` of a PoseStamped target in `frame_id`.

    An all-zero quaternion means no orientation given (identity). Raises
    Rejected('tip_target', reason) for another frame, non-finite values or a quaternion that
    is not of unit length.
    """
    if msg.header.frame_id != frame_id:
        raise Rejected('tip_target', f"frame_id '{msg.header.frame_id}' is not the base frame "
                                     f"'{frame_id}'")
    p, o = msg.pose.position, msg.pose.orientation
    position = np.array([p.x, p.y, p.z])
    quaternion = np.array([o.x, o.y, o.z, o.w])
    if not (np.isfinite(position).all() and np.isfinite(quaternion).all()):
        raise Rejected('tip_target', 'non-finite values')
    norm = float(np.linalg.norm(quaternion))
    if norm == 0.0:
        return position, np.eye(3)
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise Rejected('tip_target', f'orientation quaternion of norm {norm:.6g}, not 1')
    return position, pin.Quaternion(*(quaternion[[3, 0, 1, 2]] / norm)).toRotationMatrix()


def read_tip_measured(msg, frame_id):
    """
    Return ``(position (3,) m, stamp s)`` of a measured tip (PoseStamped) in `frame_id`.

    Raises Rejected('tip_measured', reason) for another frame (there is no tf2 here) or a
    non-finite position.
    """
    if msg.header.frame_id != frame_id:
        raise Rejected('tip_measured', f"frame_id '{msg.header.frame_id}' is not the base "
                                       f"frame '{frame_id}'")
    p = msg.pose.position
    position = np.array([p.x, p.y, p.z])
    if not np.isfinite(position).all():
        raise Rejected('tip_measured', 'non-finite position')
    return position, msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


class Shape:
    """A reused MarkerArray: measured and desired backbone, and the tip target."""

    def __init__(self, frame_id, namespace='shape'):
        self.msg = MarkerArray()
        for marker_id in (MEASURED, DESIRED, TARGET):
            marker = Marker()
            marker.header.frame_id = frame_id
            marker.ns = namespace
            marker.id = marker_id
            marker.type = Marker.SPHERE if marker_id == TARGET else Marker.LINE_STRIP
            marker.pose.orientation.w = 1.0
            size = TARGET_SIZE if marker_id == TARGET else LINE_WIDTH
            marker.scale.x = size
            if marker_id == TARGET:
                marker.scale.y = marker.scale.z = size
            c = marker.color
            c.r, c.g, c.b, c.a = COLOURS[marker_id]
            self.msg.markers.append(marker)

    def fill(self, measured, desired, target, t):
        """
        Fill from backbones (m, 3) [m] and the target (3,) or None (sphere deleted), at `t`.

        Return the message.
        """
        markers = self.msg.markers
        for marker, points in ((markers[MEASURED], measured), (markers[DESIRED], desired)):
            set_stamp(marker.header, t)
            if len(marker.points) != len(points):
                marker.points = [Point() for _ in range(len(points))]
            for point, (x, y, z) in zip(marker.points, np.asarray(points, dtype=float).tolist()):
                point.x, point.y, point.z = x, y, z     # in place: a new list costs 10 x more
        sphere = markers[TARGET]
        set_stamp(sphere.header, t)
        if target is None:
            sphere.action = Marker.DELETE
        else:
            sphere.action = Marker.ADD
            p = sphere.pose.position
            p.x, p.y, p.z = (float(v) for v in target)
        return self.msg
