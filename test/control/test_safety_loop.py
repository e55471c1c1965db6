"""
Safety of the ROS-free control loop, tick by tick: limits, rate limit, clamped references,
hold mode, the non-finite guard and the resume rule.
"""

import numpy as np
import pytest

from continuum_ctrl.control.loop import ACTIVE, ControlLoop, STALE, TrajectoryRejected
from continuum_ctrl.control.settings import ControllerSettings
from continuum_ctrl.params.launch_description import config_path
from continuum_ctrl.models import load_model
from continuum_ctrl.params import file_parameters, flatten, nest
from continuum_ctrl.runtime.node_settings import ControllerNodeSettings


def loop_for(config, **changes):
    """Return a ControlLoop for a shipped config with nested `changes` merged into its tree."""
    tree, model = file_parameters(config_path(config), 'continuum_controller')
    own, tree = ControllerNodeSettings.split(tree)
    tree = nest({**flatten(tree), **changes})
    model = load_model(model)
    return ControlLoop(model, ControllerSettings.parse(tree, model), own.period)


def test_limits_rate_limit_and_clamped_reference_hold_on_every_tick_of_a_closed_loop():
    """
    Panda, semi-implicit Euler plant (4 substeps per period); the sinusoid asks for 2 rad
    around the start pose at 0.5 Hz, beyond the URDF joint limits, with a rate limit of
    4000 N m/s that the law keeps running into. At kp 100, kd 20 without integral (the gains
    the file had): the file's kp 900 flails this unreachable reference until the plant's
    explicit steps overflow (its gains are test_rigid_payload.py's subject).
    """
    loop = loop_for('panda.yaml', **{
        'reference.amplitude': [2.0], 'reference.frequency': [0.5], 'resume_count': 1,
        'reference.blend_time': 0.0, 'limits.effort_rate': [4000.0], 'gains.kp': [100.0] * 7,
        'gains.kd': [20.0] * 7, 'gains.ki_inertial': [0.0], 'adapt.time_constant': 0.0})
    model, settings = loop.model, loop.settings
    assert np.array_equal(settings.effort_limit, model.effort_limits())   # URDF <limit effort>
    assert np.allclose(settings.effort_limit, [87, 87, 87, 87, 12, 12, 12])
    dt = loop.period
    step = settings.effort_rate * dt
    q, qd = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.8]), np.zeros(7)
    previous = np.zeros(7)
    saturated = rate_limited = clamped = 0
    for k in range(1500):
        t = k * dt
        loop.set_state(q, qd, t)
        command = loop.tick(t).copy()
        assert loop.status == ACTIVE
        assert np.all(np.abs(command) <= settings.effort_limit + 1e-12)
        assert np.all(np.abs(command - previous) <= step * (1 + 1e-12))
        assert np.all(loop.q_des >= loop.low) and np.all(loop.q_des <= loop.high)
        at_limit = (loop.q_des == loop.low) | (loop.q_des == loop.high)
        assert np.all(loop.qd_des[at_limit] == 0.0) and np.all(loop.qdd_des[at_limit] == 0.0)
        saturated += np.any(np.abs(command) >= settings.effort_limit - 1e-9)
        rate_limited += np.any(np.abs(command - previous) >= step - 1e-9)
        clamped += np.any(at_limit)
        previous = command
        for _ in range(4):
            qd = qd + dt / 4 * model.forward_dynamics(q, qd, command)
            q = q + dt / 4 * qd
    assert loop.nonfinite == 0
    # every limit was actually reached, so the assertions above were tested
    assert saturated > 50 and rate_limited > 50 and clamped > 50


def test_hold_mode_is_gravity_and_elastic_compensation_at_the_last_valid_state():
    """After a timeout, 'hold' sends g(q) + passive(q, 0) at the last valid q, clamped."""
    loop = loop_for('planar_2r.yaml', safe_mode='hold', **{'limits.effort': [200.0, 4.0]})
    q = np.array([0.3, -0.7])
    assert np.array_equal(loop.tick(0.0), [0.0, 0.0])         # no state yet: zero, not hold
    for k in range(5):
        loop.set_state(q, np.array([0.5, -0.2]), 0.002 * k)
    loop.tick(0.01)
    assert loop.status == ACTIVE
    command = loop.tick(0.01 + loop.settings.state_timeout + 1e-3)
    assert loop.status == STALE
    hold = loop.model.gravity_vector(q) + loop.model.passive_forces(q, np.zeros(2))
    assert abs(hold[1]) > 4.0                                 # the clamp matters here
    assert np.allclose(command, np.clip(hold, [-200.0, -4.0], [200.0, 4.0]), rtol=1e-12)
    assert [level for level, _ in loop.events] == ['info', 'warn']


def test_nonfinite_law_gives_the_safe_command_and_one_error_then_recovers():
    """A state that overflows the law: safe command, one 'error' event, control resumes."""
    loop = loop_for('planar_2r.yaml', resume_count=1)
    loop.set_state(np.array([0.2, 0.1]), np.zeros(2), 0.0)
    assert np.any(loop.tick(0.001) != 0.0)
    loop.events.clear()
    for k in range(5):
        loop.set_state(np.array([0.2, 0.1]), np.array([1e300, -1e300]), 0.002 + 0.001 * k)
        assert np.array_equal(loop.tick(0.002 + 0.001 * k), [0.0, 0.0])
    assert loop.nonfinite == 5
    assert [level for level, _ in loop.events] == ['error']
    loop.set_state(np.array([0.2, 0.1]), np.zeros(2), 0.01)
    command = loop.tick(0.01)
    assert np.all(np.isfinite(command)) and np.any(command != 0.0)


def test_a_law_of_the_wrong_length_gives_the_safe_command_and_says_so():
    """A model whose inverse dynamics drops a coordinate: safe command, one line naming it."""
    tree, model_spec = file_parameters(config_path('planar_2r.yaml'), 'continuum_controller')
    own, tree = ControllerNodeSettings.split(tree)
    tree['resume_count'] = 1
    model = load_model(model_spec)
    whole = model.inverse_dynamics
    model.inverse_dynamics = lambda q, qd, qdd: whole(q, qd, qdd)[:-1]     # the fault
    loop = ControlLoop(model, ControllerSettings.parse(tree, model), own.period)
    loop.set_state(np.array([0.2, 0.1]), np.zeros(2), 0.0)
    assert np.array_equal(loop.tick(0.001), [0.0, 0.0]) and loop.nonfinite == 1
    assert loop.take_events()[-1] == ('error', 'the control law gave 1 forces for 2 '
                                               'coordinates: safe command')


def test_resume_needs_consecutive_fresh_valid_states_and_reanchors():
    """resume_count states in a row, each within state_timeout of the previous one."""
    loop = loop_for('planar_2r.yaml', resume_count=5)
    timeout = loop.settings.state_timeout
    q = np.array([0.4, -0.3])
    t = 0.0
    for _ in range(4):
        loop.set_state(q, np.zeros(2), t)
        t += 0.002
    loop.reject_state()                                       # a bad message breaks the run
    for _ in range(4):
        loop.set_state(q, np.zeros(2), t)
        t += 0.002
    t += 2 * timeout                                          # so does a gap
    for _ in range(4):
        loop.set_state(q, np.zeros(2), t)
        loop.tick(t)
        assert loop.status != ACTIVE
        t += 0.002
    loop.set_state(q, np.zeros(2), t)
    loop.tick(t)
    assert loop.status == ACTIVE
    assert np.allclose(loop.q_des, q)                         # anchored at the measured pose


def test_a_trajectory_whose_interpolation_overflows_is_refused_and_the_reference_kept():
    """Huge finite waypoints 3 ns apart on the unbounded 2R (found by the fuzz test)."""
    loop = loop_for('planar_2r.yaml', resume_count=1)
    loop.set_state(np.array([0.2, -0.1]), np.zeros(2), 0.0)
    loop.tick(0.0)
    kept = loop.reference
    with pytest.raises(TrajectoryRejected, match='interpol'):
        loop.follow([1.000000001, 1.000000004], [[-1e308, -4e-234], [0.0, 0.0]], t=0.0)
    assert loop.reference is kept
    assert np.all(np.isfinite(loop.tick(0.01)))
