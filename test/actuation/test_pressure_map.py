"""PMA actuation map: pressure <-> force round trips, venting, clamping, validation."""

import numpy as np
import pytest

from continuum_ctrl.params import ConfigError
from continuum_ctrl.actuation.pressure_map import ActuationMap, clamp_effort, force_from_pressure


def pressure_from_force(tau, area, deadzone, p_min, p_max):
    """`ActuationMap.pressure` of PMAs with these parameters, one per force."""
    tau = np.atleast_1d(np.asarray(tau, dtype=float))
    return ActuationMap(tau.size, area, deadzone, p_min, p_max).pressure(tau)


# an 11 mm ID PMA (continuum-model.md section 6): ~90 kPa dead zone, 5 bar operating pressure
AREA = np.pi * 5.5e-3 ** 2   # m^2
DEADZONE = 90e3              # Pa
P_MAX = 500e3                # Pa
F_MAX = AREA * (P_MAX - DEADZONE)  # N, about 39 N


def test_pressure_formula_and_round_trip_for_feasible_forces():
    tau = np.linspace(1e-3, F_MAX, 50)
    p = pressure_from_force(tau, AREA, DEADZONE, 0.0, P_MAX)
    np.testing.assert_allclose(p, tau / AREA + DEADZONE, rtol=1e-15)
    np.testing.assert_allclose(force_from_pressure(p, AREA, DEADZONE), tau, rtol=1e-12)


def test_pulling_vents_and_excess_saturates():
    p = pressure_from_force([-5.0, 0.0, 2 * F_MAX], AREA, DEADZONE, 0.0, P_MAX)
    np.testing.assert_array_equal(p, [0.0, 0.0, P_MAX])
    np.testing.assert_allclose(force_from_pressure(p, AREA, DEADZONE), [0.0, 0.0, F_MAX])


def test_force_is_zero_inside_dead_zone_and_linear_beyond():
    p = np.array([0.0, 50e3, DEADZONE, 200e3])
    np.testing.assert_allclose(force_from_pressure(p, AREA, DEADZONE),
                               [0.0, 0.0, 0.0, AREA * 110e3], rtol=1e-15)


def test_per_pma_parameters():
    area = np.array([1e-4, 2e-4, 3e-4])
    deadzone = np.array([0.0, 50e3, 100e3])
    tau = np.array([3.0, 3.0, 3.0])
    p = pressure_from_force(tau, area, deadzone, 0.0, 1e6)
    np.testing.assert_allclose(p, [30e3, 65e3, 110e3], rtol=1e-14)
    np.testing.assert_allclose(force_from_pressure(p, area, deadzone), tau, rtol=1e-12)


def test_minimum_pressure_above_dead_zone_gives_its_force():
    # p_min > deadzone: a small push or a pull gets p_min, which pushes area*(p_min - deadzone)
    p = pressure_from_force([0.1, -1.0], AREA, DEADZONE, 120e3, P_MAX)
    np.testing.assert_array_equal(p, [120e3, 120e3])


def test_clamp_effort_symmetric_limits():
    np.testing.assert_array_equal(clamp_effort([-5.0, 0.5, 9.0], [2.0, 2.0, np.inf]),
                                  [-2.0, 0.5, 9.0])


def test_map_clamped_effort_round_trips_exactly():
    rng = np.random.default_rng(7)
    pmas = ActuationMap(9, AREA, DEADZONE, 0.0, P_MAX)
    tau = rng.uniform(-2 * F_MAX, 2 * F_MAX, (200, 9))
    clamped = pmas.clamp_effort(tau, 30.0)
    assert clamped.min() == 0.0 and clamped.max() == 30.0
    np.testing.assert_allclose(pmas.force(pmas.pressure(clamped)), clamped, rtol=1e-12,
                               atol=1e-12)
    p = pmas.pressure(tau)
    assert np.all(p >= 0.0) and np.all(p <= P_MAX)
    low, high = pmas.force_range()
    np.testing.assert_allclose(high, F_MAX)
    np.testing.assert_array_equal(low, 0.0)


@pytest.mark.parametrize('kwargs, key', [
    (dict(area=0.0), 'output.area'),
    (dict(area=-1e-4), 'output.area'),
    (dict(area=[1e-4, 1e-4]), 'output.area'),
    (dict(area='big'), 'output.area'),
    (dict(deadzone=-1.0), 'output.deadzone'),
    (dict(deadzone=float('nan')), 'output.deadzone'),
    (dict(p_min=6e5), 'output.p_min'),
    (dict(p_max=float('inf')), 'output.p_max'),
])
def test_map_rejects_bad_parameters(kwargs, key):
    args = dict(area=AREA, deadzone=DEADZONE, p_min=0.0, p_max=P_MAX) | kwargs
    with pytest.raises(ConfigError, match=key.replace('.', r'\.')):
        ActuationMap(3, **args)


def test_the_compiled_pressure_map_is_the_formula_value_for_value():
    """``where(tau > 0, tau/area + deadzone, p_min)`` clamped, on rows of forces; NaN vents."""
    rng = np.random.default_rng(8)
    area, deadzone = rng.uniform(1e-5, 1e-4, 9), rng.uniform(0.0, 1e5, 9)
    p_min, p_max = rng.uniform(0.0, 1.5e5, 9), np.full(9, 6e5)
    pmas = ActuationMap(9, area, deadzone, p_min, p_max)
    tau = rng.normal(0.0, 30.0, (50, 9))
    tau[0] = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-300, -1e-300, 1e300, 5.0]
    with np.errstate(invalid='ignore'):
        expected = np.clip(np.where(tau > 0.0, tau / area + deadzone, p_min), p_min, p_max)
    np.testing.assert_array_equal(pmas.pressure(tau), expected)
    out = np.zeros(9)
    assert pmas.pressure(tau[7], out=out) is out
    np.testing.assert_array_equal(out, expected[7])
    with pytest.raises(ValueError, match='forces of 9 PMAs'):
        pmas.pressure(np.zeros(8))
