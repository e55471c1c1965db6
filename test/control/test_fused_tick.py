"""
The compiled ticks against the Python tick they compose: the CoG arm's fused tick
(control/fused_tick.py) and the Pinocchio arm's (control/rigid_tick.py).

Two loops of the same settings take the same states of a closed loop: the compiled one (the
default) and one built with ``fused=False``, whose commands drive the plant. For the
continuum arm the plant is the simulator's integral model with the mismatch a calibration
leaves (test/support/identify_plant.py) and sensor noise; for the Panda, the simulator's Pinocchio
arm with sensor noise. So the states are those of a real arm, not of the controller's model.
Each tick, the command, the effort, the reference and the integral force of the two must
agree to 1e-12 of their scale; most ticks must have run compiled.
"""

import numpy as np
import pytest

from continuum_ctrl.control.fused_tick import FusedTick
from continuum_ctrl.control.loop import ACTIVE, ControlLoop
from continuum_ctrl.control.rigid_tick import RigidTick
from continuum_ctrl.apps.node_pair import controller_loop, plant_of
from continuum_ctrl.params.launch_description import arm_files
from support.identify_plant import MISMATCH, NOISE

PARAMS = 'continuum_3section.yaml'
#: s of closed loop per case: the blend (0.3 s), then the integral at work
DURATION = 1.5
CASES = {
    'the file: sinusoid, 20 ms + 5 ms valves, integral': {},
    'classical law, no integral': {'law.passive': 'measured', 'gains.ki': [0.0]},
    'no valve compensation': {'output.time_constant': 0.0, 'output.delay': 0.0,
                              'observer.type': 'none'},
    'dead time only': {'output.time_constant': 0.0},
    'more commands pending than the valves first hold': {'output.delay': 0.15},
    'hold': {'reference.type': 'hold'},
    'minimum jerk': {'reference.type': 'min_jerk', 'reference.goal': [0.015],
                     'reference.duration': 0.8},
    'multisine': {'reference.type': 'multisine', 'reference.amplitude': [0.004]},
    'trajectory': {'reference.type': 'trajectory', 'reference.times': [0.4, 0.9],
                   'reference.positions': [0.012] * 9 + [0.016] * 9},
    'Kalman observer': {'observer.type': 'kalman'},
    'Kalman observer cancelling its force bias': {'observer.type': 'kalman',
                                                  'observer.cancel_bias': True},
    'Kalman observer without a force bias': {'observer.type': 'kalman',
                                             'observer.bias_noise': 0.0},
    'Kalman observer, lengths only': {'observer.type': 'kalman', 'lengths only': True},
    'Kalman observer, samples missing, late and reordered': {
        'observer.type': 'kalman', 'lengths only': True, 'sparse': True},
    'falling area': {'output.area_slope': [0.15]},
    'falling area per PMA, no valve compensation': {
        'output.area_slope': [0.1, 0.15, 0.2] * 3, 'output.time_constant': 0.0,
        'output.delay': 0.0, 'observer.type': 'none'},
    'falling area, Kalman observer': {'output.area_slope': [0.15], 'observer.type': 'kalman'},
    'friction feed-forward': {'output.friction': [2.0]},
    'friction per PMA, no valve compensation': {
        'output.friction': [1.0, 2.0, 0.0] * 3,
        'output.friction_stiffness': [3e4, 1e4, 1e4] * 3,
        'output.time_constant': 0.0, 'output.delay': 0.0, 'observer.type': 'none'},
    'learnt stiffness': {'gains.learn_window': 0.5},
    'learning from repetition': {'ilc.enable': True, 'reference.frequency': [2.5],
                                 'limits.saturation_hold': 0.0},
    'learning from repetition, faded': {'ilc.enable': True, 'reference.frequency': [2.5]},
    'learnt stiffness, no valve compensation': {
        'gains.learn_window': 0.3, 'gains.learn_floor': 1e-4, 'output.time_constant': 0.0,
        'output.delay': 0.0, 'observer.type': 'none'},
}
#: the sparse case's sensor: a sample every other tick, 3 ms old; at REORDERED, one older
#: than the last (the observer drops it)
SPARSE_AGE, REORDERED = 0.003, 401
RIGID = 'panda.yaml'
#: the Panda's cases: its file (a sinusoid), and the others with an integral gain, a rate
#: limit and effort limits the law reaches
RIGID_CASES = {
    'the file: sinusoid': {},
    'integral, rate limit, effort limits': {'limits.effort_rate': [2000.0],
                                            'limits.effort': [12.0], 'limits.integral': [3.0]},
    'hold, integral': {'reference.type': 'hold'},
    'force-unit integral, learnt stiffness': {'gains.ki': [20.0], 'gains.ki_inertial': [0.0],
                                              'adapt.time_constant': 0.0,
                                              'gains.learn_window': 0.3,
                                              'gains.learn_floor': 0.01},
    'learning from repetition, inertial integral': {'ilc.enable': True,
                                                    'reference.frequency': [2.5],
                                                    'adapt.time_constant': 0.0},
    'learning from repetition, force-unit integral': {'ilc.enable': True,
                                                      'reference.frequency': [2.5],
                                                      'gains.ki': [20.0],
                                                      'gains.ki_inertial': [0.0],
                                                      'adapt.time_constant': 0.0},
    'multisine': {'reference.type': 'multisine', 'reference.amplitude': [0.1]},
    'minimum jerk': {'reference.type': 'min_jerk', 'reference.duration': 0.8,
                     'reference.goal': [0.2, -0.3, 0.1, -1.8, 0.2, 1.3, 0.6]},
    'trajectory': {'reference.type': 'trajectory', 'reference.times': [0.4, 0.9],
                   'reference.positions': [0.1, -0.4, 0.0, -1.9, 0.1, 1.4, 0.7,
                                           0.2, -0.3, 0.1, -1.8, 0.2, 1.3, 0.6]},
}
#: the plants: the continuum arm's with the calibration's mismatch, the Panda's with noise
PLANTS = {PARAMS: {'initial.position': [0.013], **MISMATCH, **NOISE},
          RIGID: {'noise.position': 1e-4, 'noise.velocity': 1e-2, 'noise.seed': 3}}


def shadowed(overrides, bad_state=None, params=PARAMS):
    """
    Run the case; return ``(worst relative difference, fused ticks, active ticks, events)``.

    `bad_state`: ``(tick, 'q' or 'qd')``: at that tick the state's positions or velocities are
    huge (1e200), so the law's force is not finite or the prediction's mass matrix not SPD.
    """
    overrides = {'reference.blend_time': 0.3, **overrides}
    lengths_only = overrides.pop('lengths only', False)     # states without velocities
    sparse = overrides.pop('sparse', False)
    # the two ticks compared, stable or not: some cases are loops configure refuses (a 2.5 Hz
    # sinusoid loses the arm, 8 mm RMS, as the check predicts; 150 ms of predicted delay)
    fused = controller_loop(params, overrides, check=False)
    python = ControlLoop(fused.model.for_thread(), fused.settings, fused.period, fused=False)
    plant = plant_of(params, PLANTS[params])
    period = fused.period
    plant.advance(0.0)
    worst, fused_ticks, active, events = 0.0, 0, 0, ([], [])
    for k in range(int(DURATION / period)):
        t = k * period
        q, qd = plant.measure()
        if bad_state is not None and k == bad_state[0]:
            if bad_state[1] == 'q':
                q = np.full_like(q, 1e200)
            else:
                qd = np.full_like(qd, 1e200)
        stamp = plant.t
        if sparse:
            stamp = plant.t - SPARSE_AGE - (k == REORDERED) * 4 * period
        for loop in (fused, python):
            if not sparse or k % 2 or k == REORDERED:
                loop.set_state(q, None if lengths_only else qd, t, stamp)
        covered = (fused.status == ACTIVE and fused.fused is not None
                   and fused.fused.covers(fused.reference))
        command = fused.tick(t).copy()
        reference = python.tick(t)
        for loop, log in zip((fused, python), events):
            loop.planner.step()
            loop.ilc.step()
            log.extend(loop.take_events())
        fused_ticks += covered
        active += python.status == ACTIVE
        for mine, theirs in ((command, reference), (fused.effort, python.effort),
                             (fused.q_des, python.q_des), (fused.qdd_des, python.qdd_des),
                             (fused.integral.force, python.integral.force),
                             (fused.integral.learnt, python.integral.learnt), (fused.q, python.q),
                             (fused.qd, python.qd)):
            worst = max(worst, np.max(np.abs(mine - theirs)) / max(np.max(np.abs(theirs)), 1.0))
        plant.command(reference, t)
        plant.advance(t + period + 0.5 * plant.settings.step)
    if sparse:
        assert fused.observer.dropped == python.observer.dropped == 1
    if overrides.get('gains.learn_window'):     # a case that learns has learnt a force
        learnt, force = (np.max(np.abs(f)) for f in (python.integral.learnt,
                                                     python.integral.force))
        assert learnt > 0.01 * force > 0.0
    if overrides.get('ilc.enable'):             # the tables learnt, and alike
        assert len(python.ilc.history) == len(fused.ilc.history) >= 2
        # the 2.5 Hz sinusoid loses the continuum arm: its effort at a bound, the saturation guard
        # holds, which fades the table and skips the trials (control/ilc.py's `fade`)
        faded = params == PARAMS and python.settings.saturation[0] > 0.0
        assert faded == any('effort saturated' in text for _, text in events[1])
        assert faded != np.any(python.ilc.tables[python.ilc.select[0]])
    return worst, fused_ticks, active, events


@pytest.mark.parametrize('case', CASES)
def test_the_fused_tick_gives_the_python_ticks_commands(case):
    worst, fused_ticks, active, _ = shadowed(CASES[case])
    assert active > 0.9 * DURATION * 500
    assert fused_ticks >= active - 1      # all but the activation tick's predecessor
    assert worst <= 1e-12


@pytest.mark.parametrize('case', RIGID_CASES)
def test_the_rigid_tick_gives_the_python_ticks_commands(case):
    worst, fused_ticks, active, _ = shadowed(RIGID_CASES[case], params=RIGID)
    assert active > 0.9 * DURATION * 500
    assert fused_ticks >= active - 1
    assert worst <= 1e-12


#: huge positions make the CoG arm's law fail; the Panda's joints are angles, so only huge
#: velocities (C(q, qd) qd overflows) make its law fail
@pytest.mark.parametrize('part, params', [('q', PARAMS), ('qd', PARAMS), ('qd', RIGID)],
                         ids=['continuum-q', 'continuum-qd', 'panda-qd'])
def test_a_failing_law_gives_the_same_safe_command_and_error_line(part, params):
    # measured states: the observer ignores measured velocities, huge ones too
    worst, _, _, (fused_events, python_events) = shadowed({'observer.type': 'none'},
                                                          (400, part), params)
    assert worst <= 1e-12
    errors = [text for level, text in fused_events if level == 'error']
    assert errors == [text for level, text in python_events if level == 'error']
    assert len(errors) == 1 and errors[0].startswith('the control law gave '), errors


def test_covers_continuum_pressure_loops_and_pinocchio_arms_with_diagonal_gains():
    loop = controller_loop(PARAMS)
    assert isinstance(loop.fused, FusedTick)
    assert isinstance(controller_loop(RIGID).fused, RigidTick)      # a Pinocchio arm
    assert controller_loop('planar_2r.yaml').fused is None          # a symbolic one
    task = controller_loop(arm_files('continuum_task'))
    t = 0.0
    while task.status != ACTIVE or task.awaiting_plan:
        task.set_state(np.full(9, 0.013), np.zeros(9), t)
        task.tick(t)
        task.planner.step()
        t += task.period
    assert not task.fused.covers(task.reference)        # a tip path: the Python tick
    kp = 700.0 * np.eye(9) + 10.0 * (np.eye(9, k=1) + np.eye(9, k=-1))
    coupled = controller_loop(PARAMS, {'gains.kp': kp.ravel().tolist()})
    coupled.set_state(np.full(9, 0.013), np.zeros(9), 0.0)
    coupled.anchor(0.0)
    assert not coupled.fused.covers(coupled.reference)
