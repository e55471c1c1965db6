"""
The controller's `~/tip_measured` through real node processes: the edge of the correction.

The simulator's own capture is off; this test is the motion-capture driver, on the topic the
launch remaps `~/tip_measured` to: the controller's `~/tip_pose` less a 4 mm gap, stamped
now, at 100 Hz. The correction grows towards the gap (/diagnostics); a frame_id other than
the base frame, a stale stamp and an outlier are rejected and counted; a dropout shorter
than the timeout says nothing; a stream that stops falls back to the model with one log
line, shown in /diagnostics.
"""

import time

from geometry_msgs.msg import PoseStamped
import numpy as np
import pytest
from support.ros_nodes import params_file, running

from continuum_ctrl.params.launch_description import arm_files, MOCAP_TOPIC
from continuum_ctrl.ros.task_messages import set_stamp

pytestmark = [pytest.mark.ros, pytest.mark.slow]

GAP = np.array([0.004, 0.0, 0.0])
FALLBACK = 'no tip measurement for'


class Driver:
    """A capture driver on the recorder's node: the model's tip less GAP, while `on`."""

    def __init__(self, rec):
        self.rec, self.tip, self.on = rec, None, True
        rec.node.create_subscription(PoseStamped, '/continuum_controller/tip_pose',
                                     self._tip_pose, 10)
        self.pub = rec.node.create_publisher(PoseStamped, MOCAP_TOPIC, 10)
        rec.node.create_timer(0.01, self._send)

    def _tip_pose(self, msg):
        p = msg.pose.position
        self.tip = np.array([p.x, p.y, p.z])

    def send(self, position, frame_id='base', age=0.0):
        """Publish one measured tip stamped `age` s ago."""
        msg = PoseStamped()
        msg.header.frame_id = frame_id
        set_stamp(msg.header, time.time() - age)
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, position)
        msg.pose.orientation.w = 1.0
        self.pub.publish(msg)

    def _send(self):
        if self.on and self.tip is not None:
            self.send(self.tip - GAP)


def figures(rec):
    """Return the controller's latest /diagnostics figures as floats (those that are)."""
    out = {}
    for key, value in (rec.diagnostics[-1] if rec.diagnostics else {}).items():
        try:
            out[key] = float(value)
        except ValueError:
            pass
    return out


def test_tip_measured_is_checked_held_over_a_dropout_and_falls_back_once(tmp_path):
    path = params_file(tmp_path, arm_files('continuum_task'),
                       continuum_controller={'reference': {'type': 'hold'},
                                             'task': {'correction': {'timeout': 0.5}}},
                       continuum_simulator={'mocap': {'rate_hz': 0.0}})
    log = tmp_path / 'continuum_controller.log'
    with running(tmp_path, path) as (rec, processes):
        driver = Driver(rec)
        assert rec.wait(lambda: figures(rec).get('tip_correction_mm', 0.0) > 3.0, 20.0,
                        processes), f'no correction: {figures(rec)}'
        # bad samples among the good: another frame, a stale stamp, an outlier
        driver.send(driver.tip - GAP, frame_id='world')
        driver.send(driver.tip - GAP, age=1.0)
        driver.send(driver.tip - GAP - [0.02, 0.0, 0.0])
        assert rec.wait(lambda: all(figures(rec).get(f'rejected_{kind}', 0) >= 1 for kind in (
            'tip_measured', 'tip_stale', 'tip_outlier')), 10.0, processes), figures(rec)
        assert "frame_id 'world' is not the base frame 'base'" in log.read_text()
        # a dropout of 0.3 s (timeout 0.5 s): held, nothing said
        driver.on = False
        rec.run(0.3)
        driver.on = True
        rec.run(1.5)
        assert FALLBACK not in log.read_text()
        assert figures(rec)['tip_correction_fallback'] == 0
        # the stream stops: back to the model, one line, shown in /diagnostics
        driver.on = False
        assert rec.wait(lambda: figures(rec).get('tip_correction_fallback') == 1, 10.0,
                        processes)
        rec.run(2.0)
        assert log.read_text().count(FALLBACK) == 1
        assert figures(rec)['tip_correction_mm'] < 1.0         # decayed at 2 rad/s
