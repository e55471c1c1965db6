"""The simulator's plant: the implicit-damping step, mismatch and command checks, without ROS."""

import numpy as np
import pytest

from continuum_ctrl.params import ConfigError, file_parameters
from continuum_ctrl.runtime.node_settings import SimulatorNodeSettings
from continuum_ctrl.params.launch_description import config_path
from continuum_ctrl.models.integrators import rk4_step
from continuum_ctrl.models.integrators import implicit_damping_euler_step
from continuum_ctrl.sim.plant import Plant, PlantSettings


@pytest.fixture(scope='module')
def arm():
    """Return the reference continuum plant settings (CoG model, for speed)."""
    tree, model = file_parameters(config_path('continuum_3section.yaml'), 'continuum_simulator')
    _, tree = SimulatorNodeSettings.split(tree)
    model = dict(model, type='continuum_cog')
    return PlantSettings.parse(tree, model)


def run(step, model, dt, duration, tau):
    """Integrate from rest at 10 mm with a constant force; return the final state."""
    q, qd = np.full(model.n, 0.01), np.zeros(model.n)
    for _ in range(int(round(duration / dt))):
        q, qd = step(model, q, qd, tau, dt)
    return q, qd


def test_implicit_damping_step_is_first_order_and_stable_where_rk4_is_not(arm):
    model, tau = arm.model, np.linspace(10.0, 40.0, 9)
    reference, _ = run(rk4_step, model, 5e-5, 0.05, tau)
    errors = [np.max(np.abs(run(implicit_damping_euler_step, model, dt, 0.05, tau)[0]
                            - reference)) for dt in (1e-3, 5e-4, 2.5e-4)]
    assert 1.6 < errors[0] / errors[1] < 2.4 and 1.6 < errors[1] / errors[2] < 2.4
    # at the 2 ms step the fast damping mode (~9e3 1/s) makes RK4 blow up
    # at the 2 ms step of config/continuum_3section.yaml it stays within 1 mm of the
    # converged trajectory over 0.2 s of motion
    reference, _ = run(rk4_step, model, 5e-5, 0.2, tau)
    q, _ = run(implicit_damping_euler_step, model, 2e-3, 0.2, tau)
    assert np.max(np.abs(q - reference)) < 1e-3
    assert np.max(np.abs(reference - 0.01)) > 5e-3          # while it moved by more
    with np.errstate(all='ignore'):
        try:
            q_rk4, _ = run(rk4_step, model, 2e-3, 0.05, tau)
            assert not np.all(np.abs(q_rk4) < 1.0)
        except (np.linalg.LinAlgError, ValueError, ArithmeticError):
            pass


def test_commands_checked_and_stale_ones_mean_zero_input(arm):
    plant = Plant(arm)
    plant.command(np.full(9, 1e5), 0.0)
    assert np.allclose(plant.tau, 1.33e-4 * 1e5)
    for bad in (np.full(8, 1e5), np.full(9, np.nan), np.full(9, 6e5), np.full(9, -1.0)):
        with pytest.raises(ValueError):
            plant.command(bad, 0.01)
    assert np.allclose(plant.tau, 13.3)                    # the good command is kept
    plant.advance(0.0)
    plant.advance(0.05)                                    # fresh: pushes
    pushed = plant.q.copy()
    plant.advance(0.5)                                     # stale after 0.1 s: vented
    assert np.all(pushed > plant.q)


def test_each_command_that_goes_stale_is_counted_once(arm):
    """The plant counts the gaps longer than `command_timeout` (0.1 s), not the steps in them."""
    plant = Plant(arm)
    plant.advance(0.0)
    plant.advance(0.3)                                     # no command yet: nothing went stale
    assert plant.stale_commands == 0
    for t in np.arange(0.3, 0.5, 0.002):                   # a command every step: fresh
        plant.command(np.full(9, 1e5), t)
        plant.advance(t)
    assert plant.stale_commands == 0
    plant.advance(0.55)                                    # 52 ms without one: still fresh
    assert plant.stale_commands == 0
    plant.advance(0.9)                                     # stale from 0.6 s on, counted once
    assert plant.stale_commands == 1
    plant.command(np.full(9, 1e5), 0.9)
    plant.advance(0.95)
    plant.advance(1.2)                                     # the next gap: once more
    assert plant.stale_commands == 2


def test_a_command_stamped_before_the_timeout_or_the_command_in_force_is_never_applied(arm):
    """
    Stamped commands (`issued`): one issued over `command_timeout` (0.1 s) before its arrival,
    or before the command in force, is dropped and counted; a fresh one goes stale 0.1 s after
    its stamp, not after its arrival.
    """
    plant = Plant(arm)
    plant.advance(0.0)
    assert plant.command(np.full(9, 1e5), 0.0, -0.01)          # 10 ms in transit: taken
    assert not plant.command(np.full(9, 4e5), 0.2, 0.09)       # 110 ms old: dropped
    assert not plant.command(np.full(9, 4e5), 0.02, -0.02)     # before the one in force
    assert plant.late_commands == 2 and plant.commands == 1
    assert np.allclose(plant.tau, 1.33e-4 * 1e5)               # the command in force
    with pytest.raises(ValueError):                            # bad ones stay rejections
        plant.command(np.full(9, np.nan), 0.02, 0.02)
    assert plant.late_commands == 2
    plant.advance(0.08)
    assert plant.stale_commands == 0
    plant.advance(0.1)                      # 0.1 s after its arrival, 0.11 s after its stamp
    assert plant.stale_commands == 1
    assert plant.command(np.full(9, 1e5), 0.1, 0.5)            # a stamp ahead: from arrival
    assert plant.command_time == 0.1


def test_mismatch_scales_the_model(arm):
    tree, model = file_parameters(config_path('continuum_3section.yaml'),
                                  'continuum_simulator')
    _, tree = SimulatorNodeSettings.split(tree)
    model = dict(model, type='continuum_cog')
    heavy = PlantSettings.parse(dict(tree, mismatch={'mass_scale': 2.0}), model).model
    q = np.full(9, 0.01)
    assert np.allclose(heavy.mass_matrix(q), 2.0 * arm.model.mass_matrix(q))
    stiff = PlantSettings.parse(dict(tree, mismatch={'stiffness_scale': 1.5}), model).model
    zero = np.zeros(9)
    assert np.allclose(stiff.passive_forces(q, zero), 1.5 * arm.model.passive_forces(q, zero))


def test_mass_scale_scales_every_link_of_a_urdf_plant():
    """A URDF plant's links all heavier: M(q) and g(q) scale, the nominal model is untouched."""
    tree, model = file_parameters(config_path('panda.yaml'), 'continuum_simulator')
    _, tree = SimulatorNodeSettings.split(tree)
    nominal = PlantSettings.parse(tree, model).model
    heavy = PlantSettings.parse(dict(tree, mismatch={'mass_scale': 1.3}), model).model
    q = np.array([0.1, -0.5, 0.2, -2.0, 0.3, 1.5, 0.8])
    assert np.allclose(heavy.mass_matrix(q), 1.3 * nominal.mass_matrix(q))
    assert np.allclose(heavy.gravity_vector(q), 1.3 * nominal.gravity_vector(q))
    again = PlantSettings.parse(tree, model).model
    assert np.allclose(again.gravity_vector(q), nominal.gravity_vector(q))


@pytest.mark.parametrize('wait', [True, False])
def test_plant_rests_until_the_first_command_when_asked(arm, wait):
    tree, model = file_parameters(config_path('continuum_3section.yaml'),
                                  'continuum_simulator')
    _, tree = SimulatorNodeSettings.split(tree)
    settings = PlantSettings.parse(dict(tree, wait_for_command=wait),
                                   dict(model, type='continuum_cog'))
    plant = Plant(settings)
    plant.advance(0.0)
    plant.advance(0.2)                     # no command yet: vented PMAs, gravity pulls
    assert (plant.steps == 0 and np.all(plant.q == settings.initial)) == wait
    plant.command(np.full(9, 1e5), 0.2)
    plant.advance(0.3)                     # the first command starts the clock
    assert plant.steps > 0 and np.all(plant.q > settings.initial)


def test_wait_for_command_must_be_a_boolean(arm):
    tree, model = file_parameters(config_path('continuum_3section.yaml'),
                                  'continuum_simulator')
    _, tree = SimulatorNodeSettings.split(tree)
    with pytest.raises(ConfigError, match="'wait_for_command'"):
        PlantSettings.parse(dict(tree, wait_for_command='yes'), dict(model, type='continuum_cog'))


def test_the_step_grid_follows_the_timer_at_wall_clock_times(arm):
    """
    Calls due every step, each 20 us late, at Unix times: every call makes exactly one step,
    and the state it publishes holds at the call's due time (not one step before).

    A running sum of steps drifted by about 0.1 us a step at these magnitudes: after 40 s
    every call held a state one step old. A stall drops whole steps and keeps the grid.
    """
    plant, dt = Plant(arm), arm.step
    due = 1.8e9 + 0.123456
    plant.command(np.full(9, arm.actuation.p_min), due - 1.0)   # vented: the arm rests
    plant.advance(due + 20e-6, start=due)
    assert plant.t == due
    for k in range(1, 20001):                                   # 40 s at 2 ms
        late = due + k * dt + 20e-6
        plant.command(np.full(9, arm.actuation.p_min), late)
        assert plant.advance(late) == 1
        assert abs(plant.t - (due + k * dt)) < 1e-6
    stall = due + 20000 * dt + 0.3 + 0.7 * dt                  # beyond max_catch_up
    overruns = plant.overruns
    plant.advance(stall)
    assert plant.overruns == overruns + 1
    steps = (plant.t - due) / dt
    assert abs(steps - round(steps)) < 1e-3 and stall - plant.t < dt
