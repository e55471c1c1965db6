"""
The controller's force map with a falling area (`output.area_slope`): ``area (1 - c q / l_max)``.

The map inverts exactly at any length; the loop commands through it at the state the tick
starts from; the plant takes `output.area_slope` unless `pma.area_slope` says otherwise; bad
values are one error naming the key. The fused tick's agreement is
test/control/test_fused_tick.py's.
"""

import numpy as np
import pytest

from support.command_bounds import assert_better_and_quiet, late_section_rms
from continuum_ctrl.actuation.pressure_map import ActuationMap, area_factor
from continuum_ctrl.control.loop import ACTIVE
from continuum_ctrl.apps.node_pair import controller_loop, node_pair, plant_of
from continuum_ctrl.params import ConfigError
from continuum_ctrl.sim.closed_loop import simulate_nodes

FILE = 'continuum_3section.yaml'
AREA, DEADZONE, P_MAX, STROKE = 1.33e-4, 5e4, 5e5, 0.04
#: issue 40's plant (bench/quiet_loop.py's `area` case): the mismatch options and an area
#: falling 15 % over the stroke
FALLING = {'mismatch.stiffness_scale': 1.2, 'mismatch.damping_scale': 1.25,
           'mismatch.area_scale': 1.1, 'mismatch.deadzone': 15e3, 'pma.area_slope': [0.15]}


def test_the_map_at_a_length_inverts_exactly_and_falls_as_the_factor_says():
    rng = np.random.default_rng(40)
    slope = rng.uniform(0.0, 0.9, 9)
    pmas = ActuationMap(9, AREA, DEADZONE, 0.0, P_MAX, slope=slope, stroke=np.full(9, STROKE))
    for _ in range(50):
        q = rng.uniform(-0.005, STROKE, 9)
        area = pmas.area_at(q)
        np.testing.assert_allclose(area, AREA * area_factor(q, slope, STROKE), rtol=1e-15)
        tau = rng.uniform(0.0, 1.0, 9) * area * (P_MAX - DEADZONE)
        np.testing.assert_allclose(pmas.force(pmas.pressure(tau, area=area), area), tau,
                                   rtol=1e-13)
    at_full_stroke = pmas.area_at(np.full(9, STROKE))
    np.testing.assert_allclose(at_full_stroke, AREA * (1.0 - slope), rtol=1e-14)


def test_a_constant_area_is_the_nominal_map_itself():
    pmas = ActuationMap(9, AREA, DEADZONE, 0.0, P_MAX)
    assert pmas.area_at(np.full(9, 0.02)) is pmas.area
    assert not pmas.falloff().any()
    loop = controller_loop(FILE, {'output.area_slope': [0.0]})
    assert loop.settings.actuation.slope is None


def test_the_loop_commands_through_the_area_at_its_state():
    """
    No valve compensation: the pressure is the effort over the area at the measured q.

    The force range is the rest length's, so a force the shorter area cannot make at p_max
    is clamped there (as a force past it always was).
    """
    slope = 0.15
    overrides = {'output.area_slope': [slope], 'output.time_constant': 0.0,
                 'output.delay': 0.0, 'observer.type': 'none', 'reference.blend_time': 0.0}
    for fused in (True, False):
        loop = controller_loop(FILE, overrides, fused=fused)
        q = np.linspace(0.002, 0.03, 9)
        period = loop.period
        for k in range(20):
            loop.set_state(q, np.zeros(9), k * period, k * period)
            command = loop.tick(k * period)
        assert loop.status == ACTIVE
        pushing = loop.effort > 0.0
        area = AREA * (1.0 - slope * q / STROKE)
        expected = np.minimum(loop.effort / area + loop.settings.actuation.deadzone, P_MAX)
        assert (pushing & (expected < P_MAX)).sum() >= 3
        model_order = np.empty(9)
        model_order[loop.settings.order] = command
        np.testing.assert_allclose(model_order[pushing], expected[pushing], rtol=1e-12)


def test_the_plant_takes_the_controllers_slope_unless_its_own_is_given():
    assert plant_of(FILE, {'output.area_slope': [0.15]}).settings.pma.slope == pytest.approx(
        [0.15] * 9)
    own = plant_of(FILE, {'output.area_slope': [0.15], 'pma.area_slope': [0.05]})
    assert own.settings.pma.slope == pytest.approx([0.05] * 9)
    assert plant_of(FILE, {'output.area_slope': [0.15], 'pma.area_slope': [0.0]}).pma is None


@pytest.mark.parametrize('file, overrides, message', [
    (FILE, {'output.area_slope': [0.95]}, 'must be <= 0.9'),
    (FILE, {'output.area_slope': [-0.1]}, 'must be >= 0'),
    (FILE, {'output.area_slope': [0.1, 0.2]}, 'must have 1 or 9 entries'),
    ('planar_2r.yaml', {'output.area_slope': [0.1]}, "needs output.mode 'pressure'"),
    ('planar_2r.yaml', {'output.area_slope': [0.1], 'output.mode': 'pressure',
                        'output.area': [1e-4], 'output.p_max': 5e5},
     'applies to continuum arms'),
])
def test_bad_slopes_name_the_key(file, overrides, message):
    with pytest.raises(ConfigError, match=f"'output.area_slope'.*{message}"):
        controller_loop(file, overrides)


def tracking(slope, engine, duration=6.0):
    """Run the file's loop with `output.area_slope` `slope` on FALLING; late RMS, commands."""
    runtime, plant = node_pair(FILE, {'output.area_slope': [slope]},
                               {**FALLING, 'engine': engine, 'mujoco.discs': 8})
    return late_section_rms(simulate_nodes(runtime, plant, duration))


@pytest.mark.parametrize('engine', ['builtin', 'mujoco'])
def test_knowing_the_falling_area_tracks_better_and_quietly(engine):
    """
    At the file's 0.25 Hz sinusoid, the map at the plant's slope against today's constant map.

    Measured (8 s runs, late half, bench/quiet_loop.py): builtin 0.092 / 0.074 / 0.082 mm
    against 0.062 / 0.031 / 0.034 mm, each section lower and all of them 1.8 times.
    """
    today, _, _ = tracking(0.0, engine)
    known, t, command = tracking(0.15, engine)
    print(f'\n{engine}: late RMS per section, mm: c = 0 {np.round(1e3 * today, 3)}, '
          f'c = 0.15 {np.round(1e3 * known, 3)}')
    assert_better_and_quiet(today, known, t, command, 1.5)
