"""
`identify --fit ...,area_slope,friction,time_constant,delay`: the valves with the rest at once.

The valves' search and the friction's play search alternate (identify/fit.py `fit`), and the
lag search's regression takes the fitted slope's column, affine in the pressure as the area's.
On the built-in plant with issue 40's mismatch, a falling area, 2 N of friction at 15 kN/m
and 30 ms / 5 ms valves, 25 s of the excitation (measured: lag 31.1 ms, delay 3.7 ms,
friction 2.05 N, its stiffness 14 900 N/m, slope 0.153, stiffness 2643 N/m for 2640, area
+0.6 %).
"""

import sys
from pathlib import Path

import pytest

from continuum_ctrl.identify.fit import DEFAULT_FIT, identify, Options
from continuum_ctrl.identify.setup import read_setup

sys.path.insert(0, str(Path(__file__).parents[1]))
from support.identify_plant import closed_loop, NOMINAL_GAINS, PARAMS  # noqa: E402

EXCITATION = 'config/identify_excitation.yaml'
PLANT = {'mismatch.stiffness_scale': 1.2, 'mismatch.damping_scale': 1.25,
         'mismatch.area_scale': 1.1, 'mismatch.deadzone': 15e3, 'pma.area_slope': [0.15],
         'pma.friction.breakaway': [2.0], 'pma.friction.stiffness': [1.5e4],
         'noise.position': 1e-5, 'noise.velocity': 1e-3, 'noise.seed': 3}
EVERYTHING = Options(DEFAULT_FIT + ('area_slope', 'friction', 'time_constant', 'delay'))


@pytest.mark.slow
def test_valves_friction_and_slope_are_fitted_together():
    setup = read_setup(PARAMS)
    run, *_ = closed_loop([PARAMS, EXCITATION], PLANT, 25.0,
                          controller_overrides={'output.time_constant': 0.02,
                                                'output.delay': 0.005, **NOMINAL_GAINS},
                          time_constant=0.03, delay=0.005, step=0.001)
    result = identify([run], setup, EVERYTHING)
    value = {e.key: e.value for e in result.estimates}
    assert value['output.time_constant'] == pytest.approx(0.03, rel=0.1)
    assert value['output.delay'] == pytest.approx(0.005, abs=0.002)
    assert value['output.friction'] == pytest.approx(2.0, rel=0.2)
    assert value['output.friction_stiffness'] == pytest.approx(1.5e4, rel=0.2)
    assert value['output.area_slope'] == pytest.approx(0.15, rel=0.2)
    assert value['output.area'] == pytest.approx(1.1 * 1.33e-4, rel=0.03)
    for e in result.values('model.sections.stiffness'):
        assert e.value == pytest.approx(1.2 * 2200.0, rel=0.03), e.label
    assert result.r2_test.min() > 0.5
