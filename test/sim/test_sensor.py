"""
The simulator's sensor (sim/sensor.py), without ROS: each trait alone, its settings, and the
samples `simulate_nodes` hands the loop.
"""

import numpy as np
import pytest

from continuum_ctrl.apps.node_pair import node_pair, plant_of
from continuum_ctrl.params import ConfigError
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.sim.sensor import Sensor, SensorSettings

STEP = 0.002
ARM = 'planar_2r.yaml'      # a fast plant: 1 ms steps, 500 Hz publications


def sensor(n=1, **traits):
    return Sensor(SensorSettings(step=STEP, **traits), n)


def published(s, true, hold=0.0, clock=False):
    """
    Record each row of `true` (k, n) as a plant step and publish it; return the samples.

    `clock`: the plant's clock runs from the first row (the bursts follow it).
    """
    out = []
    for k, q in enumerate(true):
        s.record(q, np.zeros_like(q))
        out.append(s.publish(k * STEP, k * STEP, k * STEP if clock else None))
    return out


def test_positions_are_rounded_to_the_resolution_after_the_noise():
    resolution = 1e-4
    true = np.linspace(0.0, 0.01, 400)[:, None] + np.zeros((1, 3))
    samples = published(sensor(3, quantization=resolution, noise_position=2e-5), true)
    q = np.array([s.q for s in samples])
    counts = q / resolution
    assert np.allclose(counts, np.round(counts), atol=1e-9)
    steps = np.unique(np.round(np.abs(np.diff(q, axis=0)) / resolution))
    assert set(steps) <= {0.0, 1.0, 2.0} and 1.0 in steps      # the step is visible
    assert np.max(np.abs(q - true)) < 0.5 * resolution + 5 * 2e-5
    # the noise differs per PMA, so the counts do too: it comes before the rounding
    assert np.any(q[:, 0] != q[:, 1])


@pytest.mark.parametrize('steps', [0, 1, 3, 7])
def test_the_delay_is_the_lag_of_the_largest_cross_correlation(steps):
    rng = np.random.default_rng(5)
    true = np.cumsum(rng.standard_normal(600))[:, None]      # a random walk, one PMA
    samples = published(sensor(delay_steps=steps), true)
    q = np.array([s.q[0] for s in samples])
    x, y = np.diff(true[:, 0]), np.diff(q)
    lags = range(0, 12)
    correlation = [np.dot(x[:len(x) - lag], y[lag:]) for lag in lags]
    assert int(np.argmax(correlation)) == steps
    # before the delay has passed the arm rested: the first state
    assert all(s.q[0] == true[0, 0] for s in samples[:steps + 1])


def test_stamps_hold_the_measurement_or_the_publication():
    true = np.zeros((5, 1))
    measured = published(sensor(delay_steps=2, jitter=0.001), true)
    publish = published(sensor(delay_steps=2, jitter=0.001, stamp='publish'), true)
    for k, (m, p) in enumerate(zip(measured, publish)):
        assert m.measured_at == pytest.approx((k - 2) * STEP)
        assert m.stamp == m.measured_at
        assert p.stamp == p.published and k * STEP <= p.published < k * STEP + 0.001


def test_dropped_samples_follow_the_drop_rate_and_are_counted():
    n, rate = 20000, 0.1
    s = sensor(drop=rate, seed=3)
    samples = published(s, np.zeros((n, 1)))
    lost = sum(sample is None for sample in samples)
    sigma = np.sqrt(n * rate * (1.0 - rate))
    assert abs(lost - n * rate) < 4.0 * sigma                 # binomial, 4 sigma
    assert s.dropped == lost and s.published == n - lost


def test_jitter_holds_each_publication_within_its_bound():
    jitter = 0.0015
    samples = published(sensor(jitter=jitter, seed=4), np.zeros((5000, 1)))
    holds = np.array([s.published - k * STEP for k, s in enumerate(samples)])
    assert holds.min() >= 0.0 and holds.max() < jitter
    assert holds.max() > 0.95 * jitter and holds.min() < 0.05 * jitter
    assert np.mean(holds) == pytest.approx(0.5 * jitter, rel=0.05)    # uniform
    assert all(s.stamp == s.measured_at for s in samples)    # the measurement's time


def test_without_velocities_the_velocity_is_none():
    assert all(s.qd is None for s in published(sensor(velocity=False), np.zeros((3, 2))))
    assert all(s.qd is not None for s in published(sensor(), np.zeros((3, 2))))


def test_losses_and_holds_leave_the_noise_and_the_seed_repeats_it():
    true = np.zeros((200, 2))
    plain = published(sensor(2, noise_position=1e-3, seed=9), true)
    lossy = published(sensor(2, noise_position=1e-3, seed=9, drop=0.3, jitter=0.001), true)
    kept = [(a.q, b.q) for a, b in zip(plain, lossy) if b is not None]
    assert 100 < len(kept) < 180 and all(np.array_equal(a, b) for a, b in kept)
    again = published(sensor(2, noise_position=1e-3, seed=9, drop=0.3, jitter=0.001), true)
    assert [s is None or s.published for s in again] == [s is None or s.published
                                                         for s in lossy]


def test_a_burst_has_its_noise_where_the_state_held_and_the_rest_is_unchanged():
    """`noise.burst_*`: the burst's std. dev. for states that held in it (the delay counted)."""
    true = np.zeros((3000, 3))
    delay = 5
    plain = published(sensor(3, noise_position=2e-5, seed=2, delay_steps=delay), true)
    burst = published(sensor(3, noise_position=2e-5, seed=2, delay_steps=delay,
                             bursts=((2.0, 4.0),), burst_position=2e-4), true, clock=True)
    held = np.array([s.measured_at for s in burst])
    inside = (held >= 2.0) & (held < 4.0)
    assert inside.sum() == 1000 and held[np.argmax(inside)] == pytest.approx(2.0)
    q, q_plain = np.array([s.q for s in burst]), np.array([s.q for s in plain])
    assert np.std(q[inside]) == pytest.approx(2e-4, rel=0.05)
    # the same draws, scaled: outside the burst the samples are those without one
    assert np.array_equal(q[~inside], q_plain[~inside])
    assert np.allclose(q[inside] * 0.1, q_plain[inside], atol=1e-18)


def test_a_burst_follows_the_plants_clock_from_its_start_not_the_time():
    """A node's plant starts at wall-clock time (1.8e9 s): its bursts count from there."""
    plant = plant_of(ARM, {'noise.position': 1e-5, 'noise.burst_start': [1.0],
                           'noise.burst_duration': 0.5, 'noise.burst_position': 1e-3})
    start = 1.8e9
    plant.advance(start)
    plant.command([1.0, 0.5], start)
    deviation, elapsed = [], []
    for k in range(1, 200):
        t = start + 0.01 * k
        plant.advance(t)
        deviation.append(plant.publish(t).q - plant.q)
        elapsed.append(plant.t - start)
    deviation, elapsed = np.array(deviation), np.array(elapsed)
    inside = (elapsed >= 1.0) & (elapsed < 1.5)
    assert inside.sum() == 50
    assert np.std(deviation[inside]) == pytest.approx(1e-3, rel=0.3)
    assert np.std(deviation[~inside]) == pytest.approx(1e-5, rel=0.3)


def test_the_burst_keys_parse_and_a_bad_one_names_itself():
    plant = plant_of(ARM, {'noise.burst_start': [1.0, 5.0], 'noise.burst_duration': 0.5,
                           'noise.burst_position': 1e-3})
    assert plant.settings.sensor.bursts == ((1.0, 1.5), (5.0, 5.5))
    with pytest.raises(ConfigError, match="'noise.burst_position'"):
        plant_of(ARM, {'noise.burst_start': [1.0], 'noise.burst_position': -1.0})


@pytest.mark.parametrize('key, value, message', [
    ('sensor.delay', 0.0015, 'whole number of plant steps'),
    ('sensor.jitter', 0.002, 'less than the publishing period'),
    ('sensor.drop', 1.5, ''),
    ('sensor.stamp', 'arrival', ''),
    ('sensor.velocity', 'no', ''),
    ('sensor.quantization', -1e-3, ''),
    ('sensor.rate', 1.0, ''),
])
def test_bad_sensor_settings_name_the_key(key, value, message):
    with pytest.raises(ConfigError, match=rf"'{key}'.*{message}"):
        plant_of(ARM, {key: value})


def test_the_loop_receives_each_sample_at_its_publication():
    """Lengths 4 ms late reach the loop exactly as the plant held them two ticks before."""
    runtime, plant = node_pair(ARM, simulator={'sensor.delay': 0.004, 'sensor.jitter': 0.0})
    log = simulate_nodes(runtime, plant, 1.0)
    assert np.array_equal(log.measured[2:], log.q[:-2])
    # jitter up to 1.9 ms: a sample due at a tick arrives after it, so the loop has the
    # previous one, except for the few holds short enough (none are 0)
    runtime, plant = node_pair(ARM, simulator={'sensor.jitter': 0.0019})
    log = simulate_nodes(runtime, plant, 1.0)
    assert np.array_equal(log.measured[2:], log.q[1:-1])
    assert plant.sensor.published == len(log.t) + 1 and plant.sensor.dropped == 0


def test_by_default_the_plant_publishes_its_own_state_at_its_time():
    plant = plant_of(ARM)
    plant.advance(0.0)
    plant.command([1.0, 0.5], 0.0)
    plant.advance(0.0105)
    sample = plant.publish(0.0105)
    assert sample.q is plant.q and sample.qd is plant.qd        # not even copied, as before
    assert sample.stamp == sample.measured_at == plant.t == pytest.approx(0.010)
    assert sample.published == 0.0105


def test_the_delay_ring_restarts_with_the_plant():
    """A reset (or a grid that restarts while waiting) leaves no state of before it."""
    plant = plant_of(ARM, {'sensor.delay': 0.005})
    plant.advance(0.0)
    plant.command([5.0, 5.0], 0.0)
    plant.advance(0.0205)
    q, _ = plant.measure()
    assert not np.array_equal(q, plant.q) and not np.array_equal(q, plant.settings.initial)
    plant.reset()
    for _ in range(2):
        q, qd = plant.measure()
        assert np.array_equal(q, plant.settings.initial) and not qd.any()
        plant.advance(0.03)                 # the clock restarts: the arm rests
