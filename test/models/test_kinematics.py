"""Frame kinematics of every model (poses, Jacobians, backbone) and damped least-squares IK."""

from pathlib import Path

from support.continuum_reference import disc_transform, filled, REFERENCE_ARM, SECOND_ARM, vee
import numpy as np
import pinocchio as pin
import pytest

from continuum_ctrl import load_model
from continuum_ctrl.control.ik import InverseKinematics
from continuum_ctrl.models.base import FrameError
from continuum_ctrl.models.rigid import resolve_urdf

CONFIG = Path(__file__).resolve().parents[2] / 'config'
PANDA = 'package://example-robot-data/robots/panda_description/urdf/panda.urdf'
TIP = 'section3_tip'


def poses(lmax=0.03):
    """Bent, straight and near-straight (1e-4 rad and 1e-7 rad from straight) joint vectors."""
    rng = np.random.default_rng(4)
    bent = rng.uniform(0.0, lmax, 9)
    straight = np.full(9, 0.01)
    near = straight + 1e-4 * 0.013 * np.tile([1.0, -0.5, -0.5], 3)
    nearer = straight + 1e-7 * 0.013 * np.tile([0.3, -0.8, 0.5], 3)
    return {'bent': bent, 'straight': straight, 'near': near, 'nearer': nearer}


def straight_transform(sections, q, i):
    """World pose of section i's tip when every section is straight (equal PMA lengths)."""
    T = np.eye(4)
    for j in range(i + 1):
        c, s = np.cos(sections['twist'][j]), np.sin(sections['twist'][j])
        step = np.eye(4)
        step[:2, :2] = [[c, -s], [s, c]]
        step[2, 3] = sections['offset'][j]
        arc = np.eye(4)
        arc[2, 3] = sections['length'][j] + q[3 * j]
        T = T @ step @ arc
    return T


@pytest.mark.parametrize('name', ['bent', 'straight', 'near', 'nearer'])
def test_continuum_tip_poses_against_the_arc_form(name):
    model = load_model(SECOND_ARM)
    sections = filled(SECOND_ARM)
    q = poses()[name]
    for i in range(3):
        T = model.frame_pose(q, f'section{i + 1}_tip')
        if name == 'straight':
            reference = straight_transform(sections, q, i)
            tol = 1e-15
        else:
            reference = disc_transform(sections, q, i, 1.0)
            tol = 1e-12 if name == 'bent' else 1e-6    # the arc form loses digits near straight
        assert np.allclose(T, reference, rtol=0, atol=tol), (name, i)


@pytest.mark.parametrize('name', ['bent', 'straight', 'near', 'nearer'])
def test_continuum_jacobians_against_central_differences(name):
    model = load_model(SECOND_ARM)
    q = poses()[name]
    h = 1e-7
    for frame in model.frame_names():
        J = model.frame_jacobian(q, frame)
        R = model.frame_pose(q, frame)[:3, :3]
        assert np.isfinite(J).all()
        for k in range(model.n):
            e = np.zeros(model.n)
            e[k] = h
            Tp, Tm = model.frame_pose(q + e, frame), model.frame_pose(q - e, frame)
            linear = (Tp[:3, 3] - Tm[:3, 3]) / (2 * h)
            angular = vee((Tp[:3, :3] - Tm[:3, :3]) / (2 * h) @ R.T)
            assert np.allclose(J[:3, k], linear, rtol=0, atol=1e-7), (name, frame, k)
            assert np.allclose(J[3:, k], angular, rtol=0, atol=1e-5), (name, frame, k)


def test_continuum_frames_and_backbone():
    model = load_model(SECOND_ARM)
    assert model.frame_names() == ['section1_tip', 'section2_tip', 'section3_tip']
    q = poses()['bent']
    points = model.backbone(q, 5)
    assert points.shape == (16, 3) and np.isfinite(points).all()
    assert np.array_equal(points[0], np.zeros(3))
    sections = filled(SECOND_ARM)
    for i in range(3):
        assert np.allclose(points[5 * (i + 1)], model.frame_pose(q, f'section{i + 1}_tip')[:3, 3],
                           rtol=0, atol=1e-15)
        assert np.allclose(points[5 * i + 3], disc_transform(sections, q, i, 0.6)[:3, 3],
                           rtol=0, atol=1e-12)
    # the frames at the pieces' middles (xi = 0.1, 0.3, ...): the arc form's discs
    middles, frames = model.backbone_frames(q, 5)
    assert middles.shape == (15, 3) and frames.shape == (15, 3, 3)
    for i in range(3):
        disc = disc_transform(sections, q, i, 0.3)
        assert np.allclose(middles[5 * i + 1], disc[:3, 3], rtol=0, atol=1e-12)
        assert np.allclose(frames[5 * i + 1], disc[:3, :3], rtol=0, atol=1e-12)
    assert np.abs(model.frame_jacobian(q, 'section1_tip')[:, 3:]).max() == 0.0


def test_rigid_frames_equal_pinocchio():
    model = load_model(str(CONFIG / 'panda.yaml'))
    full = pin.buildModelFromUrdf(str(resolve_urdf(PANDA)))
    locked = [full.getJointId(n) for n in ('panda_finger_joint1', 'panda_finger_joint2')]
    reference = pin.buildReducedModel(full, locked, pin.neutral(full))
    data = reference.createData()
    assert set(model.frame_names()) == {f.name for f in reference.frames}
    rng = np.random.default_rng(5)
    lower, upper = model.joint_limits()
    for _ in range(5):
        q = rng.uniform(lower, upper)
        pin.framesForwardKinematics(reference, data, q)
        for frame in ('panda_link7', 'panda_hand', 'panda_joint4'):
            fid = reference.getFrameId(frame)
            assert np.allclose(model.frame_pose(q, frame), data.oMf[fid].homogeneous,
                               rtol=0, atol=1e-12)
            J = pin.computeFrameJacobian(reference, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
            assert np.allclose(model.frame_jacobian(q, frame), J, rtol=0, atol=1e-12)
            T, Jk = model.frame_kinematics(q, frame)
            assert np.allclose(T, data.oMf[fid].homogeneous, rtol=0, atol=1e-12)
            assert np.allclose(Jk, J, rtol=0, atol=1e-12)


def test_models_without_frames_and_unknown_frames_give_one_clear_error():
    symbolic = load_model(str(CONFIG / 'planar_2r.yaml'))
    assert symbolic.frame_names() == []
    with pytest.raises(FrameError, match="frame 'tip': a SymbolicModel has no frames"):
        symbolic.frame_pose(np.zeros(2), 'tip')
    with pytest.raises(FrameError, match='no frames'):
        symbolic.frame_jacobian(np.zeros(2), 'tip')
    continuum = load_model(REFERENCE_ARM)
    with pytest.raises(FrameError, match="unknown frame 'section4_tip'; frames: section1_tip"):
        continuum.frame_pose(np.zeros(9), 'section4_tip')
    with pytest.raises(FrameError, match='unknown frame'):
        InverseKinematics(continuum, 'tip')


def within(ik, q):
    """Return whether q is finite and within the IK's joint limits."""
    return np.isfinite(q).all() and (q >= ik.lower).all() and (q <= ik.upper).all()


@pytest.mark.slow
def test_ik_converges_on_1000_random_reachable_targets():
    model = load_model(REFERENCE_ARM)
    ik = InverseKinematics(model, TIP)
    rng = np.random.default_rng(6)
    for _ in range(1000):
        target = model.frame_pose(rng.uniform(ik.lower, ik.upper), TIP)[:3, 3]
        result = ik.solve(target)
        assert result.converged and result.position_error <= 1e-6, target
        assert within(ik, result.q)
        reached = model.frame_pose(result.q, TIP)[:3, 3]
        assert np.linalg.norm(reached - target) <= 1e-6


def test_ik_with_orientation_reaches_the_pose():
    model = load_model(SECOND_ARM)
    ik = InverseKinematics(model, TIP, orientation_weight=0.1)
    rng = np.random.default_rng(8)
    for _ in range(20):
        T = model.frame_pose(rng.uniform(ik.lower, ik.upper), TIP)
        result = ik.solve(T[:3, 3], T[:3, :3])
        assert result.converged and within(ik, result.q)
        assert result.rotation_error <= 1e-6
        reached = model.frame_pose(result.q, TIP)
        assert np.linalg.norm(pin.log3(T[:3, :3] @ reached[:3, :3].T)) <= 1e-6


def test_ik_on_unreachable_targets_returns_the_closest_reachable_pose():
    model = load_model(REFERENCE_ARM)
    ik = InverseKinematics(model, TIP)
    far_up = ik.solve([0.0, 0.0, 2.0])              # closest: all PMAs fully extended
    assert not far_up.converged and within(ik, far_up.q)
    assert np.allclose(far_up.q, ik.upper, rtol=0, atol=1e-9)
    assert far_up.position_error == pytest.approx(2.0 - 3 * (0.2 + 0.04), abs=1e-9)
    rng = np.random.default_rng(9)
    samples = np.array([model.frame_pose(rng.uniform(ik.lower, ik.upper), TIP)[:3, 3]
                        for _ in range(3000)])
    for target in ([0.5, 0.0, 0.3], [0.0, -0.3, 0.75], [0.05, 0.05, 0.3]):
        result = ik.solve(target)
        assert within(ik, result.q)
        reached = model.frame_pose(result.q, TIP)[:3, 3]
        assert result.position_error == pytest.approx(np.linalg.norm(reached - target))
        closest_sample = np.linalg.norm(samples - target, axis=1).min()
        assert result.position_error <= closest_sample + 1e-9, target


def test_ik_steps_never_leave_the_limits_and_track_a_moving_target():
    model = load_model(REFERENCE_ARM)
    ik = InverseKinematics(model, TIP)
    rng = np.random.default_rng(10)
    q = ik.solve(model.frame_pose(rng.uniform(ik.lower, ik.upper), TIP)[:3, 3]).q
    centre = model.frame_pose(q, TIP)[:3, 3]
    for k in range(500):                            # a 2 cm circle at 0.5 Hz, 500 Hz ticks
        a = 2 * np.pi * 0.5 * k / 500.0
        target = centre + 0.02 * np.array([np.cos(a) - 1.0, np.sin(a), 0.0])
        step = ik.step(q, target)                   # compiled, held to the NumPy oracle
        np.testing.assert_allclose(step, ik.numpy_step(q, target), rtol=0, atol=1e-12)
        q = step
        assert within(ik, q)
    assert np.linalg.norm(model.frame_pose(q, TIP)[:3, 3] - target) <= 1e-4
    for wild in ([5.0, -3.0, -2.0], [0.0, 0.0, 0.0], [1e3, 1e3, 1e3]):
        step = ik.step(q, wild)
        np.testing.assert_allclose(step, ik.numpy_step(q, wild), rtol=0, atol=1e-12)
        q = step
        assert within(ik, q)
    with pytest.raises(ValueError, match='3 finite numbers'):
        ik.step(q, [np.nan, 0.0, 0.3])
