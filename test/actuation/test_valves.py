"""Valve dynamics of the simulated PMAs against the closed-form step response."""

import numpy as np
import pytest

from continuum_ctrl.params import ConfigError
from continuum_ctrl.actuation.valves import Actuator, PENDING_ROWS
from continuum_ctrl.sim.plant import Plant
from continuum_ctrl.apps.node_pair import plant_settings

P0, P1 = 0.5e5, 3.0e5


def step_response(t, p0, p1, time_constant, delay, max_rate):
    """
    Return the applied pressure at times `t` after a command step p0 -> p1 at t = 0.

    Dead time, then a ramp at `max_rate` (0: none) until the gap is ``T max_rate``, then the
    exponential of the lag.
    """
    s = np.asarray(t, dtype=float) - delay
    gap = abs(p1 - p0)
    sign = np.sign(p1 - p0)
    ramp = max(gap - time_constant * max_rate, 0.0) / max_rate if max_rate else 0.0
    left = gap if not max_rate else min(gap, time_constant * max_rate)
    tail = p1 - sign * left * np.exp(-np.maximum(s - ramp, 0.0) / time_constant)
    out = np.where(s < ramp, p0 + sign * max_rate * np.maximum(s, 0.0), tail)
    return np.where(s <= 0.0, p0, out)


@pytest.mark.parametrize('time_constant, delay, max_rate, down', [
    (0.02, 0.0, 0.0, False),        # the lag alone
    (0.03, 0.005, 0.0, False),      # lag and dead time
    (0.02, 0.0035, 4e6, False),     # slew-limited, a delay off the sampling grid
    (0.01, 0.002, 1e7, True),       # venting: the same shapes downwards
])
def test_actuator_follows_a_step_as_the_closed_form_says(time_constant, delay, max_rate,
                                                         down):
    p0, p1 = (P1, P0) if down else (P0, P1)
    valves = Actuator(time_constant, delay, max_rate, np.full(3, p0))
    valves.advance(-0.01)
    valves.command(np.full(3, p1), 0.0)
    # irregular sampling: the result may not depend on where the integration stops
    times = np.cumsum(np.random.default_rng(3).uniform(1e-4, 2e-3, 150)) - 0.005
    got = np.array([valves.advance(t)[0] for t in times])
    expected = step_response(times, p0, p1, time_constant, delay, max_rate)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6 * P1)
    if max_rate:
        rates = np.diff(got) / np.diff(times)
        assert np.max(np.abs(rates)) <= max_rate * (1 + 1e-9)
        assert np.max(np.abs(rates)) > 0.9 * max_rate     # the limit is reached


def integrated(time_constant, max_rate, p, commands, times, dt=1e-6):
    """Integrate ``dp/dt = clip((u - p)/T, -R, R)`` by Euler steps of `dt` s; rows at `times`."""
    rows, t, u = [], 0.0, p.copy()
    for end in times:
        while t < end - 1e-12:
            step = min(dt, end - t)
            switched = [values for switch, values in commands if switch <= t]
            u = switched[-1] if switched else u
            p = p + np.clip((u - p) / time_constant, -max_rate, max_rate) * step
            t += step
        rows.append(p)
    return np.array(rows)


@pytest.mark.parametrize('time_constant, max_rate', [(0.02, 0.0), (0.0, 0.0), (0.02, 4e6)])
def test_pressures_ahead_are_those_advance_reaches(time_constant, max_rate):
    """
    `pressures_at` sees the pending commands act as `advance` does, and changes nothing.

    With a lag, both agree with the valve equation integrated in small Euler steps.
    """
    rng = np.random.default_rng(8)
    delay = 0.0035
    valves = Actuator(time_constant, delay, max_rate, np.full(3, P0))
    valves.advance(0.0)
    commands = [(1e-3 * k, rng.uniform(P0, P1, 3)) for k in range(6)]
    for t, values in commands:        # 1 ms apart, pending up to 3.5 ms ahead
        valves.command(values, t)
    valves.advance(4e-3)
    # from the clock on, at the pending switch times (4.5 to 8.5 ms) and between them
    times = np.sort(np.concatenate(([4e-3, 5.5e-3, 6.5e-3],
                                    4e-3 + np.cumsum(rng.uniform(1e-4, 2e-3, 12)))))
    pending = valves.pending
    ahead = valves.pressures_at(times)
    assert valves.pending == pending and valves.t == 4e-3
    expected = np.array([valves.advance(t).copy() for t in times])
    np.testing.assert_allclose(ahead, expected, rtol=1e-12)
    assert np.ptp(expected[:, 0]) > 0.1 * (P1 - P0)         # the pressures moved
    if time_constant > 0.0:
        slewing = max_rate if max_rate > 0.0 else np.inf
        reference = integrated(time_constant, slewing, np.full(3, P0),
                               [(t + delay, values) for t, values in commands], times)
        np.testing.assert_allclose(ahead, reference, rtol=1e-4)


def continuum_plant_settings(**actuator):
    """The continuum config's plant (CoG model, 1 ms step) with only the valves given."""
    valves = {'time_constant': 0.0, 'delay': 0.0, 'max_rate': 0.0, **actuator}
    return plant_settings('continuum_3section.yaml', {
        'step': 0.001, 'model.type': 'continuum_cog',
        **{f'actuator.{key}': value for key, value in valves.items()}})


def test_plant_applies_the_lagged_pressure_and_the_defaults_change_nothing():
    assert Plant(continuum_plant_settings()).valves is None          # default: today's plant
    lag, delay = 0.02, 0.005
    plant = Plant(continuum_plant_settings(time_constant=lag, delay=delay, max_rate=2e7))
    plant.command(np.full(9, P1), 0.0)
    plant.advance(0.0)
    applied, forces, times = [], [], []
    for k in range(1, 80):
        plant.advance(k * 1e-3 + 1e-9)                    # whole steps: the plant's time
        times.append(plant.t)
        applied.append(plant.valves.pressure[0])
        forces.append(plant.effort(plant.t)[0])
    expected = step_response(times, 0.0, P1, lag, delay, 2e7)
    np.testing.assert_allclose(applied, expected, atol=1e-6 * P1)
    np.testing.assert_allclose(forces, 1.33e-4 * expected, atol=1e-6 * 1.33e-4 * P1)
    assert applied[3] == 0.0 and applied[-1] > 0.97 * P1   # dead time, then the lag


def test_plant_vents_through_the_valves_when_commands_stop():
    plant = Plant(continuum_plant_settings(time_constant=0.02))
    plant.advance(0.0)
    for k in range(21):                 # fresh commands up to 0.2 s
        plant.command(np.full(9, P1), 0.01 * k)
        plant.advance(0.01 * k)
    assert np.allclose(plant.valves.pressure, P1, rtol=1e-3)
    for k in range(21, 33):
        plant.advance(0.01 * k)         # stale from 0.3 s (command_timeout 0.1 s) on
    expected = step_response(plant.t - 0.3, P1, 0.0, 0.02, 0.0, 0.0)
    np.testing.assert_allclose(plant.valves.pressure, expected, rtol=1e-3)
    assert expected < 0.4 * P1


def test_valve_keys_are_checked():
    with pytest.raises(ConfigError, match="'actuator.delay'"):
        continuum_plant_settings(delay=-0.1)
    with pytest.raises(ConfigError, match="'actuator.lag'"):
        continuum_plant_settings(lag=0.1)
    with pytest.raises(ConfigError, match="'actuator.time_constant'.*'pressure'"):
        plant_settings('planar_2r.yaml', {'actuator.time_constant': 0.02})


def test_a_long_dead_time_keeps_every_command_in_order():
    """More commands pending than the rows kept at first (PENDING_ROWS): each acts in turn."""
    valves = Actuator(0.0, 0.2, 0.0, np.zeros(2))
    valves.advance(0.0)
    count = 3 * PENDING_ROWS
    for k in range(count):
        valves.command(np.full(2, float(k + 1)), 1e-3 * k)
    assert valves.pending == count
    seen = [valves.advance(0.2 + 1e-3 * k + 5e-4)[0] for k in range(count)]
    assert seen == [float(k + 1) for k in range(count)]
    assert valves.pending == 0
