"""Fixed-step integrators: observed convergence order against a tight adaptive reference."""

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from support.motion_range import motion_range
from continuum_ctrl.models import load_model
from continuum_ctrl.models.integrators import (implicit_damping_euler_step,
                                               implicit_damping_euler_stepper, INTEGRATORS,
                                               rk4_step, semi_implicit_euler_step)

CONFIG = Path(__file__).resolve().parents[2] / 'config'
HORIZON = 0.3  # s


@pytest.fixture(scope='module', params=['planar_2r', 'panda'])
def arm(request):
    """Return a model and an initial state, a constant force and a feedback force law."""
    model = load_model(CONFIG / f'{request.param}.yaml')
    rng = np.random.default_rng(11)
    q0 = motion_range(model)[0]
    qd0 = rng.uniform(-1.0, 1.0, model.n)
    tau = model.gravity_vector(q0) + rng.uniform(-1.0, 1.0, model.n)

    def feedback(t, q, qd):
        return tau * np.cos(3.0 * t) - 5.0 * (q - q0) - qd

    return model, q0, qd0, tau, feedback


def exact(model, q0, qd0, force):
    """Return the state at HORIZON from an adaptive 8th-order solve with tolerance 1e-12."""
    n = model.n

    def rhs(t, x):
        return np.r_[x[n:], model.forward_dynamics(x[:n], x[n:], force(t, x[:n], x[n:]))]

    sol = solve_ivp(rhs, (0.0, HORIZON), np.r_[q0, qd0], method='DOP853', rtol=1e-12,
                    atol=1e-12)
    return sol.y[:, -1]


def observed_orders(step, model, q0, qd0, tau, steps):
    """Return log2 of successive error ratios when halving the step, and the errors."""
    force = tau if callable(tau) else (lambda t, q, qd: tau)
    reference = exact(model, q0, qd0, force)
    errors = []
    for count in steps:
        dt = HORIZON / count
        q, qd = q0, qd0
        for k in range(count):
            q, qd = step(model, q, qd, tau, dt, k * dt)
        errors.append(np.max(np.abs(np.r_[q, qd] - reference)))
    errors = np.array(errors)
    return np.log2(errors[:-1] / errors[1:]), errors


def test_rk4_is_fourth_order(arm):
    model, q0, qd0, tau, _ = arm
    orders, errors = observed_orders(rk4_step, model, q0, qd0, tau, [30, 60, 120])
    assert np.all((orders > 3.6) & (orders < 4.5)), (orders, errors)


def test_rk4_is_fourth_order_with_state_and_time_dependent_force(arm):
    model, q0, qd0, _, feedback = arm
    orders, errors = observed_orders(rk4_step, model, q0, qd0, feedback, [60, 120, 240])
    assert np.all((orders > 3.6) & (orders < 4.5)), (orders, errors)


def test_semi_implicit_euler_is_first_order(arm):
    model, q0, qd0, tau, _ = arm
    orders, errors = observed_orders(semi_implicit_euler_step, model, q0, qd0, tau,
                                     [150, 300, 600])
    assert np.all((orders > 0.85) & (orders < 1.2)), (orders, errors)


def explicit_euler_step(model, q, qd, tau, dt, t=0.0):
    """Take one explicit Euler step: the non-symplectic contrast."""
    return q + dt * qd, qd + dt * model.forward_dynamics(q, qd, tau)


def energy_error_per_quarter(step):
    """Return the worst energy error (J) in each quarter of a 4 s free swing of the 2R."""
    model = load_model(CONFIG / 'planar_2r.yaml')
    q, qd, dt = np.array([-np.pi / 2 + 0.3, -0.2]), np.zeros(2), 2e-3  # hanging, released
    zero = np.zeros(2)
    energy0 = model.kinetic_energy(q, qd) + model.potential_energy(q)
    worst = []
    for _ in range(4):
        worst.append(0.0)
        for _ in range(500):
            q, qd = step(model, q, qd, zero, dt)
            energy = model.kinetic_energy(q, qd) + model.potential_energy(q)
            worst[-1] = max(worst[-1], abs(energy - energy0))
    return np.array(worst), energy0 - model.potential_energy([-np.pi / 2, 0.0])


@pytest.mark.slow
def test_semi_implicit_euler_keeps_energy_bounded():
    # symplectic Euler's energy error oscillates at O(dt) without drift; explicit Euler, with
    # the same step and cost, gains energy steadily
    symplectic, swing = energy_error_per_quarter(semi_implicit_euler_step)
    explicit, _ = energy_error_per_quarter(explicit_euler_step)
    assert symplectic.max() < 0.01 * swing, symplectic
    assert symplectic[-1] < 1.5 * symplectic[0], symplectic
    assert explicit[-1] > 3.0 * explicit[0] and explicit[-1] > 10 * symplectic.max(), explicit


def test_integrator_names():
    assert INTEGRATORS == {'rk4': rk4_step, 'semi_implicit_euler': semi_implicit_euler_step,
                           'implicit_damping_euler': implicit_damping_euler_step}


@pytest.mark.parametrize('name', sorted(INTEGRATORS))
def test_every_integrator_takes_a_force_callable_of_time_and_state(name):
    """The contract: `tau` is an array held over the step or a callable ``tau(t, q, qd)``."""
    step = INTEGRATORS[name]
    model = load_model(CONFIG / 'planar_2r.yaml')
    q, qd, held = np.array([0.3, -0.2]), np.array([0.1, 0.4]), np.array([1.5, -0.7])
    calls = []

    def force(t, q_now, qd_now):
        calls.append(t)
        return held - 2.0 * q_now - 0.5 * qd_now

    as_array = step(model, q, qd, held - 2.0 * q - 0.5 * qd, 1e-3, t=2.0)
    as_callable = step(model, q, qd, force, 1e-3, t=2.0)
    assert calls and calls[0] == 2.0 and all(2.0 <= t <= 2.0 + 1e-3 for t in calls)
    if len(calls) == 1:                 # one evaluation, at the start: the same step exactly
        assert all(np.array_equal(a, b) for a, b in zip(as_array, as_callable))
    else:                               # RK4 samples the force at its four stages
        assert np.allclose(calls, [2.0, 2.0005, 2.0005, 2.001], rtol=0.0, atol=1e-12)


@pytest.mark.parametrize('config, compiled', [('continuum_3section', True),
                                              ('planar_2r', False)])
def test_stepper_runs_the_implicit_damping_step_in_a_row(config, compiled):
    """One compiled call where the model has one (the CoG model), the step in a loop else."""
    model = load_model(CONFIG / f'{config}.yaml')
    assert (model.compiled_damped_steps() is not None) == compiled
    rng = np.random.default_rng(5)
    center, amplitude = motion_range(model)
    q = center + rng.uniform(-1.0, 1.0, model.n) * amplitude
    qd = rng.uniform(-0.2, 0.2, model.n)
    forces = model.gravity_vector(q) + rng.uniform(-5.0, 5.0, (7, model.n))
    expected_q, expected_qd = q, qd
    for force in forces:
        expected_q, expected_qd = implicit_damping_euler_step(model, expected_q, expected_qd,
                                                              force, 1e-3)
    got_q, got_qd = implicit_damping_euler_stepper(model)(q, qd, forces, 1e-3)
    assert np.allclose(got_q, expected_q, rtol=1e-12, atol=1e-15)
    assert np.allclose(got_qd, expected_qd, rtol=1e-10, atol=1e-13)
    assert not np.allclose(got_qd, qd, rtol=1e-3)      # the forces moved the arm


def moving(config, seed, steps):
    """Return the model of `config` and a random state in its motion range, `steps` forces."""
    model = load_model(CONFIG / f'{config}.yaml')
    rng = np.random.default_rng(seed)
    center, amplitude = motion_range(model)
    q = center + rng.uniform(-1.0, 1.0, model.n) * amplitude
    qd = rng.uniform(-0.2, 0.2, model.n)
    return model, q, qd, model.gravity_vector(q) + rng.uniform(-5.0, 5.0, (steps, model.n))


def held_steps(model, q, qd, forces, dt, hold):
    """The steps with M, g and C qd held over `hold` steps, from the model's public terms."""
    for k, force in enumerate(forces):
        if k % hold == 0:
            M = model.mass_matrix(q) + dt * model.damping_matrix(q)
            rigid = model.coriolis_matrix(q, qd) @ qd + model.gravity_vector(q)
        qd = qd + np.linalg.solve(M, dt * (force - rigid - model.passive_forces(q, qd)))
        q = q + dt * qd
    return q, qd


@pytest.mark.parametrize('config', ['continuum_3section', 'planar_2r'])
def test_stepper_holds_the_inertial_terms_over_hold_steps(config):
    """``hold`` steps share one M, g and C qd; the passive forces follow every step."""
    model, q, qd, forces = moving(config, 6, 9)
    steps = implicit_damping_euler_stepper(model)
    exact = steps(q, qd, forces, 1e-3)
    for hold in (2, 4, 9, 20):
        got = steps(q, qd, forces, 1e-3, hold)
        expected = held_steps(model, q, qd, forces, 1e-3, hold)
        assert np.allclose(got[0], expected[0], rtol=1e-12, atol=1e-15)
        assert np.allclose(got[1], expected[1], rtol=1e-10, atol=1e-13)
        assert not np.array_equal(got[1], exact[1])     # something was held
        # 9 ms of violent motion (the velocity changes by up to 1.5 m/s on the PMA arm):
        # holding changes the velocity reached by a few % of its change
        assert np.max(np.abs(got[1] - exact[1])) < 0.05 * np.max(np.abs(exact[1] - qd))


def correction_case(config, seed, parts):
    """
    Return a moving arm, a random gain and sample, the stepper, limits that stop nothing.

    ``(model, q, qd, forces, gain (parts n, n), y near q, steps, (low, high, gate))``.
    """
    model, q, qd, forces = moving(config, 8, 6)
    rng = np.random.default_rng(seed)
    gain = rng.uniform(0.0, 0.5, (parts * model.n, model.n))
    y = q + rng.uniform(-1e-3, 1e-3, model.n)
    free = (np.full(model.n, -np.inf), np.full(model.n, np.inf), np.full(model.n, np.inf))
    return model, q, qd, forces, gain, y, implicit_damping_euler_stepper(model), free


@pytest.mark.parametrize('config', ['continuum_3section', 'planar_2r'])
def test_a_correction_before_a_step_is_the_steps_before_it_corrected_then_the_rest(config):
    """An observer's update inside the steps (control/observer.py): one run, one model call."""
    model, q, qd, forces, gain, y, steps, free = correction_case(config, 9, 2)
    kept = np.zeros((2, model.n))
    got = steps(q, qd, forces, 1e-3, 1, (2, gain, y, kept, *free))
    before = steps(q, qd, forces[:2], 1e-3)
    corrected = np.concatenate(before) + gain @ (y - before[0])
    np.testing.assert_allclose(kept.ravel(), corrected, rtol=1e-12, atol=1e-15)
    expected = steps(kept[0], kept[1], forces[2:], 1e-3)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-10, atol=1e-13)
    assert not np.allclose(got[0], steps(q, qd, forces, 1e-3)[0], rtol=1e-6)   # it did


@pytest.mark.parametrize('config', ['continuum_3section', 'planar_2r'])
def test_a_sample_on_an_end_stop_corrects_the_state_but_not_the_bias(config):
    """The force bias learns from the coordinates whose sample lies off their stops only."""
    model, q, qd, forces, gain, y, steps, free = correction_case(config, 4, 3)
    before = steps(q, qd, forces[:2], 1e-3)
    free[0][0] = y[0] + 1e-6                                  # the first sample on its stop
    kept = np.zeros((3, model.n))
    steps(q, qd, forces, 1e-3, 1, (2, gain, y, kept, *free))
    innovation = y - before[0]
    np.testing.assert_allclose(kept[:2].ravel(), np.concatenate(before)
                               + gain[:2 * model.n] @ innovation, rtol=1e-12, atol=1e-15)
    off = innovation.copy()
    off[0] = 0.0
    np.testing.assert_allclose(kept[2], gain[2 * model.n:] @ off, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize('config', ['continuum_3section', 'planar_2r'])
def test_the_bias_learns_from_the_innovation_clipped_to_the_gate_the_state_from_all(config):
    """A push's innovation: the state takes all of it, the force bias its gated part."""
    model, q, qd, forces, gain, y, steps, (low, high, _) = correction_case(config, 6, 3)
    before = steps(q, qd, forces[:2], 1e-3)
    gate = np.full(model.n, 2e-4)                             # samples reach 1 mm off
    kept = np.zeros((3, model.n))
    steps(q, qd, forces, 1e-3, 1, (2, gain, y, kept, low, high, gate))
    innovation = y - before[0]
    assert np.any(np.abs(innovation) > gate)
    np.testing.assert_allclose(kept[:2].ravel(), np.concatenate(before)
                               + gain[:2 * model.n] @ innovation, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(kept[2], gain[2 * model.n:] @ np.clip(innovation, -gate, gate),
                               rtol=1e-12, atol=1e-15)
