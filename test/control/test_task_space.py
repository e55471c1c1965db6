"""Task-space references (control/task_space.py), their settings and their messages, no DDS."""

import dataclasses
from pathlib import Path
import warnings

from support.continuum_reference import REFERENCE_ARM
from support.threads import run_interleaved
import numpy as np
import pytest

from continuum_ctrl import load_model
from continuum_ctrl.apps.node_pair import controller_loop
from continuum_ctrl.control.loop import ControlLoop
from continuum_ctrl.control.holding import HoldingRange
from continuum_ctrl.control.settings import ControllerSettings
from continuum_ctrl.control.task_numpy import desired_rotation, NumpyTaskStep
from continuum_ctrl.control.task_space import TaskSettings, TaskSpace
from continuum_ctrl.models.continuum.paths import PATH_ROW
from continuum_ctrl.params import ConfigError, file_parameters
from continuum_ctrl.params.launch_description import arm_files
from continuum_ctrl.ros.conversion import Rejected
from continuum_ctrl.runtime.node_settings import ControllerNodeSettings

CONFIG = Path(__file__).resolve().parents[2] / 'config'
TIP = 'section3_tip'
DT = 2e-3


@pytest.fixture(scope='module')
def task():
    return TaskSpace(load_model(REFERENCE_ARM), TaskSettings(frame=TIP, duration=0.5))


def run(reference, seconds, dt=DT):
    """Sample `reference` every `dt` s; return t, q_d, qd_d, qdd_d and the path's x, xd."""
    t = np.arange(0.0, seconds, dt)
    rows = [tuple(np.array(a) for a in reference.sample(s)) for s in t]
    paths = [reference.path.sample(s) for s in t]
    return (t, *(np.array([r[k] for r in rows]) for k in range(3)),
            np.array([p[0] for p in paths]), np.array([p[1] for p in paths]))


def check_consistent(task, reference, seconds):
    """FK(q_d) = x, J qd_d = xd, finite differences of q_d and qd_d; limits kept."""
    t, q, qd, qdd, x, xd = run(reference, seconds)
    model = task.model
    low, high = model.joint_limits()
    assert np.all(q >= low) and np.all(q <= high)
    for k in range(0, len(t), 25):
        pose, J = model.frame_kinematics(q[k], TIP)
        assert np.allclose(pose[:3, 3], x[k], atol=1e-9)
        assert np.allclose(J[:3] @ qd[k], xd[k], atol=1e-9)
    # central differences err by dt^2/6 times the next derivative (twice it, and a floor)
    jerk = np.max(np.abs(np.diff(qdd, axis=0))) / DT
    snap = np.max(np.abs(np.diff(qdd, 2, axis=0))) / DT ** 2
    fd_v = (q[2:] - q[:-2]) / (2 * DT)
    fd_a = (qd[2:] - qd[:-2]) / (2 * DT)
    assert np.max(np.abs(fd_v - qd[1:-1])) <= DT ** 2 / 3 * jerk + 1e-6 * np.max(np.abs(qd))
    assert np.max(np.abs(fd_a - qdd[1:-1])) <= DT ** 2 / 3 * snap + 1e-6 * np.max(np.abs(qdd))
    return t, q, qd, qdd, x


def test_circle_is_consistent_with_fk(task):
    q0 = np.full(9, 0.013)
    reference = task.circle(q0, 0.03, [0.2, 0.1, 1.0], 0.2)
    assert not reference.clamped
    t, q, qd, qdd, x = check_consistent(task, reference, 4.0)
    assert np.allclose(q[0], q0)
    assert np.allclose(x[0], task.pose(q0)[:3, 3], atol=1e-12)    # starts at the tip


def test_move_and_waypoints_are_consistent_with_fk(task):
    q0 = np.array([0.01, 0.02, 0.015, 0.012, 0.008, 0.01, 0.02, 0.01, 0.013])
    tip = task.pose(q0)[:3, 3]
    move = task.to_target(q0, tip + [0.03, -0.02, -0.01])
    assert not move.clamped
    _, _, qd, _, x = check_consistent(task, move, move.path.duration + 0.2)
    assert np.allclose(x[-1], tip + [0.03, -0.02, -0.01])
    assert np.allclose(qd[-1], 0.0, atol=1e-9)
    points = tip + np.array([[0.01, 0.0, 0.0], [0.01, 0.02, -0.005], [0.0, 0.01, 0.0]])
    check_consistent(task, task.waypoints(q0, [0.5, 1.0, 1.5], points), 1.49)  # C2 inside


def test_limits_are_never_left_and_velocities_stop_at_them(task):
    """A move that drives joints onto their limits: q_d stays inside, qd_d never pushes out."""
    q0 = np.full(9, 0.002)
    reference = task.to_target(q0, task.pose(q0)[:3, 3] + [0.0, 0.0, -0.01])
    t, q, qd, _, _, _ = run(reference, reference.path.duration + 0.1)
    low, high = task.model.joint_limits()
    assert np.all(q >= low) and np.all(q <= high)
    assert np.any(q == low)                                # the move does reach a limit
    assert reference.within(low, high)          # so the loop may skip its clip
    assert not reference.within(low + 1e-4, high)
    assert not np.any((q <= low) & (qd < 0.0)) and not np.any((q >= high) & (qd > 0.0))
    assert np.isfinite(qd).all()


def test_unreachable_target_is_clamped_to_the_closest_point(task):
    q0 = np.full(9, 0.013)
    far = np.array([0.0, 0.0, 0.8])                 # above the fully extended arm (0.72 m)
    reference = task.to_target(q0, far)
    assert reference.clamped
    assert reference.clamp_distance == pytest.approx(0.08, abs=1e-4)
    t, q, _, _, x, _ = run(reference, reference.path.duration + 0.5)
    low, high = task.model.joint_limits()
    assert np.all(q >= low) and np.all(q <= high)
    assert np.allclose(x[-1], [0.0, 0.0, 0.72], atol=1e-4)
    assert np.allclose(task.pose(q[-1])[:3, 3], x[-1], atol=1e-6)


def test_loop_counts_clamped_targets(task):
    tree, spec = file_parameters(arm_files('continuum_task'), 'continuum_controller')
    _, tree = ControllerNodeSettings.split(tree)
    model = load_model(spec)
    loop = ControlLoop(model, ControllerSettings.parse(tree, model), DT)
    for _ in range(loop.settings.resume_count):
        loop.set_state(np.full(9, 0.013), np.zeros(9), 0.0)
    assert loop.status == 'active' and loop.clamped_targets == 0
    loop.install(loop.task.to_target(loop.q, [0.0, 0.0, 0.8]), 0.0)
    assert loop.clamped_targets == 1
    assert any('unreachable' in text for _, text in loop.take_events())
    command = loop.tick(0.1)
    assert np.isfinite(command).all()


def parse(model, **reference):
    tree = {'gains': {'kp': [100.0] * model.n, 'kd': [20.0] * model.n},
            'reference': reference}
    return ControllerSettings.parse(tree, model)


def test_settings_of_tip_references():
    continuum = load_model(REFERENCE_ARM)
    settings = parse(continuum, type='tip_circle', tip_radius=0.03, tip_frequency=0.2)
    assert settings.task.frame == TIP and settings.task.base_frame == 'base'
    assert settings.reference.tip_center is None
    assert np.allclose(settings.reference.tip_normal, [0.0, 0.0, 1.0])
    settings = parse(continuum, type='tip_waypoints', times=[1.0, 2.0],
                     tip_positions=[0.0, 0.0, 0.6, 0.01, 0.0, 0.6])
    assert settings.reference.tip_positions.shape == (2, 3)
    planar = load_model(str(CONFIG / 'planar_2r.yaml'))
    assert parse(planar).task.frame is None                 # no task space, no error
    cases = [
        (continuum, {'type': 'tip_circle', 'tip_frequency': 0.2}, 'reference.tip_radius'),
        (continuum, {'type': 'tip_circle', 'tip_radius': 0.03, 'tip_frequency': 0.2,
                     'tip_normal': [0.0, 0.0, 0.0]}, 'reference.tip_normal'),
        (continuum, {'type': 'tip_waypoints', 'times': [1.0], 'tip_positions': [0.0, 0.1]},
         'reference.tip_positions'),
        (planar, {'type': 'tip_circle', 'tip_radius': 0.03, 'tip_frequency': 0.2},
         'task.frame'),
    ]
    for model, reference, key in cases:
        with pytest.raises(ConfigError) as err:
            parse(model, **reference)
        assert err.value.key == key, err.value
    tree = {'gains': {'kp': [100.0] * 9, 'kd': [20.0] * 9}, 'task': {'frame': 'tip'}}
    with pytest.raises(ConfigError) as err:
        ControllerSettings.parse(tree, continuum)
    assert err.value.key == 'task.frame' and 'section1_tip' in str(err.value)


def test_tip_messages(task):
    from continuum_ctrl.ros.task_messages import read_tip_target, Shape, TipPose
    from geometry_msgs.msg import PoseStamped
    q = np.array([0.01, 0.02, 0.015, 0.012, 0.008, 0.01, 0.02, 0.01, 0.013])
    pose = task.pose(q)
    msg = TipPose('base').fill(pose, 12.5)
    assert msg.header.frame_id == 'base' and msg.header.stamp.sec == 12
    position, rotation = read_tip_target(msg, 'base')      # round trip
    assert np.allclose(position, pose[:3, 3]) and np.allclose(rotation, pose[:3, :3])
    for frame, change, words in (('world', {}, 'frame_id'),
                                 ('base', {'x': float('nan')}, 'non-finite'),
                                 ('base', {'w': 2.0}, 'norm')):
        bad = PoseStamped()
        bad.header.frame_id = frame
        bad.pose.orientation.w = 1.0
        for name, value in change.items():
            target = bad.pose.position if name in 'xyz' else bad.pose.orientation
            setattr(target, name, value)
        with pytest.raises(Rejected) as err:
            read_tip_target(bad, 'base')
        assert err.value.kind == 'tip_target' and words in str(err.value)
    backbone = task.model.backbone(q, 10)
    shape = Shape('base').fill(backbone, backbone + 0.001, pose[:3, 3], 1.0)
    measured, desired, sphere = shape.markers
    assert len(measured.points) == len(desired.points) == 31
    assert np.allclose([[p.x, p.y, p.z] for p in measured.points], backbone)
    assert np.allclose([sphere.pose.position.x, sphere.pose.position.y,
                        sphere.pose.position.z], pose[:3, 3])
    assert Shape('base').fill(backbone, backbone, None, 1.0).markers[2].action == 2  # DELETE


def test_orientation_is_followed_when_weighted():
    """orientation_weight > 0: the tip reaches the target pose; A qd_d = [xd_d; w omega_d]."""
    model = load_model(REFERENCE_ARM)
    task = TaskSpace(model, TaskSettings(frame=TIP, duration=0.5, orientation_weight=0.5))
    q0 = np.array([0.01, 0.02, 0.015, 0.012, 0.008, 0.01, 0.02, 0.01, 0.013])  # bent: rank 6
    goal = model.frame_pose(q0 + 1e-3 * np.array([1.0, -0.5, -0.5, 0.0, 0.5, -0.5, 0.3, 0.0,
                                                  -0.3]), TIP)
    reference = task.to_target(q0, goal[:3, 3], goal[:3, :3])
    assert not reference.clamped
    t = np.arange(0.0, reference.path.duration + 0.1, DT)
    for s in t:
        q, qd, _ = reference.sample(s)
        R, w, _ = desired_rotation(reference.goal, s)
        J = model.frame_jacobian(q, TIP)
        assert np.allclose(J[3:] @ qd, w, atol=1e-8)
        assert np.allclose(J[:3] @ qd, reference.path.sample(s)[1], atol=1e-8)
    final = model.frame_pose(q, TIP)
    assert np.allclose(final[:3, 3], goal[:3, 3], atol=1e-8)
    assert np.allclose(final[:3, :3], goal[:3, :3], atol=1e-8)


def numpy_twin(make):
    """Return two references from `make`: the compiled one and one on the NumPy oracle."""
    compiled, numpy = make(), make()
    assert compiled._step is compiled.task.compiled_step is not None
    assert compiled._path.shape[1] == PATH_ROW
    numpy._step, numpy._path = NumpyTaskStep(numpy.task.model, TIP), numpy.path
    return compiled, numpy


@pytest.mark.parametrize('case', ['circle', 'move', 'waypoints', 'limits', 'orientation',
                                  'holding'])
def test_compiled_sample_equals_the_numpy_sample(task, case):
    """The one-call compiled sample (continuum arms) is TaskReference's NumPy method."""
    q0 = np.array([0.01, 0.02, 0.015, 0.012, 0.008, 0.01, 0.02, 0.01, 0.013])
    tip = task.pose(q0)[:3, 3]
    weighted = TaskSpace(task.model, TaskSettings(frame=TIP, duration=0.5,
                                                  orientation_weight=0.5))
    goal = task.model.frame_pose(q0 + 1e-3 * np.array([1.0, -0.5, -0.5, 0.0, 0.5, -0.5, 0.3,
                                                       0.0, -0.3]), TIP)
    low = np.full(9, 0.002)
    holding = TaskSpace(task.model, TaskSettings(frame=TIP, duration=0.5, holding=HoldingRange(
        (0.0,) * 9, (66.5,) * 9, (0.0,) * 9, 0.1)))       # the pressures' bounds
    make = {
        'circle': lambda: task.circle(np.full(9, 0.013), 0.03, [0.2, 0.1, 1.0], 0.2),
        'move': lambda: task.to_target(q0, tip + [0.03, -0.02, -0.01]),
        'waypoints': lambda: task.waypoints(q0, [0.5, 1.0, 1.5], tip + np.array(
            [[0.01, 0.0, 0.0], [0.01, 0.02, -0.005], [0.0, 0.01, 0.0]])),
        'limits': lambda: task.to_target(low, task.pose(low)[:3, 3] + [0.0, 0.0, -0.01]),
        'orientation': lambda: weighted.to_target(q0, goal[:3, 3], goal[:3, :3]),
        'holding': lambda: holding.to_target(q0, tip + [0.03, -0.02, -0.01]),
    }[case]
    compiled, numpy = numpy_twin(make)
    assert compiled.target is None
    for s in np.arange(0.0, 2.0, DT):
        ours = [np.array(a) for a in compiled.sample(s)]
        theirs = numpy.sample(s)
        for a, b, scale in zip(ours, theirs, (1.0, 1.0, 10.0)):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * scale)
        np.testing.assert_allclose(compiled.target, numpy.target, rtol=0, atol=1e-12)
        assert compiled.tip_error == pytest.approx(numpy.tip_error, abs=1e-12)


def test_only_the_slow_path_warns(task):
    """A task space without a compiled sample says so (RuntimeWarning); a continuum one not."""
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        TaskSpace(task.model, TaskSettings(frame=TIP))
    model = load_model(str(CONFIG / 'panda.yaml'))
    with pytest.warns(RuntimeWarning, match="'panda_hand': RigidModel .* NumPy .*slow path"):
        panda = TaskSpace(model, TaskSettings(frame='panda_hand'))
    assert isinstance(panda.step, NumpyTaskStep)
    with pytest.warns(RuntimeWarning, match="IK step of frame 'panda_hand'.*slow path"):
        panda.ik.step(np.zeros(7), panda.pose(np.zeros(7))[:3, 3])


def test_rigid_arm_follows_a_tip_move_with_exact_derivatives():
    """A URDF arm (Pinocchio, NumPy path): FK(q_d) = x, J qd_d = xd, finite differences."""
    model = load_model(str(CONFIG / 'panda.yaml'))
    with pytest.warns(RuntimeWarning, match='slow path'):
        panda = TaskSpace(model, TaskSettings(frame='panda_hand', duration=0.5))
    assert panda.compiled_step is None
    q0 = np.array([0.0, -0.4, 0.0, -2.0, 0.0, 1.6, 0.8])
    tip = panda.pose(q0)[:3, 3]
    reference = panda.to_target(q0, tip + [0.03, -0.02, 0.02])
    assert not reference.clamped
    t, q, qd, qdd, x, xd = run(reference, reference.path.duration + 0.1)
    for k in range(0, len(t), 25):
        pose, J = model.frame_kinematics(q[k], 'panda_hand')
        assert np.allclose(pose[:3, 3], x[k], atol=1e-9)
        assert np.allclose(J[:3] @ qd[k], xd[k], atol=1e-9)
    fd_a = (qd[2:] - qd[:-2]) / (2 * DT)
    snap = np.max(np.abs(np.diff(qdd, 2, axis=0))) / DT ** 2
    assert np.max(np.abs(fd_a - qdd[1:-1])) <= DT ** 2 / 3 * snap + 1e-6 * np.max(np.abs(qdd))


def test_frame_kinematics_from_threads_stay_consistent(task):
    """The executor, a clamping worker and the loop share one model: no crossed results."""
    model = task.model
    rng = np.random.default_rng(7)
    poses = [rng.uniform(0.0, 0.04, 9) for _ in range(4)]
    expected = [model.frame_kinematics(q, TIP) for q in poses]
    wrong = []

    def hammer(k):
        for _ in range(3000):
            T, J = model.frame_kinematics(poses[k], TIP)
            if not (np.array_equal(T, expected[k][0]) and np.array_equal(J, expected[k][1])):
                wrong.append(k)

    run_interleaved(hammer, range(len(poses)))
    assert not wrong


@pytest.mark.parametrize('sag', [0.0, 0.002])
def test_a_path_the_straight_arm_cannot_follow_is_caught_up_not_jumped_to(sag):
    """
    The shipped task arm, straight with every PMA at `sag`, asked out and down: the tip's
    height falls only as the square of the bend, so the IK lags the path, and the Newton
    step of that near-singular system once jumped the reference 18-25 mm in one sample. Each
    joint now moves at most `task.catch_up` of its range per second, and the move still ends
    on its target.
    """
    loop = controller_loop([CONFIG / 'continuum_3section.yaml', CONFIG / 'continuum_task.yaml'],
                           check=False)
    low, high = loop.model.joint_limits()

    def largest_step(catch_up):
        task = TaskSpace(loop.model, dataclasses.replace(loop.settings.task, catch_up=catch_up))
        q0 = np.full(loop.model.n, sag)
        reference = task.to_target(q0, [0.25, 0.0, task.tip(q0)[2] - 0.05])
        q = np.array([np.array(reference.sample(t)[0]) for t in
                      np.arange(0.0, reference.path.duration + 2.0, DT)])
        return np.max(np.abs(np.diff(q, axis=0)), axis=0), reference.tip_error
    steps, end_error = largest_step(loop.settings.task.catch_up)
    assert np.all(steps <= loop.settings.task.catch_up * (high - low) * DT * (1 + 1e-9))
    assert end_error < 1e-6
    assert largest_step(1e3)[0].max() > 0.01       # unbounded, it jumps: the test can fail
