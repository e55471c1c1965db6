"""
The task-space correction through real node processes on an arm unlike the model.

Issue 50's first acceptance case, one target: the MuJoCo disc stack (4 discs per section)
20 % off the controller's model, under gravity, captured at 120 Hz with 0.2 mm noise and
10 ms latency on the topic the launch remaps `~/tip_measured` to. A `~/tip_target` 350 mm
off the axis: 3 s after the move's end the true tip (the simulator's `~/tip_true`, the
capture without noise) is within 1 mm of it, while the model's tip (its kinematics at the
joints of `~/state`) is the kinematic gap away. bench/tip_correction.py --nodes measured
0.2-0.4 mm true and 10-16 mm model at 250-450 mm with 8 discs (docs/task-space.md); here 4
discs: 0.32-0.72 mm true, 12-22 mm model in six runs. With 8 discs the simulator's stepping
took 60-90 % of a core beside the controller on a 2-core machine, and in 6 of 16 runs (CI's
included) the arm was left ringing after the move (2.7-7 MPa/s, the states then up to 40 ms
old), 10-520 mm off: with 4 discs the stepping takes 18-26 % and the loop is quiet 1 s after
the move in every run. Which of the load and the 8-disc stack's modes starts the ringing is
open.
"""

import time

from geometry_msgs.msg import PoseStamped
import numpy as np
import pytest
from support.ros_nodes import params_file, running, stall, unstalled

from continuum_ctrl import load_model
from continuum_ctrl.identify.calibration_run import bent_tip
from continuum_ctrl.params.launch_description import arm_files, CONTROLLER, TRUTH_TOPIC
from continuum_ctrl.ros.task_messages import set_stamp

pytestmark = [pytest.mark.ros, pytest.mark.slow]

TIP = 'section3_tip'
#: the plant 20 % off, captured as the acceptance says (bench/tip_correction.py's PLANT)
PLANT = {'engine': 'mujoco', 'mujoco': {'discs': 4},
         'mismatch': {'stiffness_scale': 1.2, 'damping_scale': 1.25, 'area_scale': 1.1,
                      'deadzone': 15000.0},
         'initial': {'position': [0.013]},
         'mocap': {'rate_hz': 120.0, 'noise': 2e-4, 'latency': 0.01}}
#: s after the move's end at which the true tip is judged, and over which it is averaged
SETTLE, SPAN = 3.0, 0.5


def measure(tmp_path):
    """Run the nodes, send the target; return ((true mean, largest, model) m, stall)."""
    path = params_file(tmp_path, arm_files('continuum_task'), continuum_controller={
        'reference': {'type': 'hold'}, 'task': {'max_speed': 0.25}},
        continuum_simulator=PLANT)
    model = load_model(str(path), CONTROLLER)
    goal = bent_tip(model, TIP, 0.35, 1.0)
    with running(tmp_path, path) as (rec, processes):
        target = rec.node.create_publisher(PoseStamped, f'/{CONTROLLER}/tip_target', 10)
        assert rec.wait(lambda: target.get_subscription_count() > 0 and rec.diagnostics
                        and rec.diagnostics[-1].get('planner_ready') == '1', 30.0, processes)
        msg = PoseStamped()
        msg.header.frame_id = 'base'
        set_stamp(msg.header, time.time())
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, goal)
        msg.pose.orientation.w = 1.0
        sent = time.time()
        target.publish(msg)
        desired = rec.tips[f'/{CONTROLLER}/tip_desired']
        assert rec.wait(lambda: any(stamp > sent and np.linalg.norm(x - goal) < 1e-6
                                    for stamp, x in desired), 15.0, processes), \
            'the move did not end'
        end = next(stamp for stamp, x in desired
                   if stamp > sent and np.linalg.norm(x - goal) < 1e-6)
        judged = end + SETTLE
        assert rec.wait(lambda: rec.tips[TRUTH_TOPIC] and
                        rec.tips[TRUTH_TOPIC][-1][0] > judged + SPAN and
                        rec.states[-1][0] > judged + SPAN, 15.0, processes)
        truth = np.array([x for stamp, x in rec.tips[TRUTH_TOPIC]
                          if judged <= stamp <= judged + SPAN])
        q = rec.arrays(since=judged, until=judged + SPAN)[2]
        order = [rec.joint_names.index(name) for name in model.joint_names]
        tips = np.array([model.frame_pose(row[order], TIP)[:3, 3] for row in q])
        errors = (float(np.linalg.norm(truth - goal, axis=1).mean()),
                  float(np.linalg.norm(truth - goal, axis=1).max()),
                  float(np.linalg.norm(tips - goal, axis=1).mean()))
        return errors, stall(rec, sent)


def test_the_true_tip_reaches_a_target_through_the_nodes(tmp_path):
    true, largest, model = unstalled(lambda: measure(tmp_path))
    print(f'target 350 mm off the axis, {SETTLE:g} s after the move (mean over {SPAN:g} s): '
          f'true tip {true * 1e3:.3f} mm (largest {largest * 1e3:.3f}), model\'s tip '
          f'{model * 1e3:.2f} mm')
    assert true <= 1e-3
    assert model >= 5e-3            # the gap is there: without the correction it is the error
