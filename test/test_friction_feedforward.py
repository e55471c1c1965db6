"""
The PMAs' friction feed-forward (`output.friction`, actuation/friction.py).

The kernel is odd in the reference's velocity, bounded by the level and reaches it once
sliding; the law adds it at the reference's velocity and nothing else changes; bad values
are one error naming the key; on a plant whose PMAs rub (a Maxwell-slip bank), knowing the
friction tracks better and the commands stay quiet. The fused tick's agreement is
test/test_fused_tick.py's.
"""

import numpy as np
import pytest

from command_bounds import assert_better_and_quiet, late_section_rms
from continuum_ctrl.actuation.friction import add_friction
from continuum_ctrl.node_pair import controller_loop, node_pair
from continuum_ctrl.params import ConfigError
from continuum_ctrl.sim.closed_loop import simulate_nodes

FILE = 'continuum_3section.yaml'
#: issue 40's plant (bench/quiet_loop.py's `friction` case): the mismatch options, an area
#: falling 15 % over the stroke and 2 N of Maxwell-slip friction per PMA
RUBBING = {'mismatch.stiffness_scale': 1.2, 'mismatch.damping_scale': 1.25,
           'mismatch.area_scale': 1.1, 'mismatch.deadzone': 15e3, 'pma.area_slope': [0.15],
           'pma.friction.breakaway': [2.0], 'pma.friction.stiffness': [1.5e4]}


def test_the_force_is_odd_bounded_and_reaches_the_level_once_sliding():
    level = np.array([2.0, 1.0, 0.5, 0.0])
    speeds = np.linspace(-0.05, 0.05, 201)
    forces = np.empty((speeds.size, level.size))
    for k, speed in enumerate(speeds):
        forces[k] = 0.0
        add_friction(forces[k], np.full(level.size, speed), level, 5e-4)
    np.testing.assert_allclose(forces, -forces[::-1], atol=1e-15)
    assert np.all(np.abs(forces) <= level)
    np.testing.assert_allclose(forces[-1], level, rtol=1e-12)
    assert np.all(forces[100] == 0.0)
    assert np.all(np.diff(forces[:, 0]) >= 0.0)         # it turns round without a step back


def test_no_friction_leaves_the_force_untouched_to_the_bit():
    tau = np.array([1.5, -2.25, 3.0])
    before = tau.copy()
    add_friction(tau, np.array([0.01, -0.02, 0.0]), np.zeros(3), 5e-4)
    assert np.array_equal(tau, before)


def test_the_law_adds_it_at_the_references_velocity_only():
    plain = controller_loop(FILE, {'gains.ki': [0.0]})
    rubbing = controller_loop(FILE, {'gains.ki': [0.0], 'output.friction': [2.0],
                                     'output.friction_velocity': 0.001})
    rng = np.random.default_rng(3)
    q, qd = 0.013 + 0.003 * rng.standard_normal(9), 0.01 * rng.standard_normal(9)
    q_des, qd_des, qdd_des = 0.013 + 0.003 * rng.standard_normal(9), \
        0.01 * rng.standard_normal(9), 0.1 * rng.standard_normal(9)
    without = plain.law(q, qd, q_des, qd_des, qdd_des).copy()
    with_friction = rubbing.law(q, qd, q_des, qd_des, qdd_des)
    np.testing.assert_allclose(with_friction - without, 2.0 * np.tanh(qd_des / 0.001),
                               rtol=1e-9, atol=1e-12)
    other = rubbing.law(q + 1e-3, qd + 0.05, q_des, qd_des, qdd_des) - \
        plain.law(q + 1e-3, qd + 0.05, q_des, qd_des, qdd_des)
    np.testing.assert_allclose(other, 2.0 * np.tanh(qd_des / 0.001), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize('file, overrides, message', [
    (FILE, {'output.friction': [-1.0]}, "'output.friction'.*must be >= 0"),
    (FILE, {'output.friction': [1.0, 2.0]}, "'output.friction'.*must have 1 or 9 entries"),
    (FILE, {'output.friction': [1.0], 'output.friction_velocity': 0.0},
     "'output.friction_velocity'.*must be > 0"),
    ('planar_2r.yaml', {'output.friction': [0.5]},
     "'output.friction'.*needs output.mode 'pressure'"),
])
def test_bad_friction_names_the_key(file, overrides, message):
    with pytest.raises(ConfigError, match=message):
        controller_loop(file, overrides)


def tracking(friction, duration=6.0):
    """Run the file's loop (map at the plant's slope) on RUBBING; late RMS per section."""
    runtime, plant = node_pair(FILE, {'output.area_slope': [0.15],
                                      'output.friction': [friction]},
                               {**RUBBING, 'engine': 'builtin'})
    return late_section_rms(simulate_nodes(runtime, plant, duration))


def test_knowing_the_friction_tracks_better_and_quietly():
    """
    At the file's 0.25 Hz sinusoid on the built-in plant, with 2 N of friction per PMA.

    Measured (12 s runs, late half, bench/quiet_loop.py): 0.146 / 0.160 / 0.145 mm without
    the feed-forward, 0.104 / 0.097 / 0.086 mm with it.
    """
    today, _, _ = tracking(0.0)
    known, t, command = tracking(2.0)
    print(f'\nlate RMS per section, mm: no feed-forward {np.round(1e3 * today, 3)}, '
          f'2 N {np.round(1e3 * known, 3)}')
    assert_better_and_quiet(today, known, t, command, 1.25)
