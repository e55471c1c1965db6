"""
The plant's PMA traits: a Maxwell-slip friction bank and an area that falls with extension.

The bank alone: its loop is ``2 sum f_e`` wide and its area is the energy its sliders
dissipate. In the plant, on both engines: a slow pressure triangle runs a force-length loop
whose width is the bank's plus the damping's ``2 D v`` (rate independent once the damping's
share is taken out), and under constant pressure a PMA with a falling area stretches as
``area (1 - c q / l_max) p = K q`` says.
"""

import numpy as np
import pytest

from continuum_ctrl.actuation.pressure_map import area_factor
from continuum_ctrl.apps.node_pair import plant_of
from continuum_ctrl.params import ConfigError
from continuum_ctrl.actuation.maxwell_slip import MaxwellSlip

FILE = 'continuum_3section.yaml'
AREA, STIFFNESS, DAMPING, STROKE = 1.33e-4, 2200.0, 30.0, 0.04
#: an ideal-valve, zero-gravity plant whose PMAs all stretch alike (no bending)
STRAIGHT = {'model.gravity': [0.0, 0.0, 0.0], 'actuator.time_constant': 0.0,
            'actuator.delay': 0.0, 'command_timeout': 10.0}
ENGINES = ['builtin', 'mujoco']


def triangle(amplitude, samples):
    """Return one cycle 0 -> A -> -A -> 0 of a triangle, `samples` per quarter, m."""
    ramp = np.linspace(0.0, amplitude, samples + 1)
    return np.concatenate([ramp, ramp[::-1][1:], -ramp[1:], -ramp[::-1][1:]])


def shoelace(x, y):
    """Return the area a closed polygon encloses, counter-clockwise positive."""
    return 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)


@pytest.mark.parametrize('samples', [50, 4000])
def test_the_banks_loop_is_twice_its_breakaway_wide_and_encloses_the_energy_it_dissipates(
        samples):
    """
    Two PMAs, three elements each (the second's scaled by 2), a +-3 mm triangle.

    After the first quarter every element slips, and from then on the force at q = 0 is
    ``+-sum f_e`` (the width exact at any sampling, the bank's update being exact between
    samples); the loop's area is ``4 sum f_e (A - f_e / k_e)``, which is the work of the
    force over the cycle and the energy the sliders dissipate, ``sum f_e |dz_e|``.
    """
    breakaway = np.array([[0.5, 1.0, 0.5], [1.0, 2.0, 1.0]])
    stiffness = np.array([[4e3, 2e4, 1e5], [8e3, 4e4, 2e5]])
    amplitude = 3e-3
    bank = MaxwellSlip(breakaway, stiffness)
    bank.reset(np.zeros(2))
    path = np.concatenate([triangle(amplitude, samples)] * 2)
    force, slip = [], []
    for q in path:
        force.append(bank.force(np.full(2, q)))
        slip.append(bank.slip.copy())
    force, slip = np.array(force), np.array(slip)
    second = slice(len(path) // 2, len(path))
    q, f = path[second], -force[second]                         # the force the bank holds
    at_zero = np.flatnonzero(q == 0.0)
    assert len(at_zero) == 3                                    # start, middle and end
    total = breakaway.sum(axis=1)
    assert np.allclose(f[at_zero[1]] - f[at_zero[0]], -2.0 * total, rtol=0, atol=1e-12)
    expected = 4.0 * np.sum(breakaway * (amplitude - breakaway / stiffness), axis=1)
    areas = np.array([abs(shoelace(q, f[:, i])) for i in range(2)])
    dissipated = np.sum(breakaway * np.abs(np.diff(slip[second], axis=0)).sum(axis=0), axis=1)
    assert np.allclose(dissipated, expected, rtol=1e-12)
    tolerance = 1e-5 if samples > 1000 else 0.02                # kinks between samples
    assert np.allclose(areas, expected, rtol=tolerance)
    assert np.allclose(areas[1], 2.0 * areas[0], rtol=tolerance * 2)


def loop_width(engine, period, friction):
    """
    Run a pressure triangle (50-400 kPa, `period` s) on every PMA; return the loop's width, N.

    The width: the pushing force (area p) on the way up minus the way down at the middle
    length, averaged over the PMAs, in the second cycle.
    """
    plant = plant_of(FILE, {**STRAIGHT, **friction, 'engine': engine})
    low, high = 5e4, 4e5
    times = np.arange(0.0, 2.0 * period, plant.settings.step)
    phase = (times / period) % 1.0
    pressure = low + (high - low) * (1.0 - np.abs(2.0 * phase - 1.0))
    q = []
    for t, p in zip(times, pressure):
        plant.command(np.full(9, p), t)
        plant.advance(t)
        q.append(plant.q.copy())
    q, force = np.array(q), AREA * pressure
    late = times >= period
    rising = late & (phase < 0.5)
    falling = late & (phase >= 0.5)
    middle = 0.5 * (q[late].min(axis=0) + q[late].max(axis=0))
    widths = [np.interp(middle[i], q[rising, i], force[rising])
              - np.interp(middle[i], q[falling, i][::-1], force[falling][::-1])
              for i in range(9)]
    return float(np.mean(widths)), float(np.std(widths))


#: 2 N of friction in one element at the largest stiffness the step allows
FRICTION = {'pma.friction.breakaway': [2.0], 'pma.friction.stiffness': [1.5e4]}


@pytest.mark.parametrize('engine', ENGINES)
def test_a_slow_pressure_triangle_runs_the_configured_loop_on_either_engine(engine):
    """
    The loop's width: the damping's share, which halves with the speed, plus 2 sum f = 4 N.

    The friction's share (the width less the frictionless plant's at the same speed) is 4 N
    at both speeds: rate independent.
    """
    bare = {period: loop_width(engine, period, {})[0] for period in (8.0, 16.0)}
    assert 0.2 < bare[8.0] < 0.4                                 # 2 D v, v = 5.3 mm/s
    assert bare[16.0] == pytest.approx(0.5 * bare[8.0], rel=0.05)
    for period in (8.0, 16.0):
        width, spread = loop_width(engine, period, FRICTION)
        assert spread < 0.02
        assert width - bare[period] == pytest.approx(4.0, rel=0.002)


@pytest.mark.parametrize('engine', ENGINES)
def test_a_falling_area_stretches_the_pma_as_its_force_map_says(engine):
    """
    Zero gravity, 300 kPa on every PMA, the area falling by 15 % over the 40 mm stroke.

    Statics: ``A (1 - c q / L) p = K q``, so ``q = A p / (K + A p c / L)``: 17.0 mm
    instead of the constant area's 18.1 mm (0.5 %).
    """
    pressure, slope = 3e5, 0.15
    plant = plant_of(FILE, {**STRAIGHT, 'engine': engine, 'pma.area_slope': [slope],
                            'mismatch.damping_scale': 10.0})
    for t in np.arange(0.0, 3.0, 0.01):
        plant.command(np.full(9, pressure), t)
        plant.advance(t)
    expected = AREA * pressure / (STIFFNESS + AREA * pressure * slope / STROKE)
    assert expected < 0.94 * AREA * pressure / STIFFNESS
    assert np.allclose(plant.q, expected, rtol=0.005)
    assert area_factor(expected, slope, STROKE) * AREA * pressure == pytest.approx(
        STIFFNESS * expected)


def test_per_pma_settings_reach_their_pma_in_joints_order():
    """A slope and a friction scale for one PMA named in `joints` act on that PMA alone."""
    joints = [f'section{i}_pma{j}' for i in (1, 2, 3) for j in (1, 2, 3)][::-1]
    slope, scale = [0.0] * 9, [0.0] * 9
    slope[0], scale[0] = 0.15, 1.0
    plant = plant_of(FILE, {'joints': joints, 'pma.area_slope': slope,
                            'pma.friction.scale': scale, **FRICTION})
    traits = plant.settings.pma
    assert traits.slope[8] == 0.15 and not traits.slope[:8].any()
    assert traits.breakaway[8, 0] == 2.0 and not traits.breakaway[:8].any()
    with np.errstate(all='raise'):
        for t in np.arange(0.0, 0.5, 0.01):
            plant.command(np.full(9, 2e5), t)
            plant.advance(t)
    force = plant.pma.force(np.zeros(9), plant.q + 1e-3)      # every slider 1 mm further
    assert force[8] == -2.0 and not force[:8].any()


def test_the_defaults_leave_the_pmas_ideal():
    """No `pma.*` key, or zeros: the plant skips the traits (its commands bit for bit)."""
    assert plant_of(FILE).pma is None
    assert plant_of(FILE, {'pma.area_slope': [0.0]}).pma is None


@pytest.mark.parametrize('overrides, key, message', [
    ({'pma.area_slope': [0.95]}, 'pma.area_slope', 'must be <= 0.9'),
    ({'pma.area_slope': [0.1, 0.2]}, 'pma.area_slope', 'must have 1 or 9 entries'),
    ({'pma.friction.breakaway': [2.0]}, 'pma.friction.stiffness', 'must be given with'),
    ({'pma.friction.breakaway': [2.0, 1.0], 'pma.friction.stiffness': [1e4]},
     'pma.friction.stiffness', 'one entry per element'),
    ({'pma.friction.breakaway': [0.0], 'pma.friction.stiffness': [1e4]},
     'pma.friction.breakaway', 'must be > 0'),
    ({'pma.friction.breakaway': [2.0], 'pma.friction.stiffness': [2e4]},
     'pma.friction.stiffness', 'must not exceed the PMA damping 30'),
    ({'pma.friction.scale': [-1.0]}, 'pma.friction.scale', 'must be >= 0'),
    ({'pma.friction.force': [2.0]}, 'pma.friction.force', 'is not a known parameter'),
])
def test_bad_pma_settings_name_their_key(overrides, key, message):
    with pytest.raises(ConfigError, match=f"'{key}'.*{message}"):
        plant_of(FILE, overrides)


def test_the_traits_need_pmas_on_a_continuum_arm():
    with pytest.raises(ConfigError, match="'pma.area_slope'.*output.mode 'pressure'"):
        plant_of('planar_2r.yaml', {'pma.area_slope': [0.1]})
