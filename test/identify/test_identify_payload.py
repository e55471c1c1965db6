"""
A payload identified from a short run of the Panda carrying it, through the controller's loop:
its mass within 10 %, the file written to the controller's section only and refused when the
held-out part of the run no longer holds the payload.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from continuum_ctrl.apps import cli
from continuum_ctrl.apps.demo import write_csv
from continuum_ctrl.apps.node_pair import controller_loop, plant_of
from continuum_ctrl.identify.data import Run
from continuum_ctrl.identify.rigid import identify_payload
from continuum_ctrl.identify.setup import read_setup
from continuum_ctrl.sim.closed_loop import simulate_nodes

sys.path.insert(0, str(Path(__file__).parents[1]))
from support.identify_plant import RIGID_PARAMS  # noqa: E402

#: 3 kg 10 cm out of the hand, and a slow excitation the wrist's effort limits hold with it
PAYLOAD = {'payload.mass': 3.0, 'payload.frame': 'panda_hand', 'payload.offset': [0, 0, 0.1]}
SLOW = {'reference.type': 'multisine', 'reference.amplitude': [0.3],
        'reference.band': [0.1, 0.5], 'reference.components': 4}
NOISE = {'noise.position': 1e-4, 'noise.velocity': 1e-3, 'noise.seed': 1}


def carrying(plant, duration=10.0):
    """Return the Run of the Panda under SLOW excitation on the `plant` overrides."""
    loop = controller_loop(RIGID_PARAMS, SLOW)
    log = simulate_nodes(loop, plant_of(RIGID_PARAMS, {**NOISE, **plant}), duration)
    command = np.empty_like(log.command)
    command[:, loop.settings.order] = log.command
    return Run('payload', log.t, log.measured, log.t.copy(), command)


@pytest.fixture(scope='module')
def run():
    return carrying(PAYLOAD)


def test_the_payload_is_found_within_ten_percent(run):
    result, payload, refused = identify_payload([run], read_setup(RIGID_PARAMS), 'panda_hand')
    assert refused == []
    assert abs(payload['mass'] - 3.0) < 0.3
    np.testing.assert_allclose(payload['offset'], [0.0, 0.0, 0.1], atol=0.01)
    assert result.r2_test_all > 0.99


def test_the_cli_writes_the_payload_to_the_controller_alone(run, tmp_path):
    names = read_setup(RIGID_PARAMS).joints.model_names
    write_csv(tmp_path / 'run.csv', names, run.t, run.q, run.q, run.q, run.command)
    out = tmp_path / 'fitted.yaml'
    assert cli.main(['identify', RIGID_PARAMS, str(tmp_path / 'run.csv'), '--fit', 'payload',
                     '--payload-frame', 'panda_hand', '--out', str(out)]) == 0
    written = yaml.safe_load(out.read_text())
    assert list(written) == ['continuum_controller']
    fitted = written['continuum_controller']['ros__parameters']['model']['payload']
    assert fitted['frame'] == 'panda_hand' and abs(fitted['mass'] - 3.0) < 0.3
    told = {f'model.payload.{key}': value for key, value in fitted.items()}
    assert controller_loop(RIGID_PARAMS, told).model.gravity_vector(run.q[0]) == \
        pytest.approx(plant_of(RIGID_PARAMS, PAYLOAD).settings.model.gravity_vector(run.q[0]),
                      abs=0.05)


def test_a_payload_dropped_in_the_held_out_part_is_refused(run, tmp_path, capsys):
    cut = int(0.6 * len(run.t))
    bare = carrying({}, run.t[-1] + 0.002)
    mixed = Run('dropped', run.t, np.concatenate((run.q[:cut], bare.q[cut:])), run.t.copy(),
                np.concatenate((run.command[:cut], bare.command[cut:])))
    names = read_setup(RIGID_PARAMS).joints.model_names
    write_csv(tmp_path / 'run.csv', names, mixed.t, mixed.q, mixed.q, mixed.q, mixed.command)
    out = tmp_path / 'fitted.yaml'
    assert cli.main(['identify', RIGID_PARAMS, str(tmp_path / 'run.csv'), '--fit', 'payload',
                     '--payload-frame', 'panda_hand', '--out', str(out)]) == 1
    assert 'refused' in capsys.readouterr().err and not out.exists()
