"""JointState and JointTrajectory conversion: mapping by name, whole-message rejection."""

import numpy as np
import pytest
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from continuum_ctrl.ros.conversion import JointStateReader, Rejected, trajectory_arrays

NAMES = ['a', 'b', 'c']
LOW, HIGH = np.zeros(3), np.full(3, 0.04)


def reader():
    """Return a reader for joints a, b, c limited to [0, 0.04]."""
    return JointStateReader(NAMES, LOW, HIGH)


def test_joint_states_are_mapped_by_name_every_time():
    r = reader()
    q, qd = r.read(JointState(name=['c', 'x', 'a', 'b'], position=[0.03, 9.0, 0.01, 0.02],
                              velocity=[3.0, 0.0, 1.0, 2.0]), 0.0)
    assert np.array_equal(q, [0.01, 0.02, 0.03]) and np.array_equal(qd, [1.0, 2.0, 3.0])
    q, _ = r.read(JointState(name=['b', 'a', 'c'], position=[0.02, 0.01, 0.0]), 0.01)
    assert np.array_equal(q, [0.01, 0.02, 0.0])


@pytest.mark.parametrize('kind, msg', [
    ('foreign', JointState(name=['x'], position=[0.0])),
    ('foreign', JointState(name=['x', 'x'], position=[0.0])),   # not ours, whatever its shape
    ('foreign', JointState()),
    ('names', JointState(name=['a', 'b'], position=[0.0, 0.0])),
    ('names', JointState(name=['a', 'b', 'a'], position=[0.0, 0.0, 0.0])),
    ('length', JointState(name=NAMES, position=[0.0, 0.0])),
    ('length', JointState(name=NAMES, position=[0.0] * 3, velocity=[0.0])),
    ('nonfinite', JointState(name=NAMES, position=[0.0, float('nan'), 0.0])),
    ('nonfinite', JointState(name=NAMES, position=[0.0] * 3, velocity=[0.0, 0.0, np.inf])),
    ('range', JointState(name=NAMES, position=[0.0, 0.09, 0.0])),     # span 0.04 beyond
    ('range', JointState(name=NAMES, position=[0.0] * 3, velocity=[0.0, 2e3, 0.0])),
])
def test_bad_joint_states_are_rejected_whole(kind, msg):
    r = reader()
    r.read(JointState(name=NAMES, position=[0.01, 0.02, 0.03], velocity=[1.0, 2.0, 3.0]), 0.0)
    with pytest.raises(Rejected) as err:
        r.read(msg, 0.1)
    assert err.value.kind == kind
    assert np.array_equal(r.q, [0.01, 0.02, 0.03]) and np.array_equal(r.qd, [1.0, 2.0, 3.0])


def test_missing_velocities_are_left_to_the_loop():
    """No velocities: qd None, the loop differences the positions (control/differencing.py)."""
    r = reader()
    q, qd = r.read(JointState(name=NAMES, position=[0.02, 0.01, 0.03]), 0.0)
    assert qd is None and np.array_equal(q, [0.02, 0.01, 0.03])


def point(t, positions, velocities=()):
    """Return a trajectory point at `t` s."""
    p = JointTrajectoryPoint(positions=positions, velocities=list(velocities))
    p.time_from_start.sec, p.time_from_start.nanosec = int(t), int(round(t % 1 * 1e9))
    return p


def test_trajectory_in_model_order_relative_to_now():
    msg = JointTrajectory(joint_names=['b', 'c', 'a'],
                          points=[point(0.5, [2.0, 3.0, 1.0]), point(1.0, [5.0, 6.0, 4.0])])
    times, positions, velocities, accelerations = trajectory_arrays(msg, NAMES, -0.1)
    assert np.allclose(times, [0.4, 0.9])
    assert np.array_equal(positions, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert velocities is None and accelerations is None


@pytest.mark.parametrize('names, points, offset', [
    (['a', 'b', 'x'], [point(1.0, [0.0] * 3)], 0.0),
    (['a', 'b'], [point(1.0, [0.0] * 2)], 0.0),
    (['a', 'b', 'b'], [point(1.0, [0.0] * 3)], 0.0),
    (NAMES, [], 0.0),
    (NAMES, [point(1.0, [0.0] * 3), point(1.0, [0.0] * 3)], 0.0),
    (NAMES, [point(1.0, [0.0] * 3), point(2.0, [0.0] * 2)], 0.0),
    (NAMES, [point(1.0, [0.0] * 3, [0.0]), point(2.0, [0.0] * 3, [0.0])], 0.0),
    (NAMES, [point(1.0, [0.0, np.nan, 0.0])], 0.0),
    (NAMES, [point(1.0, [0.0] * 3)], -2.0),
    (NAMES, [point(1.0, [0.0] * 3)], 1e5),
])
def test_bad_trajectories_are_rejected(names, points, offset):
    with pytest.raises(Rejected) as err:
        trajectory_arrays(JointTrajectory(joint_names=names, points=points), NAMES, offset)
    assert err.value.kind == 'trajectory'
