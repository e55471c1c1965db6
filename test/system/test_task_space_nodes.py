"""
Task space over real processes: controller and simulator (integral-model plant), ROS topics.

The tip is measured by FK of the simulator's `joint_states`; `~/tip_pose` and `~/shape` are
checked as messages against the FK of the same model.
"""

import time

from geometry_msgs.msg import PoseStamped
import numpy as np
import pytest
from support.ros_nodes import params_file, running
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from visualization_msgs.msg import Marker, MarkerArray

from continuum_ctrl import load_model
from continuum_ctrl.control.ik import InverseKinematics
from continuum_ctrl.params.launch_description import arm_files

pytestmark = [pytest.mark.ros, pytest.mark.slow]

CONFIG = arm_files('continuum_task')
TIP = 'section3_tip'


def stale_episodes(log_path):
    """Return how often the controller's log says it fell back to the safe command so far."""
    return sum('no valid joint states' in line for line in log_path.read_text().splitlines())


class Watch:
    """The simulator's joint states, ~/tip_pose, ~/shape and the controller's commands."""

    def __init__(self, rec, tmp_path):
        self.rec, self.log = rec, tmp_path / 'continuum_controller.log'     # ros_nodes.running's
        self.model = load_model(list(CONFIG), 'continuum_controller')
        self.states, self.poses, self.shapes = [], [], []
        node = rec.node
        node.create_subscription(JointState, '/joint_states', self._state,
                                 qos_profile_sensor_data)
        node.create_subscription(PoseStamped, '/continuum_controller/tip_pose',
                                 self.poses.append, 10)
        node.create_subscription(MarkerArray, '/continuum_controller/shape',
                                 self.shapes.append, 10)
        self.target = node.create_publisher(PoseStamped, '/continuum_controller/tip_target', 10)
        # the IK process starts beside the loop; a target sent before it serves waits for it
        assert rec.wait(lambda: self.target.get_subscription_count() > 0 and rec.diagnostics
                        and rec.diagnostics[-1]['planner_ready'] == '1', 30.0)

    def _state(self, msg):
        index = {name: i for i, name in enumerate(msg.name)}
        q = np.array([msg.position[index[name]] for name in self.model.joint_names])
        self.states.append((time.monotonic(), q))

    def tip(self, q):
        return self.model.frame_pose(q, TIP)[:3, 3]

    def tips_since(self, t0):
        return np.array([self.tip(q) for t, q in self.states if t >= t0])

    def send(self, position, frame_id='base'):
        msg = PoseStamped()
        msg.header.frame_id = frame_id
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, position)
        msg.pose.orientation.w = 1.0
        self.target.publish(msg)

    def send_and_run(self, position, seconds):
        """
        Send a tip target and run `seconds`; return the monotonic time it was last sent.

        A state timeout on a loaded machine (the simulator stalled past `state_timeout`)
        re-anchors the configured reference and forgets the target, as it forgets a
        ``~/joint_trajectory``: then it is sent again, at most three times in all.
        """
        for _ in range(3):
            timeouts = stale_episodes(self.log)
            sent = time.monotonic()
            self.send(position)
            self.rec.run(seconds)
            if stale_episodes(self.log) == timeouts:
                return sent
        raise AssertionError(f'a state timeout in each of three tries:\n{self.log.read_text()}')


def diagnosis(watch, goal):
    """Return what a missed target needs: where the reference's tip is, the correction's state."""
    figures = watch.rec.diagnostics[-1] if watch.rec.diagnostics else {}
    keys = [key for key in figures if key.startswith(('tip_', 'rejected_tip', 'clamped'))]
    _, q_des, q, _ = watch.rec.states[-1]
    return (f"the reference's tip {np.linalg.norm(watch.tip(q_des) - goal) * 1e3:.3f} mm from "
            f"the target; joint errors {np.round((q - q_des) * 1e3, 3)} mm; the simulator's "
            f"last joints less the loop's {np.round((watch.states[-1][1] - q) * 1e3, 3)} mm; "
            f"last command "
            f"{np.round(watch.rec.commands[-1][-1] * 1e-3, 1)} kPa; "
            f"{', '.join(f'{key} {figures[key]}' for key in keys)}")


def hold_file(tmp_path):
    """The task config with a held reference (the tip waits for ~/tip_target)."""
    return params_file(tmp_path, CONFIG, continuum_controller={
        'reference': {'type': 'hold'}, 'task': {'duration': 1.0}})


def test_tip_pose_and_shape_agree_with_fk_and_a_reachable_target_is_reached(tmp_path):
    with running(tmp_path, hold_file(tmp_path)) as (rec, processes):
        watch = Watch(rec, tmp_path)
        assert rec.wait(lambda: len(watch.poses) > 5 and len(watch.shapes) > 2
                        and len(watch.states) > 5, 30.0, processes)
        # messages: frame, sizes, finite values, agreement with FK of the measured pose
        rec.run(1.0)
        pose = watch.poses[-1]
        assert pose.header.frame_id == 'base'
        p = np.array([pose.pose.position.x, pose.pose.position.y, pose.pose.position.z])
        o = pose.pose.orientation
        assert np.isfinite(p).all() and abs(np.linalg.norm([o.x, o.y, o.z, o.w]) - 1) < 1e-9
        q_now = watch.states[-1][1]
        assert np.linalg.norm(p - watch.tip(q_now)) < 2e-3     # a few ticks apart, at rest
        shape = watch.shapes[-1]
        measured, desired, _ = shape.markers
        kinds = [Marker.LINE_STRIP, Marker.LINE_STRIP, Marker.SPHERE]
        assert [m.type for m in shape.markers] == kinds
        assert all(m.header.frame_id == 'base' for m in shape.markers)
        assert len(measured.points) == len(desired.points) == 1 + 3 * 10
        points = np.array([[pt.x, pt.y, pt.z] for pt in measured.points])
        assert np.isfinite(points).all()
        assert np.allclose(points, watch.model.backbone(q_now, 10), atol=2e-3)
        assert np.allclose(points[-1], watch.tip(q_now), atol=2e-3)
        assert measured.color != desired.color

        # a reachable target, about 4 cm away: the FK of a pose inside the limits
        goal = watch.tip(q_now + 1e-3 * np.array([1.0, -0.6, -0.4, 0.3, -0.3, 0.0, 0.0, 0.0,
                                                  0.0]))
        start = watch.tip(q_now)
        assert 0.02 < np.linalg.norm(goal - start) < 0.06
        sent = watch.send_and_run(goal, 6.0)
        # the move (1.7 s) and the settling done: on this arm (the integral model, not the
        # controller's CoG one) the error fell from 3 mm at 2 s to 1.2 at 5 s and 1.0 at 8 s
        # (here; at 3 s, 1.9 to 2.03 mm: the bound's edge)
        error = np.linalg.norm(watch.tips_since(sent + 5.0) - goal, axis=1)
        print(f'reachable target: steady-state tip error median {np.median(error) * 1e3:.3f} '
              f'mm, max {error.max() * 1e3:.3f} mm; ' + diagnosis(watch, goal))
        _, q_des, _, _ = rec.states[-1]
        assert np.linalg.norm(watch.tip(q_des) - goal) <= 2e-4, diagnosis(watch, goal)
        # of the target's redundant poses the IK keeps one the pressures hold with room
        # (control/holding.py); before, 1 run in 4-10 ended on one needing a PMA below 0 kPa
        # or above p_max, 0.9-7 mm short with that PMA's command at the bound
        assert np.max(error) <= 2e-3, diagnosis(watch, goal)
        sphere = watch.shapes[-1].markers[2]
        assert sphere.action == Marker.ADD
        assert np.allclose([sphere.pose.position.x, sphere.pose.position.y,
                            sphere.pose.position.z], goal, atol=1e-6)

        # bad targets are rejected and counted; the reference is kept
        watch.send([np.nan, 0.0, 0.5])
        watch.send(goal + 0.01, frame_id='world')
        assert rec.wait(lambda: rec.diagnostics and
                        int(rec.diagnostics[-1]['rejected_tip_target']) == 2, 5.0, processes)
        tips = watch.tips_since(time.monotonic() - 0.5)
        assert np.max(np.linalg.norm(tips - goal, axis=1)) <= 2e-3


def test_tip_circle_is_tracked(tmp_path):
    # no capture: the built-in engine's tip is the model's, and FK(q_des) is then the path
    path = params_file(tmp_path, CONFIG, continuum_simulator={'mocap': {'rate_hz': 0.0}})
    with running(tmp_path, path) as (rec, processes):
        watch = Watch(rec, tmp_path)
        # on the controller's clock: the move (<= 1.5 s) and the ramp (1.5 s) done, then 5.5 s
        # of circle, however far the recorder lags behind (a loaded machine: seconds)
        circle_at = rec.active_since + 3.0 + 1.0
        assert rec.wait(lambda: rec.states[-1][0] >= circle_at + 5.5, 60.0, processes)
        # ~/state: the reference and the feedback (the simulator's joint_states) per tick
        rows = [(q_des, q) for t, q_des, q, _ in rec.states if t >= circle_at]
        assert len(rows) > 1000
        desired = np.array([watch.tip(q_des) for q_des, _ in rows])
        tips = np.array([watch.tip(q) for _, q in rows])
        rms = np.sqrt(np.mean(np.sum((tips - desired) ** 2, axis=1)))
        center, radius = np.array([0.0, 0.0, 0.625]), 0.03
        assert np.allclose(np.linalg.norm(desired - center, axis=1), radius, atol=1e-6)
        assert np.allclose(desired[:, 2], center[2], atol=1e-6)
        angles = np.unwrap(np.arctan2(tips[:, 1], tips[:, 0]))
        print(f'tip circle: RMS tip error {rms * 1e3:.3f} mm, largest '
              f'{np.max(np.linalg.norm(tips - desired, axis=1)) * 1e3:.3f} mm, '
              f'{(angles[-1] - angles[0]) / (2 * np.pi):.2f} revolutions')
        assert rms <= 2e-3
        assert (angles[-1] - angles[0]) / (2 * np.pi) > 0.9        # it goes round


def test_unreachable_target_goes_to_the_closest_point_within_limits(tmp_path):
    """
    A target above the fully extended arm: the closest point is the straight arm at l_max.

    The strokes are cut to 25 mm here (controller and plant) so that the closest point is
    one the pressures can hold (2200 N/m * 25 mm = 55 N of the 66.5 N of p_max); every
    unreachable point of the 40 mm arm needs some PMA at 40 mm, 88 N.
    """
    path = params_file(tmp_path, CONFIG, all={'model': {'sections': {
        'max_extension': [0.025] * 3}}}, continuum_controller={'reference': {'type': 'hold'}})
    with running(tmp_path, path) as (rec, processes):
        watch = Watch(rec, tmp_path)
        watch.model = load_model(str(path), 'continuum_controller')
        assert rec.wait(lambda: len(watch.states) > 5, 30.0, processes)
        far = np.array([0.0, 0.0, 0.8])
        solution = InverseKinematics(watch.model, TIP).solve(far, q0=watch.states[-1][1])
        closest = watch.tip(solution.q)
        assert np.allclose(closest, [0.0, 0.0, 0.675], atol=1e-6)
        watch.send_and_run(far, 6.0)
        assert rec.wait(lambda: rec.diagnostics and
                        int(rec.diagnostics[-1]['clamped_tip_targets']) >= 1, 5.0, processes)
        # the test process hears the 500 Hz best-effort joint states as it can: on a loaded
        # CI machine 95 in the last second (of 500), so the tip is judged over the last 2 s
        tips = watch.tips_since(time.monotonic() - 2.0)
        assert len(tips) > 100
        gap = np.linalg.norm(tips - closest, axis=1)
        print(f'unreachable target: tip {np.median(gap) * 1e3:.3f} mm (largest '
              f'{gap.max() * 1e3:.3f} mm) from the closest reachable point, which is '
              f'{np.linalg.norm(closest - far) * 1e3:.1f} mm from the target')
        assert np.max(gap) <= 2e-3
        low, high = watch.model.joint_limits()
        q_des = np.array([s[1] for s in rec.states])
        assert np.all(q_des >= low - 1e-12) and np.all(q_des <= high + 1e-12)
        commands = np.array([c[1] for c in rec.commands])
        assert np.all(commands >= 0.0) and np.all(commands <= 5.0e5)
