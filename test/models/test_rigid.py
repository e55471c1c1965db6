"""URDF arms through Pinocchio: physical properties at random states, against Pinocchio itself."""

from pathlib import Path
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from continuum_ctrl import load_model
from continuum_ctrl.models.rigid import resolve_urdf

CONFIG = Path(__file__).resolve().parents[2] / 'config'
PANDA = 'package://example-robot-data/robots/panda_description/urdf/panda.urdf'
UR5 = 'package://ur_description/urdf/ur5_robot.urdf'
ARMS = {
    'panda': str(CONFIG / 'panda.yaml'),
    'ur5': {'type': 'urdf', 'urdf': UR5},
}


@pytest.fixture(scope='module', params=sorted(ARMS))
def arm(request):
    """Return a loaded arm model and a fixed-seed generator of states within its limits."""
    return load_model(ARMS[request.param]), np.random.default_rng(7)


def random_state(model, rng):
    """Return q within the joint limits (or +-pi), and random velocity and acceleration."""
    lower, upper = model.joint_limits()
    lower, upper = np.maximum(lower, -np.pi), np.minimum(upper, np.pi)
    q = rng.uniform(lower, upper)
    return q, rng.uniform(-2.0, 2.0, model.n), rng.uniform(-5.0, 5.0, model.n)


def reference(urdf, locked=()):
    """Return a Pinocchio model and data built here, independently of the package."""
    full = pin.buildModelFromUrdf(str(resolve_urdf(urdf)))
    ids = [full.getJointId(name) for name in locked]
    model = pin.buildReducedModel(full, ids, pin.neutral(full)) if ids else full
    return model, model.createData()


def test_panda_config_selects_the_seven_arm_joints():
    model = load_model(ARMS['panda'])
    assert model.joint_names == [f'panda_joint{i}' for i in range(1, 8)]


def test_mass_matrix_is_symmetric_positive_definite(arm):
    model, rng = arm
    for _ in range(20):
        q, _, _ = random_state(model, rng)
        M = model.mass_matrix(q)
        assert np.array_equal(M, M.T)
        assert np.linalg.eigvalsh(M).min() > 1e-6


def test_mdot_minus_two_c_is_skew_with_finite_difference_mdot(arm):
    model, rng = arm
    h = 1e-6
    for _ in range(10):
        q, qd, _ = random_state(model, rng)
        mdot = (model.mass_matrix(q + h * qd) - model.mass_matrix(q - h * qd)) / (2 * h)
        N = mdot - 2.0 * model.coriolis_matrix(q, qd)
        assert np.abs(N + N.T).max() < 1e-6 * max(1.0, np.abs(N).max())
        assert np.abs(N).max() > 1e-3          # not trivially zero


def test_coriolis_and_gravity_reproduce_rnea_at_zero_acceleration(arm):
    model, rng = arm
    urdf = PANDA if model.n == 7 else UR5
    pmodel, pdata = reference(urdf, ['panda_finger_joint1', 'panda_finger_joint2']
                              if model.n == 7 else ())
    for _ in range(10):
        q, qd, _ = random_state(model, rng)
        expected = pin.rnea(pmodel, pdata, q, qd, np.zeros(model.n))
        got = model.coriolis_matrix(q, qd) @ qd + model.gravity_vector(q)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(model.bias_forces(q, qd), expected, rtol=1e-10, atol=1e-10)


def test_inverse_and_forward_dynamics_invert_each_other(arm):
    model, rng = arm
    for _ in range(10):
        q, qd, qdd = random_state(model, rng)
        tau = model.inverse_dynamics(q, qd, qdd)
        np.testing.assert_allclose(model.forward_dynamics(q, qd, tau), qdd, atol=1e-8)
        tau2 = rng.uniform(-20, 20, model.n)
        np.testing.assert_allclose(
            model.inverse_dynamics(q, qd, model.forward_dynamics(q, qd, tau2)), tau2, atol=1e-8)
        M, C, g = model.mass_matrix(q), model.coriolis_matrix(q, qd), model.gravity_vector(q)
        np.testing.assert_allclose(tau, M @ qdd + C @ qd + g, rtol=1e-10, atol=1e-9)


def test_gravity_is_the_gradient_of_potential_energy(arm):
    model, rng = arm
    h = 1e-6
    for _ in range(5):
        q, qd, _ = random_state(model, rng)
        grad = [(model.potential_energy(q + h * e) - model.potential_energy(q - h * e)) / (2 * h)
                for e in np.eye(model.n)]
        np.testing.assert_allclose(model.gravity_vector(q), grad, atol=1e-6)
        assert model.kinetic_energy(q, qd) == pytest.approx(
            0.5 * qd @ model.mass_matrix(q) @ qd, rel=1e-12)


def test_inverse_dynamics_accepts_lists():
    model = load_model(ARMS['panda'])
    q = np.linspace(-0.5, 0.5, 7)
    np.testing.assert_array_equal(model.inverse_dynamics(list(q), list(q), list(q)),
                                  model.inverse_dynamics(q, q, q))


def test_joint_order_follows_model_joints():
    names = [f'panda_joint{i}' for i in range(1, 8)]
    base = load_model(ARMS['panda'])
    order = [6, 2, 0, 5, 1, 4, 3]
    permuted = load_model({'type': 'urdf', 'urdf': PANDA, 'joints': [names[i] for i in order],
                           'locked_positions': {'panda_finger_joint1': 0.0}})
    assert permuted.joint_names == [names[i] for i in order]
    rng = np.random.default_rng(3)
    q, qd, qdd = random_state(base, rng)
    p = np.array(order)
    np.testing.assert_allclose(permuted.mass_matrix(q[p]), base.mass_matrix(q)[np.ix_(p, p)])
    np.testing.assert_allclose(permuted.coriolis_matrix(q[p], qd[p]),
                               base.coriolis_matrix(q, qd)[np.ix_(p, p)], atol=1e-12)
    np.testing.assert_allclose(permuted.gravity_vector(q[p]), base.gravity_vector(q)[p])
    np.testing.assert_allclose(permuted.inverse_dynamics(q[p], qd[p], qdd[p]),
                               base.inverse_dynamics(q, qd, qdd)[p])
    np.testing.assert_allclose(permuted.forward_dynamics(q[p], qd[p], qdd[p]),
                               base.forward_dynamics(q, qd, qdd)[p])
    np.testing.assert_array_equal(permuted.effort_limits(), base.effort_limits()[p])
    np.testing.assert_array_equal(permuted.joint_limits()[0], base.joint_limits()[0][p])


def test_locked_joints_sit_at_their_locked_positions():
    arm_joints = [f'panda_joint{i}' for i in range(1, 8)]
    fingers = {'panda_finger_joint1': 0.04, 'panda_finger_joint2': 0.01}
    locked = load_model({'type': 'urdf', 'urdf': PANDA, 'joints': arm_joints,
                         'locked_positions': fingers})
    free = load_model({'type': 'urdf', 'urdf': PANDA})
    assert free.joint_names == arm_joints + list(fingers)
    rng = np.random.default_rng(5)
    q, qd, qdd = random_state(locked, rng)
    q9 = np.concatenate([q, list(fingers.values())])
    qd9, qdd9 = np.concatenate([qd, [0, 0]]), np.concatenate([qdd, [0, 0]])
    np.testing.assert_allclose(locked.mass_matrix(q), free.mass_matrix(q9)[:7, :7], atol=1e-12)
    np.testing.assert_allclose(locked.inverse_dynamics(q, qd, qdd),
                               free.inverse_dynamics(q9, qd9, qdd9)[:7], atol=1e-10)
    # the finger position matters: locking elsewhere changes the hand's inertia
    other = load_model({'type': 'urdf', 'urdf': PANDA, 'joints': arm_joints})
    assert np.abs(other.mass_matrix(q) - locked.mass_matrix(q)).max() > 1e-6


def test_gravity_parameter_sets_gravity():
    rng = np.random.default_rng(11)
    base = load_model({'type': 'urdf', 'urdf': UR5})
    q, qd, _ = random_state(base, rng)
    none = load_model({'type': 'urdf', 'urdf': UR5, 'gravity': [0.0, 0.0, 0.0]})
    up = load_model({'type': 'urdf', 'urdf': UR5, 'gravity': [0.0, 0.0, 19.62]})
    np.testing.assert_allclose(none.gravity_vector(q), 0.0, atol=1e-14)
    np.testing.assert_allclose(up.gravity_vector(q), -2.0 * base.gravity_vector(q), atol=1e-10)
    assert np.abs(base.gravity_vector(q)).max() > 1.0


def test_limits_come_from_the_urdf():
    model = load_model(ARMS['panda'])
    root = ET.parse(resolve_urdf(PANDA)).getroot()
    limits = {j.get('name'): j.find('limit') for j in root.iter('joint')}
    lower, upper = model.joint_limits()
    for i, name in enumerate(model.joint_names):
        assert lower[i] == float(limits[name].get('lower'))
        assert upper[i] == float(limits[name].get('upper'))
        assert model.effort_limits()[i] == float(limits[name].get('effort'))


def test_urdf_without_limits_reports_unbounded():
    urdf = 'package://double_pendulum_description/urdf/double_pendulum.urdf'
    pendulum = load_model({'type': 'urdf', 'urdf': urdf})
    lower, upper = pendulum.joint_limits()
    assert np.all(lower == -np.inf) and np.all(upper == np.inf)
    assert np.all(pendulum.effort_limits() == np.inf)


def test_urdf_uri_forms_resolve(tmp_path, monkeypatch):
    source = resolve_urdf('package://double_pendulum_description/urdf/double_pendulum.urdf')
    target = tmp_path / 'my_robot' / 'urdf' / 'arm.urdf'
    target.parent.mkdir(parents=True)
    shutil.copy(source, target)
    monkeypatch.setenv('ROS_PACKAGE_PATH', str(tmp_path))
    assert resolve_urdf('package://my_robot/urdf/arm.urdf') == target
    assert resolve_urdf(f'file://{target}') == target
    monkeypatch.chdir(tmp_path)
    model = load_model({'type': 'urdf', 'urdf': 'my_robot/urdf/arm.urdf'})
    assert model.joint_names == ['joint1', 'joint2']
    assert resolve_urdf(PANDA) == resolve_urdf('package://panda_description/urdf/panda.urdf')
