"""
Learning from repetition (control/ilc.py, control/repetition.py).

The learner runs against a known linear plant: one mass on a spring and damper under the
computed-torque law with the passive forces at the reference and integral action, the
model 20 % softer than the plant. Its learnt force enters where the loop adds it and its
error is recorded as the ticks record it; between periods it learns (`step`). A periodic
reference makes the lifted system circulant: the DFT diagonalises it, and the change of the
error from one period to the next contracts by ``|Q (1 - gain Z_model G_plant)|`` at the
reference's frequency, which the test computes and compares.
"""

import dataclasses

import numpy as np
import pytest

from continuum_ctrl.control.ilc import FROZEN, IlcSettings, IterativeLearning, LEARNING, PAUSED
from continuum_ctrl.control.reference_manager import Anchored
from continuum_ctrl.control.references import Hold, Multisine, Sinusoid, Waypoints
from continuum_ctrl.control.repetition import common_period, repetition

MASS, DAMPING, STIFFNESS = 0.05, 2.0, 300.0      # the model: kg, N s/m, N/m
PLANT = (MASS, DAMPING, 1.2 * STIFFNESS)         # the arm: 20 % stiffer than its model
KP, KD, KI = 2000.0, 60.0, 500.0
TICK = 1e-3


class Spring:
    """The model: a mass on a spring and damper (the interface the learner reads)."""

    n = 1
    has_passive_forces = True

    def mass_matrix(self, q):
        return np.array([[MASS]])

    def passive_forces(self, q, qd):
        return STIFFNESS * np.asarray(q) + DAMPING * np.asarray(qd)


def settings(**values):
    return IlcSettings(**{'enable': True, 'cutoff': 4.0, 'lead': 0.0, **values})


def learner(ilc_settings, reference=None):
    learning = IterativeLearning(Spring(), TICK)
    learning.configure(ilc_settings, [KP], [KD], [KI], np.array([50.0]), 0.0, 0.0)
    reference = reference or Sinusoid(0.0, 0.01, 1.0)
    learning.follow(Anchored(reference, 0.0, reference.sample(0.0)[0],
                             reference.sample(0.0)[1], 0.0, np.array([-1.0]), np.array([1.0])))
    return learning


def run(learning, periods, disturbance=None, until=None):
    """
    Run the closed loop over `periods` s; return the error (periods, ticks per period).

    `until(t)`: the end of the loop's saturation hold at `t` (s), as the loop hands it to
    `fade` after each tick.
    """
    mass, damping, stiffness = PLANT
    reference = learning._anchored.reference
    x = np.array(reference.sample(0.0)[0])
    v, integral = np.array(reference.sample(0.0)[1]), 0.0
    ticks = int(round(1.0 / TICK))
    errors = np.zeros((periods, ticks))
    total = np.zeros(1)
    for k in range(periods * ticks):
        t = k * TICK
        q_des, qd_des, qdd_des = reference.sample(t)
        total[:] = (MASS * (qdd_des - KD * (v - qd_des) - KP * (x - q_des))
                    + STIFFNESS * q_des + DAMPING * qd_des + integral)
        learning.now = t
        learning.add(total)
        if disturbance is not None:
            total += disturbance(t)
        learning.record(t, t, x, q_des, qd_des)
        errors.flat[k] = (q_des - x)[0]
        if until is not None:
            learning.fade(t, until(t))
        integral += KI * (q_des - x)[0] * TICK
        for _ in range(10):         # the plant, 10 semi-implicit steps per tick
            v = v + TICK / 10 * (total - stiffness * x - damping * v) / mass
            x = x + TICK / 10 * v
        learning.step()             # as the runtime does between ticks
    return errors


def rms(errors):
    return np.sqrt(np.mean(errors ** 2, axis=-1))


def test_the_error_contracts_per_period_at_the_rate_the_lifted_system_gives():
    gain = 0.5
    errors = run(learner(settings(gain=gain)), 8)
    w = 2.0 * np.pi
    model = -w ** 2 * MASS + 1j * w * (DAMPING + MASS * KD) + STIFFNESS + MASS * KP + KI / (1j * w)
    mass, damping, stiffness = PLANT
    plant = -w ** 2 * mass + 1j * w * (damping + MASS * KD) + stiffness + MASS * KP + KI / (1j * w)
    theory = abs(1.0 - gain * model / plant)      # Q passes the period's harmonics below 4 Hz
    changes = rms(np.diff(errors[2:], axis=0))
    measured = changes[1:] / changes[:-1]
    assert theory == pytest.approx(0.57, abs=0.05)
    np.testing.assert_allclose(measured, theory, rtol=0.05)
    assert rms(errors[-1]) < 0.05 * rms(errors[1])


def test_the_q_filter_keeps_a_disturbance_that_does_not_repeat_out():
    force = np.random.default_rng(3).normal(0.0, 2.0, 8001)       # N, white, per tick

    def noisy(**values):
        return run(learner(settings(**values)), 8, lambda t: force[int(round(t / TICK))])
    quiet, filtered, unfiltered = (noisy(enable=False), noisy(cutoff=4.0, settled_gain=0.5),
                                   noisy(cutoff=200.0, settled_gain=0.5))
    # what does not repeat: the error less its mean over the last periods
    residue = [rms((e[-5:] - e[-5:].mean(axis=0)).ravel())
               for e in (quiet, filtered, unfiltered)]
    assert residue[1] < 1.1 * residue[0]
    assert residue[2] > 1.15 * residue[1]
    assert rms(filtered[-5:].mean(axis=0)) < 0.5 * rms(quiet[-5:].mean(axis=0))   # learnt


def test_a_settled_learning_plays_back_less_of_what_does_not_repeat():
    force = np.random.default_rng(5).normal(0.0, 0.5, 40001)      # N, white, per tick

    def noisy(settled_gain):
        learning = learner(settings(gain=0.9, settled_gain=settled_gain, cutoff=40.0))
        errors = run(learning, 40, lambda t: force[int(round(t / TICK))])
        return learning, errors
    (constant, kept), (lowered, settled) = noisy(0.9), noisy(0.2)
    assert constant.gain == 0.9 and lowered.gain == 0.2
    said = [text for _, text in lowered.events if 'settled' in text]
    assert len(said) == 1 and 'gain 0.2' in said[0]
    # both learnt the repeating error away at the full gain first
    np.testing.assert_allclose(rms(kept[:5]), rms(settled[:5]), rtol=1e-9)
    assert rms(kept[4]) < 0.4 * rms(kept[0])
    # what does not repeat, learnt at gain g, is played back: its variance x 2 / (2 - g)
    in_band = [rms(e[-20:] - e[-20:].mean(axis=0)).mean() for e in (kept, settled)]
    theory = np.sqrt((2.0 - 0.2) / (2.0 - 0.9))
    assert in_band[0] / in_band[1] == pytest.approx(theory, rel=0.15)


def test_a_saved_table_reloads_and_learns_nothing_new(tmp_path):
    path = str(tmp_path / 'table.npz')
    first = learner(settings(file=path))
    learnt = run(first, 8)
    second = learner(settings(file=path))
    second.step()                                   # loads, off the loop thread
    assert second.events[-1] == ('info', f'ilc.file {path}: learnt table loaded')
    table = second.tables[second.select[0]].copy()
    again = run(second, 2)
    assert rms(again[0]) < 1.5 * rms(learnt[-1])
    assert rms(again[0]) < 0.1 * rms(learnt[0])
    change = np.abs(second.tables[second.select[0]] - table).max()
    assert change < 0.05 * np.abs(table).max()
    other = learner(settings(file=path), Sinusoid(0.0, 0.01, 0.5))
    other.step()
    assert other.events[-1][0] == 'warn' and 'refused' in other.events[-1][1]
    assert not np.any(other.tables)


def test_a_table_at_its_bound_is_clipped_and_said_once():
    # the stiffer plant needs 0.6 N at 1 Hz: a 0.2 N bound clips it, 50 N does not
    bounded = learner(settings())
    bounded.limit = np.array([0.2])
    run(bounded, 6)
    assert np.abs(bounded.tables).max() == pytest.approx(0.2)
    told = [level for level, text in bounded.events if 'ilc.limit' in text]
    assert told == ['warn']
    free = learner(settings())
    run(free, 6)
    assert not any('ilc.limit' in text for _, text in free.events)


def test_the_learning_freezes_at_the_best_table_when_the_error_grows():
    learning = learner(settings(lead=0.5, growth=1.2))     # half a period late: a sign flip
    errors = run(learning, 12)
    assert learning.state == FROZEN
    assert any(level == 'warn' and 'frozen' in text for level, text in learning.events)
    assert rms(errors[-1]) <= 1.3 * min(rms(errors[1:]))


def push(t):
    return 10.0 if 4.3 <= t < 4.5 else 0.0     # N, once, in the 5th period


def test_a_push_is_skipped_and_the_learning_resumes():
    """
    A push in the 5th period: the periods after it are never worse than without learning
    (learnt from, the push had made the next one twice as bad: 4.0 against 2.0 mm); its
    period and the next, far above the best, are skipped (not frozen: a table frozen then
    stays at the 5th period's error), and the learning resumes below it.
    """
    learning = learner(settings())
    learnt, unlearnt = run(learning, 12, push), run(learner(settings(enable=False)), 12, push)
    assert np.all(rms(learnt[5:]) < rms(unlearnt[5:]))
    said = [text for _, text in learning.events]
    assert sum('learning paused' in text for text in said) == 2     # skipped; best table back
    assert sum('learning resumed' in text for text in said) == 1
    assert learning.state == LEARNING
    assert rms(learnt[-1]) < 0.3 * rms(learnt[3]) < 0.1 * rms(unlearnt[-1])


def test_a_saturated_trial_fades_the_table_and_is_skipped():
    """
    While the loop's saturation hold lasts (to 4.6 s) the table adds nothing, then comes
    back over 0.5 s; the trials it faded are skipped without putting back the best table,
    and the next, clean, resumes the learning from the table it had.
    """
    learning = learner(settings())
    shares = []

    def until(t):
        shares.append(learning.timing[-1])     # the share the tick at `t` added
        return 4.6 if t >= 4.3 else -np.inf
    errors = run(learning, 10, push, until)
    assert shares[4200] == shares[5200] == 1.0
    assert shares[4400] == 0.0 and shares[4850] == pytest.approx(0.5, abs=0.01)
    said = [text for _, text in learning.events]
    assert [text for text in said if 'saturated' in text or 'table' in text] == [
        'ilc: a disturbed trial (the effort saturated): not learnt from, learning paused']
    assert sum('learning resumed' in text for text in said) == 1
    assert learning.state == LEARNING and rms(errors[-1]) < 0.5 * rms(errors[3])


def test_it_never_acts_on_a_reference_that_does_not_repeat():
    learning = learner(settings(), Hold([0.0]))
    assert not learning.acting
    total = np.ones(1)
    learning.add(total)
    assert total[0] == 1.0
    learning = learner(settings(), Sinusoid(0.0, 0.01, 1.0))
    assert learning.acting and learning.state == LEARNING
    learning.follow(Anchored(Sinusoid(0.0, 0.01, 0.7), 0.0, [0.0], [0.0], 0.0,
                             np.array([-1.0]), np.array([1.0])))
    assert learning.acting and learning.history == []


def test_common_periods_and_the_multisine_line():
    assert common_period([1.0, 0.5, 0.25], 10.0) == pytest.approx(4.0)
    assert common_period([1.0, 1.5], 10.0) == pytest.approx(2.0)
    assert common_period([1.0, np.sqrt(2.0)], 10.0) is None
    assert repetition(Multisine(0.0, 0.01, (0.2, 3.0), n=9), 10.0) is None     # 25 s
    assert repetition(Multisine(0.0, 0.01, (0.2, 3.0), n=9), 30.0).period == pytest.approx(25.0)
    assert repetition(Multisine(0.0, 0.01, (0.5, 4.0), components=2, n=4), 10.0).period == \
        pytest.approx(2.0)
    times, points = np.array([0.0, 0.5, 1.0]), np.array([[0.0], [0.01], [0.02]])
    sent = [repetition(Waypoints(times, np.vstack(([start], points[1:]))), 10.0)
            for start in (0.0, 0.001)]
    assert sent[0].key == sent[1].key and not sent[0].periodic
    late = repetition(Waypoints(times - [0.0, 0.003, 0.003], points), 10.0)    # a stamp 3 ms old
    assert late.key == sent[0].key and late.start == pytest.approx(0.497)
    assert late.period == sent[0].period == pytest.approx(0.5)
    assert repetition(Waypoints(times, 2 * points), 10.0).key != sent[0].key


@pytest.mark.parametrize('fused', [True, False])
def test_the_loop_learns_a_one_hertz_sinusoid_on_the_simulated_arm(fused):
    from continuum_ctrl.apps.node_pair import node_pair
    from continuum_ctrl.sim.closed_loop import simulate_nodes
    runtime, plant = node_pair('continuum_3section.yaml', {
        'reference.frequency': [1.0], 'reference.blend_time': 1.0, 'ilc.enable': True,
        'ilc.cutoff': 2.5}, {'mismatch.stiffness_scale': 1.2, 'mismatch.deadzone': 15e3})
    loop = runtime.loop
    if not fused:
        loop.fused = None
    fed = []        # (t, the learnt stiffness's window) at the first tick it held

    def watch(k, t):
        if loop.integral.frozen and not fed:
            fed.append((t, loop.integral.window.copy()))
    log = simulate_nodes(runtime, plant, 7.0, after_tick=watch)
    error = (log.q - log.q_des)[log.t >= 1.0 + log.t[np.argmax(log.active)]]
    per = [np.sqrt(np.mean(error[k * 500:(k + 1) * 500] ** 2)) for k in range(5)]
    assert per[-1] < 0.5 * per[0]
    assert loop.ilc.state == LEARNING and len(loop.ilc.history) >= 4
    # the law's learnt stiffness learnt until the first table, and holds under the tables
    t_fed, window = fed[0]
    assert t_fed < 4.0 and loop.integral.frozen
    assert np.all(window[0] > 0.0) and np.any(loop.integral.stiffness() != 0.0)
    np.testing.assert_array_equal(loop.integral.window, window)


def test_a_trajectory_sent_again_learns_per_trial():
    path = Waypoints([0.0, 0.05, 0.45, 0.85], [[0.0], [0.0], [0.01], [0.0]])
    learning = learner(settings(), path)
    trials = []
    for _ in range(6):
        learning.follow(Anchored(path, 0.0, [0.0], [0.0], 0.0, np.array([-1.0]),
                                 np.array([1.0])))     # sent again: the same key, kept
        trials.append(rms(run(learning, 1)[0, 50:850]))    # from the first point sent on
    assert learning.repeats.periodic is False and len(learning.history) == 6
    assert trials[-1] < 0.2 * trials[0]


def test_a_panda_learns_a_stamped_trajectory_sent_again():
    """
    The Panda (links 20 % heavier) sent one 2 s trajectory every 2.5 s, each read as the
    controller node reads a ~/joint_trajectory message stamped 1-3 ms before it arrives
    (ros/conversion.py) and handed to the runtime: one learning over the trials, the error
    falling (bench/ilc_trials.py on MuJoCo: 0.0086 to 0.0008 rad over 11 trials).
    """
    from types import SimpleNamespace
    from continuum_ctrl.apps.node_pair import node_pair
    from continuum_ctrl.ros.conversion import trajectory_arrays
    from continuum_ctrl.sim.closed_loop import simulate_nodes
    runtime, plant = node_pair('panda.yaml', {'reference.type': 'hold', 'ilc.enable': True},
                               {'mismatch.mass_scale': 1.2})
    names, start = list(runtime.loop.settings.joints), plant.q.copy()
    times = np.arange(1, 21) * 0.1
    positions = start + 0.4 * np.outer(np.sin(np.pi * times / 2.0) ** 2, np.ones(7))
    points = [SimpleNamespace(positions=list(p), velocities=[], accelerations=[],
                              time_from_start=SimpleNamespace(sec=0, nanosec=0))
              for p in positions]
    for point, t in zip(points, times):
        point.time_from_start.sec, point.time_from_start.nanosec = int(t), round(t % 1 * 1e9)
    late = iter(np.random.default_rng(5).uniform(0.001, 0.003, 10))
    arrivals = 1.0 + 2.5 * np.arange(6)

    def send(k, t):
        if np.any(np.abs(arrivals - t) < 1e-4):
            stamp = t - next(late)
            msg = SimpleNamespace(joint_names=names, points=points, header=SimpleNamespace(
                stamp=SimpleNamespace(sec=int(stamp), nanosec=int(stamp % 1 * 1e9))))
            runtime.follow(*trajectory_arrays(msg, names, stamp - t), t=t)
    log = simulate_nodes(runtime, plant, 1.0 + 2.5 * 6, after_tick=send)
    per = [rms((log.q - log.q_des)[(log.t >= a) & (log.t < a + 2.0)].ravel()) for a in arrivals]
    assert len(runtime.loop.ilc.history) == 6           # one learning, never started over
    assert per[-1] < 0.5 * per[1], per        # 0.0037 to 0.0016 rad, learning 4 trials


def test_a_tip_circle_learns_per_turn():
    from continuum_ctrl.apps.node_pair import node_pair
    from continuum_ctrl.params.launch_description import arm_files
    from continuum_ctrl.sim.closed_loop import simulate_nodes
    runtime, plant = node_pair(arm_files('continuum_task'), {
        'ilc.enable': True, 'reference.tip_frequency': 1.0}, {})
    try:
        log = simulate_nodes(runtime, plant, 8.0)
    finally:
        runtime.close()
    repeats = runtime.loop.ilc.repeats
    assert repeats.periodic and repeats.period == pytest.approx(1.0)
    assert repeats.start > 0.0 and repeats.settle > 0.0     # the move to the circle, its ramp
    per = [rms((log.q - log.q_des)[(log.t >= k) & (log.t < k + 1)].ravel()) for k in (3, 7)]
    assert per[1] < 0.3 * per[0]


def test_a_trial_with_single_states_missed_is_learnt_and_one_with_a_hole_is_said():
    # through the nodes a tick now and then takes no new state (two arrived between two
    # ticks): a quarter of trial 1's times unrecorded, one at a time, is interpolated over
    # and learnt; a starved loop's 50 ms without a tick in trial 2 is not learnt, and said
    learning = learner(settings())
    reference = learning._anchored.reference
    ticks = int(round(1.0 / TICK))
    for k in range(4 * ticks):
        t = k * TICK
        if (ticks <= k < 2 * ticks and k % 4 == 0) or 2.3 <= t < 2.35:
            continue
        q_des, qd_des, _ = reference.sample(t)
        learning.record(t, t, q_des + 1e-4, q_des, qd_des)
        learning.step()
    said = [text for _, text in learning.events if 'not learnt' in text]
    assert len(said) == 1 and 'trial 2 not learnt from: 50 ms' in said[0], learning.events
    assert learning.history == [pytest.approx(1e-4)] * 2


def drift(per_period):
    """
    Return a repeating force (N) the learnt table does not fit, from the 6th period on.

    It grows `per_period` x per period: a plant that drifted (1: it then holds steady).
    """
    return lambda t: 0.0 if t < 5.0 else \
        0.5 * per_period ** (t // 1.0 - 5.0) * np.sin(2.0 * np.pi * t + 1.0)


@pytest.mark.parametrize('per_period, resumes', [(1.0, True), (2.0, False)])
def test_a_pause_resumes_when_its_error_holds_steady_not_while_it_grows(per_period, resumes):
    """
    The drifted plant's error jumps far above ``growth`` x the best and, steady, never comes
    back near it (before: paused for good). Two clean trials running that agree within
    ``growth`` resume the learning, which learns the new force away; an error growing 2 x
    per period (above ``growth``) keeps it paused.
    """
    learning = learner(settings())
    errors = run(learning, 12 if resumes else 9, drift(per_period))
    said = [text for _, text in learning.events]
    held = [text for text in said if 'holds at' in text]
    assert rms(errors[7]) > 5 * rms(errors[4])      # 7 x: far above growth x the best
    if resumes:
        assert held and 'learning resumed from there' in held[0], said
        assert learning.state == LEARNING
        assert rms(errors[-1]) < 0.3 * rms(errors[7])
    else:
        assert learning.state == PAUSED and not any('resumed' in text for text in said), said


def test_growing_soon_after_a_steady_resume_still_freezes():
    # resumed at the drifted plant's steady error (trial 8), the learning then goes wrong
    # (its lead half a period late from 9 s: a sign flip) and grows within 3 learnt trials:
    # frozen at the table it resumed with, not resumed again
    learning = learner(settings())
    steady = drift(1.0)

    def wrong_after_the_resume(t):
        if t >= 9.0 and learning.settings.lead == 0.0:
            learning.settings = dataclasses.replace(learning.settings, lead=0.5)
        return steady(t)
    errors = run(learning, 13, wrong_after_the_resume)
    said = [text for _, text in learning.events]
    assert ['holds at' in said[-3], 'learning paused' in said[-2], 'frozen' in said[-1]] == \
        [True] * 3, said
    assert learning.state == FROZEN and rms(errors[-1]) < 1.1 * rms(errors[7])   # its table
