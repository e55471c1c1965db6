"""
The rigid law against what the URDF does not know: links heavier than it, a payload at the hand.

The shipped Panda file's integral in acceleration units (`gains.ki_inertial`) and payload
estimate (`adapt.*`) on the built-in engine, in process: the error from 2 s after activation
(the integral's transient over), links heavier and a payload the controller does not know; a
payload given to the controller (`model.payload.*`, what `identify` writes); the top of the
gain's range against the unknown payload; and the range, refused above kp kd / 4 with one
line naming the key.
"""

import numpy as np
import pytest

from continuum_ctrl.apps.node_pair import controller_runtime, plant_of
from continuum_ctrl.control.command_quality import variation_rate
from continuum_ctrl.control.settings import ControllerSettings
from continuum_ctrl.models import load_model
from continuum_ctrl.params import ConfigError
from continuum_ctrl.sim.closed_loop import simulate_nodes

PANDA = 'panda.yaml'
#: a 3 kg ball 10 cm out along the hand's z axis, which the controller does not know
PAYLOAD = {'payload.mass': 3.0, 'payload.frame': 'panda_hand', 'payload.offset': [0, 0, 0.1]}
#: a driver's noise: 20 urad on the positions, 2 mrad/s on the velocities
NOISE = {'noise.position': 2e-5, 'noise.velocity': 2e-3, 'noise.seed': 1}


def late_run(controller=None, plant=None, duration=4.0):
    """
    Return ``(RMS error per joint, rad; command variation per joint, N m/s)``.

    Both from 2 s after activation to `duration`; the error is the plant's true joints'.
    """
    runtime = controller_runtime(PANDA, controller)
    log = simulate_nodes(runtime, plant_of(PANDA, plant), duration)
    start = int(np.argmax(log.active)) + int(round(2.0 / runtime.loop.period))
    rms = np.sqrt(np.mean((log.q - log.q_des)[start:] ** 2, axis=0))
    return rms, variation_rate(log.t[start:], log.command[start:])


def late_rms(controller=None, plant=None, duration=4.0):
    """Return the RMS error per joint (rad) from 2 s after activation to `duration`."""
    return late_run(controller, plant, duration)[0]


#: the law without the integral and the estimate
BARE = {'gains.ki_inertial': 0.0, 'adapt.time_constant': 0.0}


def test_links_thirty_percent_heavier_are_held_by_the_inertial_integral():
    without = late_rms(BARE, {'mismatch.mass_scale': 1.3})
    held = late_rms(plant={'mismatch.mass_scale': 1.3})
    assert np.max(without) > 0.01                # the gravity error is there
    assert np.max(held) < 0.005                  # the bound
    assert np.max(held) < 0.3 * np.max(without)


def test_an_unknown_payload_is_held_by_the_integral_and_the_estimate():
    without = late_rms(BARE, PAYLOAD)
    held = late_rms(plant=PAYLOAD)
    assert np.max(without) > 0.02
    assert np.max(held) < 0.005


def test_the_top_of_the_range_keeps_the_arm_with_an_unknown_payload():
    kp, kd = 900.0, 60.0                        # the file's
    rms = late_rms({'gains.ki_inertial': [kp * kd / 4.0] * 7}, PAYLOAD)
    assert np.all(np.isfinite(rms)) and np.max(rms) < 0.05


def test_the_velocity_filter_keeps_the_velocity_noise_out_of_the_commands():
    rms, rate = late_run(plant={**PAYLOAD, **NOISE})
    assert np.max(rms) < 0.005 and np.max(rate) <= 100.0         # the bounds
    _, unfiltered = late_run({'velocity_filter': 0.0}, {**PAYLOAD, **NOISE})
    assert np.max(unfiltered) > 1.5 * np.max(rate)               # kd times the noise


@pytest.mark.parametrize('plant', [{'mismatch.mass_scale': 0.75}, PAYLOAD],
                         ids=['lighter', 'payload'])
def test_the_top_of_the_range_keeps_the_arm_with_noisy_filtered_velocities(plant):
    kp, kd = 900.0, 60.0                        # the file's; the filter's lag, the noise
    rms, rate = late_run({'gains.ki_inertial': [kp * kd / 4.0] * 7}, {**plant, **NOISE})
    # held and quiet (lost: 0.4-1.5 rad, 540 N m/s); the payload's wrist, four times its
    # URDF inertia, keeps 0.016 rad at the top of the range on this engine
    assert np.max(rms) < 0.03 and np.max(rate) <= 100.0


def test_a_payload_the_controller_is_told_of_is_tracked_as_the_nominal_arm():
    told = {'model.payload.' + key.split('.')[1]: value for key, value in PAYLOAD.items()}
    assert np.max(late_rms(told, PAYLOAD)) < 0.002


def test_gains_above_half_kp_kd_are_refused_with_the_key():
    model = load_model({'type': 'urdf', 'urdf': 'package://example-robot-data/robots/'
                        'panda_description/urdf/panda.urdf',
                        'joints': [f'panda_joint{i}' for i in range(1, 8)]})
    tree = {'gains': {'kp': [100.0] * 7, 'kd': [20.0] * 7, 'ki_inertial': [501.0] * 7}}
    with pytest.raises(ConfigError, match=r"gains.ki_inertial.*at most kp kd / 4.*500"):
        ControllerSettings.parse(tree, model)
    tree['gains']['ki_inertial'] = [500.0] * 7
    assert ControllerSettings.parse(tree, model).integral_gain[0] == 500.0
    tree['gains']['ki'] = [1.0] * 7
    with pytest.raises(ConfigError, match='gains.ki_inertial.*give one'):
        ControllerSettings.parse(tree, model)


@pytest.mark.parametrize('gains, key', [
    ({'adapt': {'time_constant': 1.0, 'payload_frame': 'no_such_frame'}}, 'adapt.payload_frame'),
    ({'adapt': {'time_constant': 1.0, 'payload_frame': 'panda_hand'},
      'gains': {'ki_inertial': [0.0] * 7}}, 'adapt.time_constant'),
])
def test_a_payload_estimate_without_its_frame_or_integral_is_refused_with_the_key(gains, key):
    with pytest.raises(ConfigError, match=key):
        controller_runtime(PANDA, {f'{group}.{name}': value for group, values in gains.items()
                                   for name, value in values.items()})
