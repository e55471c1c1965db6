"""
The lengths a task-space reference learns the arm does not pass (control/seen_reach.py).

On the shipped task arm, in process, without ROS: a plant that follows the loop's reference
except one PMA held by a stop above where the IK sends it (the disc stack 20 % off did so
through the nodes: a PMA vented 1.1 mm above its reference, the true tip 15.5 mm off). Then
the rules of `SeenReach` alone: a short pin is not learnt, a freed joint's bound relaxes at
its speed and goes, an unbounded effort never pins.
"""

import numpy as np

from continuum_ctrl.apps.node_pair import controller_loop
from continuum_ctrl.control.seen_reach import RELAX_SPEED, SeenReach, SETTLE
from continuum_ctrl.params.launch_description import arm_files

DT = 2e-3
#: a target 300 mm off the axis, below the start (m, base frame)
TARGET = np.array([0.3, 0.05, 0.3])


def follow(loop, seconds, t0, stop=None):
    """
    Feed `loop` a plant on its reference for `seconds` from `t0`; `stop`: (joint, lowest).

    Return the time after and the plant's last joints.
    """
    t, q = t0, None
    for _ in range(int(round(seconds / DT))):
        q, qd = loop.q_des.copy(), loop.qd_des.copy()
        if stop is not None:
            k, lowest = stop
            if q[k] < lowest:
                q[k], qd[k] = lowest, 0.0
        loop.set_state(q, qd, t)
        loop.tick(t)
        t += DT
    return t, q


def stopped_move(above):
    """
    Move the shipped task arm's tip to TARGET with the PMA the IK sends lowest stopped `above`
    (m) over where the IK sends it; return (loop, the reference, that PMA, its stop, the
    plant's last joints, the IK's pose without the stop).
    """
    loop = controller_loop(arm_files('continuum_task'), {'reference.type': 'hold'}, check=False)
    q0 = np.full(loop.model.n, 0.013)
    for _ in range(loop.settings.resume_count):
        loop.set_state(q0, np.zeros(loop.model.n), 0.0)
    assert loop.status == 'active'
    t = follow(loop, 0.5, 0.0)[0]
    free = loop.task.to_target(loop.q_des.copy(), TARGET)
    end = free.path.duration + 1.0
    q_free = None
    for s in np.arange(0.0, end, DT):
        q_free = np.array(free.sample(s)[0])
    assert free.tip_error < 1e-6
    k = int(np.argmin(q_free))                      # the joint the IK sends lowest
    lowest = q_free[k] + above
    loop.take_events()
    loop.install(loop.task.to_target(loop.q_des.copy(), TARGET), t)
    reference = loop.reference.reference
    q = follow(loop, end + 2.0, t, stop=(k, lowest))[1]
    return loop, reference, k, lowest, q, q_free


def test_a_joint_the_arm_cannot_move_to_bounds_the_reference_and_the_others_reach_the_tip():
    loop, reference, k, lowest, q, q_free = stopped_move(1.5e-3)
    tip = np.linalg.norm(loop.model.frame_pose(q, 'section3_tip')[:3, 3] - TARGET)
    print(f'{loop.model.joint_names[k]} stopped {lowest * 1e3:.2f} mm, 1.5 mm above the '
          f'IK\'s pose: the plant\'s tip {tip * 1e3:.3f} mm from the target')
    assert tip < 1e-4
    seen = reference.seen
    assert seen.bounded == 1
    assert abs(seen.seen[0, k] - lowest) < 1e-4
    assert loop.q_des[k] >= lowest - 1e-4          # asked for no less than the arm gives
    assert reference.tip_error < 1e-5              # and the other joints reach the target
    moved = np.abs(loop.q_des - q_free)
    assert np.delete(moved, k).max() > 1e-3
    events = [text for level, text in loop.take_events() if level == 'warn']
    name = loop.model.joint_names[k]
    assert any('task space' in text and name in text for text in events), events


def test_a_short_pin_is_not_learnt_and_a_freed_bound_relaxes_at_its_speed_then_goes():
    lower, upper = np.zeros(2), np.full(2, 0.04)
    seen = SeenReach(lower, upper)
    low, high = np.zeros(2), np.full(2, 100.0)
    q, q_des = np.array([0.012, 0.02]), np.array([0.01, 0.02])
    pinned, free = np.array([0.0, 50.0]), np.array([50.0, 50.0])
    t = 0.0
    while t < 0.9 * SETTLE:                          # a fast move's transient: not learnt
        assert seen.watch(t, DT, q, q_des, pinned, low, high) == 0
        t += DT
    seen.watch(t, DT, q, q_des, free, low, high)
    assert seen.bounded == 0 and np.isnan(seen.since).all()
    fresh = [seen.watch(t + j * DT, DT, q, q_des, pinned, low, high)
             for j in range(int(SETTLE / DT) + 2)]
    assert sum(fresh) == 1 and seen.bounded == 1 and seen.seen[0, 0] == q[0]
    bounds = np.zeros((3, 2))
    seen.bound(np.vstack((lower, upper)), bounds)
    assert bounds[0, 0] == q[0] and bounds[0, 1] == 0.0 and np.all(bounds[1] == upper)
    ticks = 250
    for j in range(ticks):
        seen.watch(1.0 + j * DT, DT, q, q_des, free, low, high)
    assert np.isclose(seen.seen[0, 0], q[0] - ticks * DT * RELAX_SPEED * 0.04)
    for j in range(int(q[0] / (RELAX_SPEED * 0.04) / DT) + 2):
        seen.watch(2.0 + j * DT, DT, q, q_des, free, low, high)
    assert seen.bounded == 0 and np.all(np.isinf(seen.seen))


def test_an_unbounded_effort_never_pins():
    seen = SeenReach(np.full(2, -np.inf), np.full(2, np.inf))
    for j in range(int(2 * SETTLE / DT)):
        seen.watch(j * DT, DT, np.ones(2), np.zeros(2), np.full(2, -5.0),
                   np.full(2, -np.inf), np.full(2, np.inf))
    assert seen.bounded == 0


def test_a_joint_held_beyond_the_saturation_guards_error_is_a_disturbance_and_bounds_nothing():
    loop, reference, k, _, q, _ = stopped_move(3.0 * loop_guard_error())
    assert loop.saturation.episodes > 0            # a push's error: the guard's episode
    assert reference.seen.bounded == 0
    assert loop.q_des[k] < q[k]                     # still asked for


def loop_guard_error():
    """Return the shipped task arm's `limits.saturation_error` (m)."""
    return controller_loop(arm_files('continuum_task'), check=False).saturation.error
