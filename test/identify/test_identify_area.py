"""
`identify --fit ...,area_slope`: the PMA area's fall with extension, ``area (1 - c q / l_max)``.

On the controller's own model (exact data) every parameter to 1 %; on the mismatched, noisy
plant with ``pma.area_slope: 0.15`` the slope within 20 % and stiffness, area and dead zone
as the fit without it recovers them on the plant without it (test_identify.py); a run that
barely strokes the PMAs does not excite the slope, and says so.
"""

import sys
from pathlib import Path

import pytest
import yaml

from continuum_ctrl.apps import cli
from continuum_ctrl.identify.bag import write_run
from continuum_ctrl.identify.fit import DEFAULT_FIT, identify, Options
from continuum_ctrl.identify.report import fitted_yaml
from continuum_ctrl.identify.setup import read_setup
from continuum_ctrl.params import ConfigError

sys.path.insert(0, str(Path(__file__).parents[1]))
from support.identify_plant import (assert_recovered, closed_loop, MISMATCH, PARAMS,  # noqa: E402
                                    synthetic_run)

EXCITATION = 'config/identify_excitation.yaml'
NOISE = {'noise.position': 1e-5, 'noise.velocity': 1e-3, 'noise.seed': 3}
SLOPE = 0.15
TRUTH = {'stiffness': 1.2 * 2200.0, 'damping': 0.75 * 30.0, 'area': 1.1 * 1.33e-4,
         'deadzone': 15e3, 'area_slope': SLOPE}
FIT = Options(DEFAULT_FIT + ('area_slope',))


@pytest.fixture(scope='module')
def setup():
    return read_setup(PARAMS)


def test_exact_data_give_every_parameter_and_the_slope(setup):
    result = identify([synthetic_run(setup, duration=12.0, area_slope=SLOPE)], setup, FIT)
    for e in result.estimates:
        key = e.key.split('.')[-1]
        assert e.value == pytest.approx(TRUTH[key], rel=0.01, abs=300.0 if key == 'deadzone'
                                        else 0.0), e.label
    assert result.r2_test_all > 0.999
    written = yaml.safe_load(fitted_yaml(result, ['synthetic']))['/**']['ros__parameters']
    assert written['output']['area_slope'] == [pytest.approx(SLOPE, rel=0.01)]


def test_without_the_slope_the_fit_of_a_falling_area_is_off(setup):
    """The control case: the constant-area fit of the same data misses the area by c/2-ish."""
    run = synthetic_run(setup, duration=12.0, area_slope=SLOPE)
    area, = identify([run], setup).values('output.area')
    assert abs(area.value / TRUTH['area'] - 1.0) > 0.03


@pytest.mark.slow
def test_recovers_the_slope_on_the_mismatched_plant(setup):
    run, *_ = closed_loop([PARAMS, EXCITATION], {**MISMATCH, **NOISE,
                                                 'pma.area_slope': [SLOPE]}, 35.0, step=0.001)
    result = identify([run], setup, FIT)
    print('\n' + '\n'.join(f'{e.label}: {e.value:.6g} +- {e.se:.2g}' for e in result.estimates))
    slope, = result.values('output.area_slope')
    assert slope.value == pytest.approx(SLOPE, rel=0.2)
    assert 0.0 < slope.se < 0.2 * SLOPE
    assert_recovered(result, TRUTH)


@pytest.mark.parametrize('valves', [(), ('time_constant', 'delay')])
def test_a_slope_in_the_file_is_used_as_known(setup, tmp_path, valves):
    """The nominal file says `output.area_slope`: the fit without it, valves searched or not."""
    known = tmp_path / 'slope.yaml'
    known.write_text(yaml.safe_dump({'/**': {'ros__parameters': {
        'output': {'area_slope': [SLOPE]}}}}))
    run = synthetic_run(setup, duration=12.0, area_slope=SLOPE)
    result = identify([run], read_setup([PARAMS, known]), Options(DEFAULT_FIT + valves))
    for e in result.estimates:
        key = e.key.split('.')[-1]
        if key in TRUTH:
            assert e.value == pytest.approx(TRUTH[key], rel=0.01, abs=300.0
                                            if key == 'deadzone' else 0.0), e.label
        else:
            assert e.value < 0.002, e.label     # the run's valves are ideal
    assert result.r2_test_all > 0.999


@pytest.mark.parametrize('amplitude, excited', [(0.0005, False), (0.006, True)])
def test_lengths_that_barely_move_do_not_excite_the_slope(setup, amplitude, excited):
    """The area and its slope alone, the rest known: a stroke of +-0.5 mm cannot tell them."""
    run = synthetic_run(setup, duration=12.0, stiffness=1.0, damping=1.0, deadzone=0.0,
                        area_slope=SLOPE, amplitude=amplitude, noise=2e-5)
    fit = Options(('area', 'area_slope'))
    if excited:
        slope, = identify([run], setup, fit).values('output.area_slope')
        assert slope.value == pytest.approx(SLOPE, rel=0.2)
        return
    with pytest.raises(ConfigError, match=r'do not excite area slope .*spanned \d+-\d+ % of '
                                          r'the stroke'):
        identify([run], setup, fit)


def test_the_cli_writes_the_slope_alone_and_with_the_valves(setup, tmp_path, capsys):
    run = synthetic_run(setup, duration=8.0, area_slope=SLOPE)
    bag = tmp_path / 'run.mcap'
    write_run(bag, setup.joints.model_names, run.t, run.q, run.command)
    out = tmp_path / 'fitted.yaml'
    assert cli.main(['identify', PARAMS, str(bag), '--out', str(out),
                     '--fit', 'stiffness,damping,area,deadzone,area_slope']) == 0
    assert 'area slope (all)' in capsys.readouterr().out
    data = yaml.safe_load(out.read_text())['/**']['ros__parameters']
    assert data['output']['area_slope'] == [pytest.approx(SLOPE, rel=0.02)]
    # with the valves too: these data have none, and the slope stays
    assert cli.main(['identify', PARAMS, str(bag), '--out', str(out), '--fit',
                     'stiffness,damping,area,deadzone,area_slope,time_constant,delay']) == 0
    data = yaml.safe_load(out.read_text())['/**']['ros__parameters']['output']
    assert data['area_slope'] == [pytest.approx(SLOPE, rel=0.02)]
    assert data['time_constant'] < 0.002 and data['delay'] < 0.002
