"""Valve compensation in the control loop, without ROS: settings, pressure feedback, tracking."""

import numpy as np
import pytest

from support.command_bounds import QUIET_PMA, worst_variation
from continuum_ctrl.params import ConfigError
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.apps.node_pair import controller_loop, plant_of

CONFIG = 'continuum_3section.yaml'
#: s: the blend-in (1 s, set so below) and its transient, then the time the errors are taken over
SETTLE, DURATION = 2.0, 4.0


#: the compensation on measured states, at the gains these figures were measured with (kp 700,
#: kd 40: the file's former ones; its observer loop: test/control/test_observer.py), kept
#: through saturation (the file's guard softens them there, and the uncompensated loop,
#: which saturates, then rang at 0.6 mm instead of 1.3: the guard's effect, not the valves')
MEASURED_STATES = {'observer.type': 'none', 'gains.kp': [700.0] * 9, 'gains.kd': [40.0] * 9,
                   'limits.saturation_gain': 1.0}


def controller(time_constant, delay, config=CONFIG):
    return controller_loop(config, {'output.time_constant': time_constant,
                                    'output.delay': delay, 'reference.blend_time': 1.0,
                                    **(MEASURED_STATES if config == CONFIG else {})})


def closed_loop(lag, delay, time_constant, predicted, sensor=None):
    """Return (RMS error m, the worst PMA's command variation Pa/s) after SETTLE."""
    plant = plant_of(CONFIG, {'actuator.time_constant': lag, 'actuator.delay': delay,
                              **(sensor or {})})
    log = simulate_nodes(controller(time_constant, predicted), plant, SETTLE + DURATION)
    late = log.t >= SETTLE
    rms = np.sqrt(np.mean((log.q - log.q_des)[late] ** 2))
    return rms, worst_variation(log.t[late], log.command[late])


@pytest.fixture(scope='module')
def figures():
    """The continuum demo behind 30 ms lag + 5 ms dead time, in one process on one clock."""
    return {'no valves': closed_loop(0.0, 0.0, 0.0, 0.0),
            'compensated': closed_loop(0.03, 0.005, 0.03, 0.005),
            'time constant 20 % short': closed_loop(0.03, 0.005, 0.024, 0.005),
            'uncompensated': closed_loop(0.03, 0.005, 0.0, 0.0),
            'dead time 2 ms short': closed_loop(0.03, 0.007, 0.03, 0.005),
            'dead time 5 ms long': closed_loop(0.03, 0.005, 0.03, 0.01)}


@pytest.mark.slow
def test_compensation_tracks_within_twice_the_error_without_valves(figures):
    """Uncompensated valves cost over a millimetre (1.3 mm; the classical law: over 3 mm)."""
    rms = {case: value[0] for case, value in figures.items()}
    assert rms['uncompensated'] > 1e-3 and rms['uncompensated'] > 8.0 * rms['no valves']
    # at most twice the error without valves, or 20 um where both are micrometres
    assert rms['compensated'] <= max(2.0 * rms['no valves'], 2e-5)
    # a 20 % short time constant keeps most of the gain (43 um against 5 um and 1.3 mm)
    assert rms['time constant 20 % short'] <= 0.1 * rms['uncompensated']
    print({case: f'{value[1] / 1e6:.3f} MPa/s' for case, value in figures.items()})
    for case in ('no valves', 'compensated', 'time constant 20 % short'):
        assert figures[case][1] <= QUIET_PMA, (case, figures[case])


@pytest.mark.slow
def test_a_dead_time_predicted_long_costs_nothing_and_one_short_chatters(figures):
    """
    Why `output.delay` is rounded up (docs/valves.md): 5 ms too long tracks as the exact one
    (7 um measured, the command as smooth); 2 ms too short, as a command's transport on a
    loaded machine leaves it, 0.33 mm with 29 times the worst PMA's command variation.
    """
    rms = {case: value[0] for case, value in figures.items()}
    variation = {case: value[1] for case, value in figures.items()}
    assert rms['dead time 5 ms long'] <= max(1.5 * rms['compensated'], 2e-5)
    assert variation['dead time 5 ms long'] <= 1.5 * variation['compensated']
    assert rms['dead time 2 ms short'] > 10.0 * rms['dead time 5 ms long']
    assert variation['dead time 2 ms short'] > 5.0 * variation['compensated']


@pytest.mark.slow
def test_compensation_adds_no_chatter(figures):
    variation = {case: value[1] for case, value in figures.items()}
    assert variation['compensated'] <= 1.5 * variation['uncompensated']
    # stricter: no more than the arm without valves either (the uncompensated loop chatters)
    assert variation['compensated'] <= 1.5 * variation['no valves']
    assert variation['uncompensated'] > 5.0 * variation['no valves']


@pytest.mark.slow
def test_the_prediction_covers_the_time_a_state_waited_before_the_loop_read_it(figures):
    """
    States that reach the loop 10 ms after they were measured (the p99 of joint_states
    latency measured in the controller node under CPU load) track nearly as fresh ones do, as
    the loop predicts from the time they were measured (the header stamp). The control
    case: predicted from the time they arrived, the prediction falls 10 ms short, and the
    cancellation of the PMAs' stiffness and damping through the valves chatters (the node
    pair's "lost arm" under load; here about 3 mm RMS, against 0.07 mm stamped).
    """
    rms, variation = figures['compensated']
    stamped = closed_loop(0.03, 0.005, 0.03, 0.005, {'sensor.delay': 0.01})
    received = closed_loop(0.03, 0.005, 0.03, 0.005, {'sensor.delay': 0.01,
                                                      'sensor.stamp': 'publish'})
    print(f'\nfresh {rms * 1e3:.4f} mm, stamped {stamped[0] * 1e3:.4f} mm, received '
          f'{received[0] * 1e3:.4f} mm')
    print(f'variation: fresh {variation / 1e6:.2f}, stamped {stamped[1] / 1e6:.2f}, '
          f'received {received[1] / 1e6:.2f} MPa/s')
    # not quite as fresh ones: the longer prediction runs on the controller's CoG model;
    # with the passive forces at the reference fresh states track to micrometres, so the
    # bound is the larger of 1.5 x that and 0.1 mm. With Kd = 40 (the file's trade, see its
    # comment) the late states add some command variation (the worst PMA's: 0.75 against
    # 0.12 MPa/s), still quiet, far below the control case's chatter (3.4 MPa/s)
    assert stamped[0] <= max(1.5 * rms, 1e-4) and stamped[1] <= QUIET_PMA
    assert received[0] > 3.0 * stamped[0] and received[1] > 3.0 * stamped[1]


def test_effort_output_refuses_the_compensation_keys():
    for key in ('time_constant', 'delay'):
        with pytest.raises(ConfigError, match=rf"'output.{key}'.*'pressure'"):
            controller(**{'time_constant': 0.0, 'delay': 0.0, key: 0.01},
                       config='planar_2r.yaml')
    with pytest.raises(ConfigError, match="'output.delay'"):
        controller(0.0, -0.01)
    assert controller(0.0, 0.0).compensation is None      # default: the loop as it was


def test_measured_pressures_replace_the_estimate_and_bad_ones_are_refused():
    loop = controller(0.03, 0.005)
    good = np.linspace(1e5, 2e5, 9)
    loop.set_pressures(good, 0.5)
    np.testing.assert_array_equal(loop.compensation.valves.pressure[loop.settings.order],
                                  good)
    for bad, reason in ((good[:8], 'expected 9'), (np.full(9, np.nan), 'non-finite'),
                        (np.full(9, 2e6), 'outside')):
        with pytest.raises(ValueError, match=reason):
            loop.set_pressures(bad, 0.6)
    np.testing.assert_array_equal(loop.compensation.valves.pressure[loop.settings.order],
                                  good)
    with pytest.raises(ValueError, match='not pressure'):
        controller(0.0, 0.0, config='planar_2r.yaml').set_pressures(np.zeros(2), 0.0)


def test_measured_pressures_steer_the_prediction():
    """The state predicted over the dead time moves with the pressure measured, not sent."""
    loop = controller(0.03, 0.005)
    q, qd = np.full(9, 0.01), np.zeros(9)
    predictions = []
    for pressure in (1e5, 3e5):
        loop.compensation.measured(np.full(9, pressure), 1.0)
        predictions.append(loop.compensation.predict(q, qd, 1.0, 1.0)[0])
    assert np.all(predictions[1] > predictions[0])      # more pressure: the PMAs extend
