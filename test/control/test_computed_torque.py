"""The computed-torque law and its gains: an independent torque, exact linearization, checks."""

from pathlib import Path

import numpy as np
import pytest

from continuum_ctrl.params import ConfigError
from continuum_ctrl.control import ComputedTorqueLaw, computed_torque, validate_gain
from continuum_ctrl.models import load_model

CONFIG = Path(__file__).resolve().parents[2] / 'config'

# printed by an independent implementation of the same law on this arm (run once, with the
# state and gains of the test below), to check this one against
REFERENCE_TAU = [81.82381698832809, 25.257268217091546]


@pytest.fixture(scope='module')
def planar_2r():
    """Return the planar 2R arm of config/planar_2r.yaml."""
    return load_model(CONFIG / 'planar_2r.yaml')


@pytest.fixture(scope='module')
def panda():
    """Return the Panda through Pinocchio."""
    return load_model(CONFIG / 'panda.yaml')


@pytest.mark.parametrize('kp, kd', [
    (np.diag([50.0, 50.0]), np.diag([10.0, 10.0])),
    ([50.0, 50.0], [10.0, 10.0]),
    ([50.0, 0.0, 0.0, 50.0], [10.0, 0.0, 0.0, 10.0]),
])
def test_the_independent_example_torque(planar_2r, kp, kd):
    tau = computed_torque(planar_2r, np.array([0.1, 0.1]), np.zeros(2), np.array([0.5, 0.3]),
                          np.zeros(2), np.zeros(2), kp, kd)
    np.testing.assert_allclose(tau, REFERENCE_TAU, rtol=0, atol=1e-12)


def spd(rng, n):
    """Return a random symmetric positive definite, non-diagonal matrix."""
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


@pytest.mark.parametrize('arm', ['planar_2r', 'panda'])
def test_law_imposes_the_commanded_acceleration(arm, request):
    # tau = M v + (C qd + passive + g) from the separate terms, and the model's own forward
    # dynamics under that tau accelerate exactly by v = qdd_d - Kd edot - Kp e
    model = request.getfixturevalue(arm)
    rng = np.random.default_rng(5)
    n = model.n
    kp, kd = spd(rng, n), rng.uniform(1.0, 20.0, n)
    law = ComputedTorqueLaw(model, kp, kd)
    for _ in range(5):
        q, qd, q_des, qd_des, qdd_des = rng.uniform(-1.0, 1.0, (5, n))
        v = qdd_des - kd * (qd - qd_des) - kp @ (q - q_des)
        tau = law(q, qd, q_des, qd_des, qdd_des)
        bias = (model.coriolis_matrix(q, qd) @ qd + model.passive_forces(q, qd)
                + model.gravity_vector(q))
        np.testing.assert_allclose(tau, model.mass_matrix(q) @ v + bias, rtol=1e-10,
                                   atol=1e-10)
        np.testing.assert_allclose(model.forward_dynamics(q, qd, tau), v, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(
            computed_torque(model, q, qd, q_des, qd_des, qdd_des, kp, kd), tau, rtol=1e-14)


def test_law_results_do_not_alias(panda):
    rng = np.random.default_rng(2)
    law = ComputedTorqueLaw(panda, [100.0] * 7, [20.0] * 7)
    first_args, second_args = rng.uniform(-1, 1, (5, 7)), rng.uniform(-1, 1, (5, 7))
    first = law(*first_args)
    kept = first.copy()
    law(*second_args)
    np.testing.assert_array_equal(first, kept)


def test_set_gains_is_all_or_nothing(planar_2r):
    law = ComputedTorqueLaw(planar_2r, [50.0, 50.0], [10.0, 10.0])
    with pytest.raises(ConfigError, match=r"'gains\.kd'"):
        law.set_gains([80.0, 80.0], [10.0, -1.0])
    np.testing.assert_array_equal(law.kp, [50.0, 50.0])
    law.set_gains(np.diag([80.0, 70.0]), [[4.0, 1.0], [1.0, 3.0]])
    np.testing.assert_array_equal(law.kp, [80.0, 70.0])
    np.testing.assert_array_equal(law.kd, [[4.0, 1.0], [1.0, 3.0]])


def test_gain_forms_accepted():
    np.testing.assert_array_equal(validate_gain([1, 2.5, 3], 3, 'gains.kp'), [1, 2.5, 3])
    matrix = np.array([[2.0, 0.5], [0.5, 1.0]])
    np.testing.assert_array_equal(validate_gain(matrix, 2, 'gains.kp'), matrix)
    np.testing.assert_array_equal(validate_gain(matrix.ravel().tolist(), 2, 'gains.kp'),
                                  matrix)
    diagonal = validate_gain(np.diag([3.0, 4.0]), 2, 'gains.kp')
    assert diagonal.shape == (2,)
    np.testing.assert_array_equal(diagonal, [3.0, 4.0])


@pytest.mark.parametrize('value, problem', [
    ([50.0, -1.0], '> 0'),
    ([50.0, 0.0], '> 0'),
    ([50.0, 50.0, 50.0], 'shape'),
    ([50.0], 'shape'),
    ([[2.0, 1.0], [0.0, 2.0]], 'symmetric'),
    ([[1.0, 2.0], [2.0, 1.0]], 'positive definite'),
    ([[1.0, 1.0], [1.0, 1.0]], 'positive definite'),
    ([1.0, 2.0, 2.0, 1.0], 'positive definite'),
    ([50.0, float('nan')], 'finite'),
    ([[1.0, 0.0], [0.0, float('inf')]], 'finite'),
    ('50', 'positive numbers'),
    (['a', 'b'], 'numbers'),
    ([True, True], 'numbers'),
    (None, 'positive numbers'),
    ([[1.0, 0.0], [0.0]], 'rectangular'),
    ({'a': 1}, 'numbers'),
])
def test_bad_gains_are_rejected_naming_the_key(value, problem):
    with pytest.raises(ConfigError, match=problem) as info:
        validate_gain(value, 2, 'gains.kp')
    assert info.value.key == 'gains.kp'
    assert "parameter 'gains.kp'" in str(info.value)


def test_law_makes_exactly_one_inverse_dynamics_call(panda):
    calls = []

    class Recording:
        """Forward every attribute of the Panda model, recording which methods are called."""

        n = panda.n

        def __getattr__(self, name):
            attribute = getattr(panda, name)
            if not callable(attribute):
                return attribute

            def record(*args):
                calls.append(name)
                return attribute(*args)
            return record

    law = ComputedTorqueLaw(Recording(), [100.0] * 7, [20.0] * 7)
    calls.clear()
    args = np.random.default_rng(1).uniform(-1.0, 1.0, (5, 7))
    np.testing.assert_array_equal(law(*args), ComputedTorqueLaw(panda, [100.0] * 7,
                                                                [20.0] * 7)(*args))
    assert calls == ['inverse_dynamics']
