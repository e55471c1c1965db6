"""Frame Jacobian time derivatives (``Jdot``) of every model and the compiled continuum IK step."""

from pathlib import Path

from support.continuum_reference import REFERENCE_ARM, SECOND_ARM
import numpy as np
import pytest

from continuum_ctrl import load_model
from continuum_ctrl.control.ik import InverseKinematics

CONFIG = Path(__file__).resolve().parents[2] / 'config'


def difference_derivative(model, q, qd, frame, dt=1e-6):
    """Central difference of ``J(q + qd t)`` at t = 0: ``Jdot``, (6, n)."""
    ahead = model.frame_jacobian(q + dt * qd, frame)
    behind = model.frame_jacobian(q - dt * qd, frame)
    return (ahead - behind) / (2.0 * dt)


@pytest.mark.parametrize('frame', ['section1_tip', 'section2_tip', 'section3_tip'])
@pytest.mark.parametrize('bend', [0.03, 1e-7, 0.0])
def test_continuum_jacobian_derivative_against_differences(frame, bend):
    """Bent, near-straight and straight poses (bend 0: every section straight)."""
    model = load_model(SECOND_ARM)
    rng = np.random.default_rng(1)
    for _ in range(3):
        q = 0.01 + bend * rng.uniform(-0.5, 0.5, 9)
        qd = rng.normal(size=9) * 0.05
        Jdot = model.frame_jacobian_derivative(q, qd, frame)
        reference = difference_derivative(model, q, qd, frame)
        assert Jdot.shape == (6, 9) and np.abs(reference).max() > 1e-4
        np.testing.assert_allclose(Jdot, reference, rtol=0,
                                   atol=1e-7 * np.abs(reference).max())


def test_continuum_jacobian_derivative_is_smooth_through_the_straight_pose():
    """On a line through the straight pose, Jdot is locally linear: no jump, no blow-up."""
    model = load_model(SECOND_ARM)
    rng = np.random.default_rng(4)
    direction, qd = rng.normal(size=9), rng.normal(size=9) * 0.05
    direction -= direction.reshape(3, 3).mean(axis=1).repeat(3)     # bends, no extension
    values = [model.frame_jacobian_derivative(0.01 + s * direction, qd, 'section3_tip')
              for s in np.linspace(-1e-6, 1e-6, 21)]
    first, second = np.diff(values, axis=0), np.diff(values, 2, axis=0)
    assert np.all(np.isfinite(values)) and np.abs(first).max() > 0.0
    assert np.abs(second).max() <= 1e-3 * np.abs(first).max()       # locally linear


def test_continuum_jacobian_derivative_gives_the_tip_acceleration():
    """``J qdd + Jdot qd`` is the second difference of the tip position along a path."""
    model = load_model(SECOND_ARM)
    rng = np.random.default_rng(2)
    q, qd, qdd = rng.uniform(0.0, 0.03, 9), rng.normal(size=9) * 0.05, rng.normal(size=9) * 0.1
    h = 1e-4

    def tip(t):
        return model.frame_pose(q + qd * t + 0.5 * qdd * t * t, 'section3_tip')[:3, 3]

    acceleration = (tip(h) - 2.0 * tip(0.0) + tip(-h)) / (h * h)
    predicted = (model.frame_jacobian(q, 'section3_tip') @ qdd
                 + model.frame_jacobian_derivative(q, qd, 'section3_tip') @ qd)[:3]
    np.testing.assert_allclose(predicted, acceleration, atol=1e-5 * np.abs(acceleration).max())


def test_rigid_jacobian_derivative_against_differences_and_pinocchio():
    """Pinocchio's Jdot: finite differences, and ``Jdot qd`` its classical acceleration."""
    import pinocchio as pin
    model = load_model(str(CONFIG / 'panda.yaml'))
    rng = np.random.default_rng(3)
    lower, upper = model.joint_limits()
    for frame in ('panda_hand', 'panda_link4'):
        q = rng.uniform(np.maximum(lower, -2.0), np.minimum(upper, 2.0))
        qd = rng.normal(size=model.n)
        Jdot = model.frame_jacobian_derivative(q, qd, frame)
        reference = difference_derivative(model, q, qd, frame)
        np.testing.assert_allclose(Jdot, reference, atol=1e-6 * np.abs(reference).max())
        pin.forwardKinematics(model.model, model.data, q, qd, np.zeros(model.n))
        classical = pin.getFrameClassicalAcceleration(
            model.model, model.data, model.model.getFrameId(frame), pin.LOCAL_WORLD_ALIGNED)
        np.testing.assert_allclose(Jdot @ qd, classical.vector, atol=1e-9)


def test_jacobian_derivative_of_unknown_frames_and_frameless_models_is_one_clear_error():
    from continuum_ctrl.models.base import FrameError
    with pytest.raises(FrameError, match='unknown frame'):
        load_model(REFERENCE_ARM).frame_jacobian_derivative(np.zeros(9), np.zeros(9), 'nope')
    with pytest.raises(FrameError, match='unknown frame'):
        load_model(str(CONFIG / 'panda.yaml')).frame_jacobian_derivative(
            np.zeros(7), np.zeros(7), 'nope')
    with pytest.raises(FrameError, match='has no frames'):
        planar = load_model(str(CONFIG / 'planar_2r.yaml'))
        planar.frame_jacobian_derivative([0, 0], [0, 0], 'tip')


@pytest.mark.parametrize('weight', [0.0, 0.05])
def test_compiled_ik_step_equals_the_numpy_step(weight):
    model = load_model(SECOND_ARM)
    ik = InverseKinematics(model, 'section3_tip', orientation_weight=weight)
    assert model.compiled_ik_step('section3_tip') is not None
    rng = np.random.default_rng(5)
    lmax = ik.upper
    limited = 0
    for k in range(200):
        q = rng.uniform(-0.2 * lmax, 1.2 * lmax)          # some start outside the limits
        goal = model.frame_pose(rng.uniform(0.0, lmax), 'section3_tip')
        position = goal[:3, 3] + rng.normal(size=3) * (0.05 if k % 2 else 1e-3)
        rotation = goal[:3, :3] if k % 3 else None
        compiled = ik.step(q, position, rotation)
        reference = ik.numpy_step(q, position, rotation)
        limited += int(np.any((reference == 0.0) | (reference == lmax)))
        np.testing.assert_allclose(compiled, reference, rtol=0, atol=1e-12)
    assert limited > 20                                  # the active set was exercised


def test_solve_by_compiled_steps_follows_the_numpy_descent():
    """
    Position targets: the same descent as NumPy's, to rounding where it converges; out of
    reach, where 9 descents of 200 steps creep along the boundary, the same distance to 1 %.
    """
    model = load_model(SECOND_ARM)
    compiled, numpy = (InverseKinematics(model, 'section3_tip') for _ in range(2))
    numpy._compiled = None                              # its `_step`, the oracle
    rng = np.random.default_rng(7)
    for k in range(12):
        q0 = rng.uniform(compiled.lower, compiled.upper)
        tip = model.frame_pose(rng.uniform(compiled.lower, compiled.upper), 'section3_tip')
        angle = rng.uniform(0.0, 2.0 * np.pi)             # every third 1 m aside: beyond
        position = tip[:3, 3] + (0.0 if k % 3 else 1.0) * np.array([np.cos(angle),
                                                                    np.sin(angle), 0.0])
        a, b = compiled.solve(position, q0=q0), numpy.solve(position, q0=q0)
        assert a.converged == b.converged == bool(k % 3)
        if a.converged:
            np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-9)
        else:
            assert a.position_error == pytest.approx(b.position_error, rel=0.01)


def test_compiled_ik_step_rejects_a_wrong_length_q():
    ik = InverseKinematics(load_model(REFERENCE_ARM), 'section3_tip')
    with pytest.raises(ValueError, match='shape'):
        ik.step(np.zeros(4), [0.0, 0.0, 0.5])


def test_compiled_log3_equals_pinocchio():
    import pinocchio as pin
    from continuum_ctrl.numerics.so3 import log3
    rng = np.random.default_rng(6)
    w = np.empty(3)
    for angle in (0.0, 1e-9, 1e-5, 0.3, 2.0, np.pi - 1e-3, np.pi - 1e-6, np.pi):
        for _ in range(20):
            axis = rng.normal(size=3)
            R = pin.exp3(angle * axis / np.linalg.norm(axis))
            log3(R, w)
            np.testing.assert_allclose(pin.exp3(w), R, atol=1e-12)
            if angle < 3.0:
                np.testing.assert_allclose(w, pin.log3(R), atol=1e-12)


def test_compiled_exp3_and_cholesky_solve_equal_pinocchio_and_numpy():
    import pinocchio as pin
    from continuum_ctrl.numerics.cholesky import cholesky_solve
    from continuum_ctrl.numerics.so3 import exp3
    rng = np.random.default_rng(7)
    R = np.empty((3, 3))
    for angle in (0.0, 1e-6, 1e-3, 0.3, 2.0, np.pi):
        for _ in range(20):
            axis = rng.normal(size=3)
            w = angle * axis / np.linalg.norm(axis)
            exp3(w, R)
            np.testing.assert_allclose(R, pin.exp3(w), rtol=0, atol=1e-14)
    for m in (1, 3, 6):
        A = rng.normal(size=(m, 9))
        H, b = np.zeros((6, 6)), rng.normal(size=m)
        H[:m, :m] = A @ A.T + 1e-3 * np.eye(m)
        expected = np.linalg.solve(H[:m, :m], b)
        y = np.concatenate((b, np.zeros(6 - m)))
        cholesky_solve(H, y, m)
        np.testing.assert_allclose(y[:m], expected, rtol=1e-12, atol=1e-12)
