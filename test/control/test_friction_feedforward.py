"""
The PMAs' friction feed-forward (`output.friction`): a Maxwell-slip element on the reference.

The law pushes against the force of a Maxwell-slip bank (actuation/maxwell_slip.py, the
simulator's own model) that the reference drives: it adds exactly that force and nothing
else, turns round over ``2 friction / stiffness`` of the reference's travel, holds its force
at a held pose, restarts relaxed at activation; bad values are one error naming the key; on
a plant whose PMAs rub, knowing the friction tracks better and the commands stay quiet. The
fused tick's agreement is test/control/test_fused_tick.py's.
"""

import numpy as np
import pytest

from support.command_bounds import assert_better_and_quiet, late_section_rms
from continuum_ctrl.actuation.maxwell_slip import MaxwellSlip
from continuum_ctrl.apps.node_pair import controller_loop, node_pair
from continuum_ctrl.params import ConfigError
from continuum_ctrl.sim.closed_loop import simulate_nodes

FILE = 'continuum_3section.yaml'
#: issue 40's plant (bench/quiet_loop.py's `friction` case): the mismatch options, an area
#: falling 15 % over the stroke and 2 N of Maxwell-slip friction per PMA at 15 kN/m
RUBBING = {'mismatch.stiffness_scale': 1.2, 'mismatch.damping_scale': 1.25,
           'mismatch.area_scale': 1.1, 'mismatch.deadzone': 15e3, 'pma.area_slope': [0.15],
           'pma.friction.breakaway': [2.0], 'pma.friction.stiffness': [1.5e4]}
FRICTION, STIFFNESS = 2.0, 1.5e4


def laws():
    """Return the file's law without integral action, plain and with the friction."""
    plain = controller_loop(FILE, {'gains.ki': [0.0]})
    rubbing = controller_loop(FILE, {'gains.ki': [0.0], 'output.friction': [FRICTION],
                                     'output.friction_stiffness': [STIFFNESS]})
    return plain.law, rubbing.law


def test_the_law_pushes_against_a_bank_the_reference_drives_and_nothing_else():
    plain, rubbing = laws()
    twin = MaxwellSlip(np.full((9, 1), FRICTION), np.full((9, 1), STIFFNESS))
    start = np.full(9, 0.013)
    rubbing.friction.reset(start)
    twin.reset(start)
    rng = np.random.default_rng(3)
    q_des = start.copy()
    for _ in range(50):
        q_des += 1e-4 * rng.standard_normal(9)
        q, qd = q_des + 1e-4 * rng.standard_normal(9), 0.01 * rng.standard_normal(9)
        qd_des, qdd_des = 0.01 * rng.standard_normal(9), 0.1 * rng.standard_normal(9)
        without = plain(q, qd, q_des, qd_des, qdd_des).copy()
        added = rubbing(q, qd, q_des, qd_des, qdd_des) - without
        np.testing.assert_allclose(added, -twin.force(q_des), rtol=1e-12, atol=1e-12)
        assert np.all(np.abs(added) <= FRICTION + 1e-12)


def test_it_turns_round_over_twice_the_play_and_holds_at_a_held_pose():
    _, law = laws()
    bank = law.friction
    play = FRICTION / STIFFNESS
    bank.reset(np.zeros(9))
    assert np.all(bank.move(np.full(9, 3 * play)) == -FRICTION)      # sliding out: push
    halfway = -bank.move(np.full(9, 2 * play))
    np.testing.assert_allclose(halfway, 0.0, atol=1e-12)             # one play back: none
    np.testing.assert_allclose(-bank.move(np.full(9, play)), -FRICTION, rtol=1e-12)
    held = [-bank.move(np.full(9, play)).copy() for _ in range(3)]
    np.testing.assert_allclose(held, -FRICTION, rtol=1e-12)          # held where it stopped


def test_activation_restarts_it_relaxed_at_the_measured_pose():
    loop = controller_loop(FILE, {'output.friction': [FRICTION]})
    loop.law.friction.slip[:] = 0.5
    pose = np.full(9, 0.012)
    for k in range(loop.settings.resume_count):
        loop.set_state(pose, np.zeros(9), 0.002 * k)
    np.testing.assert_array_equal(loop.law.friction.slip[:, 0], pose)


@pytest.mark.parametrize('file, overrides, message', [
    (FILE, {'output.friction': [-1.0]}, "'output.friction'.*must be >= 0"),
    (FILE, {'output.friction': [1.0, 2.0]}, "'output.friction'.*must have 1 or 9 entries"),
    (FILE, {'output.friction': [1.0], 'output.friction_stiffness': [0.0]},
     "'output.friction_stiffness'.*must be > 0"),
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
    the feed-forward, 0.073 / 0.066 / 0.041 mm with it.
    """
    today, _, _ = tracking(0.0)
    known, t, command = tracking(FRICTION)
    print(f'\nlate RMS per section, mm: no feed-forward {np.round(1e3 * today, 3)}, '
          f'2 N {np.round(1e3 * known, 3)}')
    assert_better_and_quiet(today, known, t, command, 1.6)
