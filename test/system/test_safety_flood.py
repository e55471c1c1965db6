"""
Floods of bad messages at a real controller process (Panda, URDF limits), from a
fault-injecting node: hundreds of each kind, thousands in all, interleaved with good ones.

Joint states go in batches of four bad ones and one good one, back to back; the next batch
leaves when the controller's `~/state` shows the good one's values (so every message of the
batch was taken: the subscription keeps the last 5). Trajectories go in bursts of eight bad
ones and a good one, whose goal must become the reference before the next burst (their
subscription keeps the last 10). Then: the node is up, every command it published is finite
and within the URDF effort limits, every good message was used, and the rejection counters in
/diagnostics equal what was sent, kind by kind.
"""

import time

import numpy as np
import pytest
from trajectory_msgs.msg import JointTrajectory

from continuum_ctrl.params.launch_description import config_path, CONTROLLER
from continuum_ctrl.models import load_model
from continuum_ctrl.runtime.controller_runtime import CONTROLLING, DEGRADED
from support.ros_nodes import params_file, running
from support.safety_tools import (joint_state, publish_until, state_publisher, Timeline,
                                  trajectory, wait_diagnostics, wall, within)

#: starts node processes or DDS participants, for more than a few seconds
pytestmark = [pytest.mark.ros, pytest.mark.slow]

#: rounds of bad messages: seven of each round (and flood) are bad, one per kind. A round
#: trip to the controller paces each batch, about 300-500 messages a second here, so this
#: sets the length of the floods (about 10 and 14 s)
COUNT = 500
MODEL = load_model(config_path('panda.yaml'))
NAMES = list(MODEL.joint_names)
LOW, HIGH = MODEL.joint_limits()
MID = (LOW + HIGH) / 2
EFFORT = MODEL.effort_limits()


def bad_states(k):
    """Return the bad joint states of round `k`, by the counter each must raise."""
    q = MID.copy()
    zero = [0.0] * 7
    huge = q.copy()
    huge[0] = 20.0                                     # beyond the limits widened by a span
    return [
        ('names', joint_state(NAMES[:6], q[:6], zero[:6], wall())),          # missing
        ('names', joint_state(NAMES + NAMES[:1], [*q, q[0]], zero + [0.0], wall())),
        ('length', joint_state(NAMES, q[:6], zero, wall())),
        ('nonfinite', joint_state(NAMES, [*q[:6], (np.nan, np.inf)[k % 2]], zero, wall())),
        ('range', joint_state(NAMES, huge, zero, wall()) if k % 2 else
         joint_state(NAMES, q, [2e3] + zero[1:], wall())),
        ('stamp', joint_state(NAMES, q, zero, wall() + 5.0)),                # future
        ('stamp', joint_state(NAMES, q, zero, wall() - 5.0)),                # old
    ]


@pytest.fixture(scope='module')
def controller(tmp_path_factory):
    """The Panda controller alone, holding its first pose; state_timeout 0.5 s."""
    tmp_path = tmp_path_factory.mktemp('flood')
    path = params_file(tmp_path, 'panda.yaml', continuum_controller={
        'state_timeout': 0.5, 'reference': {'type': 'hold', 'blend_time': 0.0}})
    with running(tmp_path, path, with_simulator=False) as (rec, procs):
        yield rec, procs, Timeline(rec), state_publisher(rec)


def test_joint_state_flood(controller):
    """
    3500 bad joint states in 7 kinds, 875 good ones between them.

    The good ones carry a zero stamp (not checked): on a loaded machine a state may arrive
    later than `stamp_tolerance`, and would rightly be refused.
    """
    rec, procs, timeline, pub = controller
    sent = dict.fromkeys(('names', 'length', 'nonfinite', 'range', 'stamp'), 0)
    good = 0
    for _ in range(10):                                # active first: 5 valid in a row
        q = MID + 1e-6 * (good + 1)
        good += 1
        assert publish_until(rec, pub, joint_state(NAMES, q, [0.0] * 7),
                             lambda: timeline.shows(q), procs)
    assert timeline.rows[-1][1] in CONTROLLING
    q0 = q
    start = time.monotonic()
    batch = []
    for k in range(COUNT):
        batch += bad_states(k)
        while len(batch) >= 4 or (k == COUNT - 1 and batch):
            for kind, msg in batch[:4]:
                pub.publish(msg)
                sent[kind] += 1
            del batch[:4]
            q = MID + 1e-6 * (good + 1)
            pub.publish(joint_state(NAMES, q, [0.0] * 7))
            good += 1
            assert rec.wait(lambda: timeline.shows(q), 30.0, procs), f'good state {good} unused'
    elapsed = time.monotonic() - start
    during = [row[1] for row in timeline.rows if row[0] >= timeline.first_seen(q0)]
    assert timeline.rows[-1][1] in CONTROLLING          # the bad ones did not stop control
    assert wait_diagnostics(rec, lambda v: all(v[f'rejected_{k}'] == str(n)
                                               for k, n in sent.items()), 10.0, procs), (
        sent, rec.diagnostics[-1])
    print(f'\nflood: {sum(sent.values())} bad + {good} good joint states in {elapsed:.1f} s '
          f'({(sum(sent.values()) + good) / elapsed:.0f} msg/s); counters {sent}; '
          f'{during.count(DEGRADED) / len(during):.1%} of the ticks reported degraded')
    assert procs[0].poll() is None
    commands = np.array([c for _, c in rec.commands])
    assert len(commands) > 500 and within(commands, -EFFORT, EFFORT)


def bad_trajectories(k):
    """Return bad trajectories of round `k` (each rejected whole)."""
    goal = MID + 0.01
    outside = goal.copy()
    outside[3] = HIGH[3] + 0.1
    return [
        trajectory(NAMES[:6] + ['elbow'], [1.0], [goal]),                      # unknown joint
        trajectory(NAMES[:6], [1.0], [goal[:6]]),                              # missing joint
        trajectory(NAMES, [1.0, 0.5], [goal, goal]),                           # times decrease
        trajectory(NAMES, [1.0, 2.0], [goal, goal[:6]]),                       # sizes differ
        trajectory(NAMES, [1.0], [goal], [[np.nan] * 7]),                      # non-finite
        trajectory(NAMES, [1.0], [outside]),                                   # outside limits
        trajectory(NAMES, [0.0], [goal]),                                      # starts now
    ][k % 7:k % 7 + 1]


def test_trajectory_flood(controller):
    """3500 bad trajectories in 7 kinds, a good one after each eight, which is followed."""
    rec, procs, timeline, pub = controller
    q = MID + 0.002
    msg = joint_state(NAMES, q, [0.0] * 7)             # zero stamp: not checked
    rec.node.create_timer(0.005, lambda: pub.publish(msg))
    # trajectories are taken only while controlling: 5 valid states in a row first
    assert rec.wait(lambda: timeline.shows(q) and timeline.rows[-1][1] in CONTROLLING, 30.0,
                    procs)
    traj_pub = rec.node.create_publisher(JointTrajectory, f'/{CONTROLLER}/joint_trajectory', 10)
    assert rec.wait(lambda: traj_pub.get_subscription_count() > 0, 30.0)
    before = int(rec.diagnostics[-1]['rejected_trajectory']) if rec.diagnostics else 0
    sent = good = 0
    start = time.monotonic()
    for k in range(7 * COUNT):
        traj_pub.publish(bad_trajectories(k)[0])
        sent += 1
        if k % 8 == 7 or k == 7 * COUNT - 1:
            # a good one after eight bad ones; once its goal is the reference, all nine were
            # taken (the subscription keeps the last 10)
            good += 1
            goal = MID + 1e-5 * good
            traj_pub.publish(trajectory(NAMES, [0.02], [goal]))
            assert rec.wait(lambda: np.allclose(timeline.rows[-1][2], goal, rtol=0,
                                                atol=1e-12), 30.0, procs), good
    elapsed = time.monotonic() - start
    assert wait_diagnostics(rec, lambda v: int(v['rejected_trajectory']) - before == sent,
                            20.0, procs), (sent, before, rec.diagnostics[-1])
    print(f'\nflood: {sent} bad trajectories and {good} good ones in {elapsed:.1f} s')
    assert procs[0].poll() is None
    commands = np.array([c for _, c in rec.commands])
    assert within(commands, -EFFORT, EFFORT)
