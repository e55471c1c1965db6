"""
Identification of a rigid (URDF) arm: the base parameters of Pinocchio's regressor, their
recovery from exact data and from the simulated Panda with 30 % heavier links, the report, and
one clear error line for each kind of bad input.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from continuum_ctrl.apps import cli
from continuum_ctrl.identify.rigid import identify_rigid, RigidArm
from continuum_ctrl.identify.setup import read_setup
from continuum_ctrl.identify.signals import grid
from continuum_ctrl.apps.demo import write_csv

sys.path.insert(0, str(Path(__file__).parents[1]))
from support.identify_plant import (rigid_closed_loop, RIGID_MASS_SCALE,  # noqa: E402
                                    RIGID_PARAMS, still_csv, synthetic_rigid_run)

NOISE = {'noise.position': 1e-4, 'noise.velocity': 1e-3, 'noise.seed': 1}


@pytest.fixture(scope='module')
def setup():
    return read_setup(RIGID_PARAMS)


@pytest.fixture(scope='module')
def arm(setup):
    return RigidArm(setup.model)


def test_base_parameters_give_the_same_efforts_as_all_parameters(arm, setup):
    """Y theta = Y_B beta(theta) for any theta, and Y theta is Pinocchio's RNEA."""
    base = arm.base()
    rng = np.random.default_rng(5)
    low, high = setup.model.joint_limits()
    assert 0 < base.base.size < arm.theta.size
    for _ in range(5):
        theta = arm.theta * rng.uniform(0.5, 1.5, arm.theta.size)
        state = (rng.uniform(low, high), rng.standard_normal(7), rng.standard_normal(7))
        Y = arm.regressor(*state)
        np.testing.assert_allclose(Y[:, base.base] @ base.of(theta), Y @ theta, atol=1e-9)
    state = (rng.uniform(low, high), rng.standard_normal(7), rng.standard_normal(7))
    np.testing.assert_allclose(arm.regressor(*state) @ arm.theta,
                               setup.model.inverse_dynamics(*state), atol=1e-9)


def _check(result, arm, run, truth, friction=False, within=0.03):
    """
    Well-determined base parameters (standard error under 1 % of the value) within `within`
    of the truth; every error moves the efforts by under 0.5 % of their RMS.
    """
    base = arm.base()
    estimates = np.array([e.value for e in result.estimates])
    se = np.array([e.se for e in result.estimates])
    g = grid(run)
    Y = np.array([arm.regressor(*x)[:, base.base] for x in zip(*g.state)])
    if friction:
        Y = np.concatenate((Y, np.array([np.diag(qd) for qd in g.state[1]])), axis=2)
    effort = np.sqrt(np.mean(np.einsum('tjk,k->tj', Y, truth) ** 2))
    effect = np.abs(estimates - truth) * np.sqrt(np.mean(Y ** 2, axis=(0, 1))) / effort
    well = se < 0.01 * np.abs(truth)
    print(f'\n{well.sum()} of {len(truth)} well determined; largest error there '
          f'{np.max(np.abs(estimates - truth)[well] / np.abs(truth[well])):.2%}; largest '
          f'effect on the efforts {effect.max():.3%} of their RMS; held-out R^2 '
          f'{result.r2_test_all:.6f}')
    assert well.sum() >= 10
    np.testing.assert_allclose(estimates[well], truth[well], rtol=within)
    assert effect.max() < 0.005
    assert result.r2_test_all > 0.999


def test_exact_data_recover_the_base_parameters_and_friction(arm, setup):
    """The arm's own efforts (links 30 % heavier, 0.5 N m s/rad friction), no noise."""
    friction = np.full(7, 0.5)
    run = synthetic_rigid_run(arm, RIGID_MASS_SCALE * arm.theta, friction=friction)
    result = identify_rigid([run], setup, ('inertia', 'friction'))
    truth = np.concatenate((arm.base().of(RIGID_MASS_SCALE * arm.theta), friction))
    _check(result, arm, run, truth, friction=True)
    np.testing.assert_allclose([e.value for e in result.estimates[-7:]], friction, rtol=0.01)


@pytest.mark.slow
def test_simulated_panda_with_heavier_links(arm, setup):
    """20 s of multisine excitation through the controller's loop, links 30 % heavier."""
    run = rigid_closed_loop({'mismatch.mass_scale': RIGID_MASS_SCALE, **NOISE}, 20.0)
    result = identify_rigid([run], setup)
    truth = arm.base().of(RIGID_MASS_SCALE * arm.theta)
    _check(result, arm, run, truth)
    nominal = np.array([e.nominal for e in result.estimates])
    np.testing.assert_allclose(nominal, arm.base().of(arm.theta))
    assert result.condition < 1e3


def test_cli_writes_the_report_and_no_fitted_file(arm, setup, tmp_path, capsys):
    run = synthetic_rigid_run(arm, arm.theta, duration=6.0)
    names = setup.joints.model_names
    write_csv(tmp_path / 'run.csv', names, run.t, run.q, run.q, run.q, run.command)
    report = tmp_path / 'report'
    assert cli.main(['identify', RIGID_PARAMS, str(tmp_path / 'run.csv'), '--report',
                     str(report), '--fit', 'inertia,friction']) == 0
    printed = capsys.readouterr().out
    assert 'base parameters' in printed and 'URDF' in printed and 'R^2' in printed
    assert 'panda_joint7 viscous friction' in printed
    assert sorted(p.name for p in report.iterdir()) == ['held_out.png', 'report.txt']


def _still(setup, tmp, run):
    return still_csv(setup, tmp, run, 0.3, 1.0)


def _good(setup, tmp, run):
    write_csv(tmp / 'a.csv', setup.joints.model_names, run.t, run.q, run.q, run.q,
              run.command)
    return [str(tmp / 'a.csv')]


BAD_INPUTS = [
    ('unexcited', _still, [], 'run an excitation reference'),
    ('--out for a URDF arm', _good, ['--out', 'fitted.yaml'], 'live in the URDF'),
    ('continuum parameters', _good, ['--fit', 'stiffness'], "a rigid arm fits ['inertia'"),
    ('--per-pma for a URDF arm', _good, ['--per-pma'], 'is for continuum arms'),
    ('--hold-unexcited for a URDF arm', _good, ['--hold-unexcited'], 'is for continuum arms'),
]


@pytest.mark.parametrize('case, build, options, message', BAD_INPUTS,
                         ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_error_line(arm, setup, tmp_path, capsys, case, build, options,
                                        message):
    run = synthetic_rigid_run(arm, arm.theta, duration=4.0)
    status = cli.main(['identify', RIGID_PARAMS, *build(setup, tmp_path, run), *options])
    err = capsys.readouterr().err
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('continuum-ctrl identify: error: '), err
    assert message in lines[0]
