"""
The tuner's linear loop against simulated responses: its own recursion, then the real loop.

The linear model (tuning.linear_loop) is checked three ways: its frequency response is the
steady state of the same loop stepped in time; its margins, closed in the time domain at a
gain or delay just inside and just outside them, decay and grow; and the real controller's
runtime against the simulator's plant in one process (node_pair, simulate_nodes, builtin
engine) stays quiet at 0.8 times the predicted gain margin (the plant's PMA area scaled) and
delay margin (whole ticks of an unstamped measurement delay) and chatters at 1.25 times;
so does the Kalman observer's loop on a lengths-only sensor.
"""

import dataclasses
import functools
import math

import numpy as np
import pytest

from continuum_ctrl.apps.node_pair import controller_loop, node_pair, plant_settings
from continuum_ctrl.params import ConfigError, load_yaml
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.apps.tune import file_observer, held_engine, main, overlay, poses_of
from continuum_ctrl.tuning.linear_loop import (continuous_plant, estimator, Gains,
                                               LoopOptions, LoopSystem, Mode, PlantError,
                                               toppling_rate, valve_weights)
from continuum_ctrl.tuning.margins import loop_margins, loop_response, spectral_radius
from continuum_ctrl.tuning.proposal import (assess, best_of, corners, Requirement, Setup,
                                            uniform)
from continuum_ctrl.tuning.side_by_side import margins_of, pool, SIDE_BY_SIDE
from support.command_bounds import QUIET_PMA, worst_variation

PARAMS = 'continuum_3section.yaml'
#: the loop these figures were measured on: the file's former gains and 1 s blend on measured
#: states (its own gains, with the observer, are in docs/tuning.md), kept through saturation
#: (the file's guard softens the gains of a loop at its bounds: an unstable one then stops
#: chattering, which is the guard's doing, not a margin)
FORMER = {'gains.kp': [700.0] * 9, 'gains.kd': [40.0] * 9, 'gains.ki': [5e4],
          'reference.blend_time': 1.0, 'observer.type': 'none', 'limits.saturation_gain': 1.0}
#: s: the run, and the span at its end over which the command's variation is taken
DURATION, LATE = 4.0, 2.0
#: MPa/s per PMA: the shipped loop varies its commands by 0.12; chatter by several
QUIET, CHATTER = 1.0, 3.0


@functools.lru_cache(maxsize=None)
def setup(delay=0, stamped=True, mode=None, velocity='measured'):
    """Return the file's Setup at two poses (and the loop), `delay` ticks of measurement."""
    loop = controller_loop(PARAMS, FORMER)
    plant = plant_settings(PARAMS)
    options = LoopOptions(loop.period, plant.actuator[:2], delay, stamped, velocity, mode)
    return Setup(loop.model, loop.settings.actuation, loop.settings.compensation, loop.period,
                 poses_of(loop, plant.initial, 2), options, observer=(
                     file_observer(loop) if velocity == 'kalman' else None)), loop


def shipped(loop):
    """Return the file's gains."""
    s = loop.settings
    return Gains(s.kp, s.kd, s.ki, s.velocity_filter)


def system(delay=0, stamped=True, error=PlantError(), mode=None, velocity='measured'):
    """Return the LoopSystem of the file's gains at its first pose."""
    tuned, loop = setup(delay, stamped, mode, velocity)
    controller = tuned.controllers(shipped(loop))[0]
    return LoopSystem.build(tuned.poses[0][1], controller, error, tuned.options)


@functools.lru_cache(maxsize=None)
def margins():
    """Return the Margins of the file's gains at its first pose, nominal plant."""
    return loop_margins(system())


@pytest.mark.parametrize('velocity', ['measured', 'kalman'])
def test_the_frequency_response_is_the_steady_state_of_the_loop_stepped_in_time(velocity):
    # the open loop is not stable (the upright arm topples under gravity, the integral), so
    # the closed loop is stepped with a force added at the plant input, v = u + d: then
    # -G v = u in the steady state
    loop = system(velocity=velocity)
    closed = loop.closed()
    for hz in (0.7, 6.0, 40.0):
        w = 2 * math.pi * hz * loop.period
        ticks = np.arange(12000)
        x = np.zeros(loop.A.shape[0])
        u, v = np.zeros((2, ticks.size, loop.K.shape[0]))
        for k in ticks:
            u[k] = loop.K @ x
            v[k] = u[k]
            v[k, 2] += math.cos(w * k)
            x = closed @ x + loop.Bv[:, 2] * math.cos(w * k)
        late = ticks >= 6000
        basis = np.column_stack([np.cos(w * ticks), np.sin(w * ticks)])[late]
        U, V = ((fit[0] - 1j * fit[1]) for fit in
                (np.linalg.lstsq(basis, signal[late], rcond=None)[0] for signal in (u, v)))
        assert np.allclose(-loop_response(loop, [hz])[0] @ V, U, rtol=1e-4,
                           atol=1e-4 * np.abs(U).max())


@functools.lru_cache(maxsize=None)
def slow_valves(area=1.0):
    """Return the observer's loop behind 76 + 38 ms valves, compensated as such (long chains)."""
    valves = {'output.time_constant': 0.076, 'output.delay': 0.038}
    loop = controller_loop(PARAMS, {**FORMER, **valves, 'observer.type': 'kalman'}, check=False)
    plant = plant_settings(PARAMS)
    options = LoopOptions(loop.period, (0.076, 0.038), 0, True, 'kalman')
    tuned = Setup(loop.model, loop.settings.actuation, loop.settings.compensation, loop.period,
                  poses_of(loop, plant.initial, 1), options, observer=file_observer(loop))
    controller = tuned.controllers(shipped(loop))[0]
    return LoopSystem.build(tuned.poses[0][1], controller, PlantError(area=area),
                            tuned.options)


def _unfolded(loop, k):
    """Return the matrix that gives the full state of the folded one closed with `k`."""
    lay, N = loop.layout, loop.A.shape[0]
    chain = [j for j in range(1, N) if f'v{j}' in lay.slices and f'u{j}' in lay.slices]
    gone = np.zeros(N, dtype=bool)
    for j in chain:
        gone[lay[f'v{j}']] = True
    P = np.zeros((N, int(np.count_nonzero(~gone))))
    P[~gone] = np.eye(P.shape[1])
    for j in chain:
        P[lay[f'v{j}']] = k * P[lay[f'u{j}']]
    return P


@pytest.mark.parametrize('loop', [system, slow_valves], ids=['file', 'slow valves'])
def test_the_folded_loop_is_the_closed_loop_on_its_invariant_subspace(loop):
    # v_j = k u_j spans an invariant subspace of the closed loop, on which it acts as the
    # folded loop; on the rest the plant's input chain only shifts out (poles at 0)
    loop = loop()
    folded = loop.folded
    assert loop.A.shape[0] - folded.fixed.shape[0] >= loop.K.shape[0]     # a tick folded
    for k in (1.0, 1.7):
        P = _unfolded(loop, k)
        assert np.allclose(loop.closed(k) @ P, P @ folded.closed(k), rtol=0.0,
                           atol=1e-12 * np.abs(loop.closed(k)).max())
        assert spectral_radius(loop.closed(k)) == pytest.approx(
            spectral_radius(folded.closed(k)), rel=1e-9)


@pytest.mark.parametrize('loop', [system, slow_valves], ids=['file', 'slow valves'])
def test_the_loop_transfer_from_the_folded_loop_is_the_open_loops_solved_densely(loop):
    # G = -K (zI - A)^-1 Bv solved by LU on the full open loop, whose states span ten
    # decades; the Schur form of the unbalanced closed loop lost 1e-4 of it at 0.05 Hz
    loop = loop()
    hz = np.array([0.05, 0.7, 6.0, 40.0, 240.0])
    N = loop.A.shape[0]
    for f, G in zip(hz, loop_response(loop, hz)):
        z = np.exp(2j * math.pi * f * loop.period)
        dense = -loop.K @ np.linalg.solve(z * np.eye(N) - loop.A, loop.Bv)
        assert np.abs(G - dense).max() < 1e-7 * np.abs(dense).max(), f


def test_cases_assessed_side_by_side_have_the_margins_each_has_alone():
    loops = [slow_valves(area) for area in (1.0, 0.9, 1.1)]
    assert loops[0].A.shape[0] >= SIDE_BY_SIDE and pool() is not None     # workers assess
    found = margins_of(loops, True, 120)
    for loop, margins in zip(loops, found):
        np.testing.assert_equal(dataclasses.astuple(margins),
                                dataclasses.astuple(loop_margins(loop, True, 120)))


def _growth(matrix, ticks=3000):
    """Return how much a random state's norm grows from `ticks` to 2 `ticks` of the loop."""
    x = np.random.default_rng(1).standard_normal(matrix.shape[0])
    for _ in range(ticks):
        x = matrix @ x
    middle = np.linalg.norm(x)
    for _ in range(ticks):
        x = matrix @ x
    return np.linalg.norm(x) / middle


def test_the_loop_closed_in_time_decays_inside_the_gain_margin_and_grows_outside():
    loop, gain = system(), margins().gain
    assert 1.2 < gain < 4.0, gain                       # measured: 1.84
    assert _growth(loop.closed(0.95 * gain)) < 1.0
    assert _growth(loop.closed(1.05 * gain)) > 10.0


def test_the_delay_margin_of_the_loci_is_the_delay_in_ticks_that_destabilizes_the_loop():
    delay, period = margins().delay, system().period
    assert 0.004 < delay < 0.02, delay                  # measured: 9.1 ms
    inside, outside = math.floor(delay / period), math.ceil(delay / period)
    assert spectral_radius(system(inside, stamped=False).closed()) < 1.0
    assert spectral_radius(system(outside, stamped=False).closed()) > 1.0


def test_a_stamped_delay_is_predicted_over_and_an_unstamped_one_eats_the_margin():
    stamped, unstamped = (loop_margins(system(3, s), exact=False) for s in (True, False))
    assert stamped.delay > margins().delay - 0.002                  # measured: 8.6 of 9.1 ms
    assert unstamped.delay == pytest.approx(margins().delay - 3 * system().period, abs=2e-4)


def test_a_lightly_damped_mode_the_model_lacks_takes_margin():
    with_mode = loop_margins(system(mode=Mode(25.0, 0.05)), exact=False)
    assert with_mode.phase < margins().phase or with_mode.gain < margins().gain


def test_the_valve_weights_sum_to_one_and_the_newest_command_waits_out_the_dead_time():
    a, w = valve_weights(0.02, 0.01, 0.002, 5)
    assert a + w.sum() == pytest.approx(1.0)            # a constant input is kept
    assert a == pytest.approx(math.exp(-0.1))
    assert np.all(w[:5] == 0.0) and w[5] > 0.0          # only the command acting moves it


def test_the_estimator_passes_a_constant_velocity_and_differences_a_ramp():
    period, n = 0.002, 2
    for kind in ('measured', 'differenced'):
        A, B, C, D = estimator(kind, 0.01, period, n)
        s = np.zeros(A.shape[0])
        for k in range(400):
            y = np.concatenate([np.full(n, 0.1 * k * period), np.full(n, 0.1), np.zeros(n)])
            out = C @ s + D @ y
            s = A @ s + B @ y
        assert np.allclose(out[n:], 0.1, rtol=1e-6)
        assert np.allclose(out[:n], 0.1 * 399 * period)


def test_the_upright_arm_topples_unheld_at_a_root_of_its_plant_and_not_without_gravity():
    """
    With no feedback the upright arm leaves its pose at the rate `toppling_rate` gives: a root
    ``s`` of ``det(M s^2 + D s + K)`` (gravity's stiffness in K, which bends the arm further
    than its PMAs hold it), faster for an arm 20 % softer, none without gravity.
    """
    tuned, _ = setup()
    pose = tuned.poses[0][1]
    rate = toppling_rate(tuned.plant(0, PlantError()), tuned.period)
    stiffness = pose.passive[0] + pose.rest[0]
    damping = pose.passive[1] + pose.rest[1]
    singular = np.linalg.svd(pose.mass * rate ** 2 + damping * rate + stiffness,
                             compute_uv=False)
    assert rate > 1.0 and singular[-1] < 1e-6 * singular[0]
    assert toppling_rate(tuned.plant(0, PlantError(stiffness=0.8)), tuned.period) > 1.2 * rate
    weightless = controller_loop(PARAMS, {**FORMER, 'model.gravity': [0.0, 0.0, 0.0]})
    still = poses_of(weightless, plant_settings(PARAMS).initial, 1)[0][1]
    assert toppling_rate(continuous_plant(still, PlantError(), tuned.options),
                         tuned.period) == 0.0


def test_the_box_has_the_nominal_arm_then_its_sixteen_corners():
    errors = corners(0.2, 0.25, 0.1, 0.2)
    assert errors[0] == PlantError() and len(errors) == 17 and len(set(errors)) == 17
    assert {e.area for e in errors[1:]} == {0.9, 1.1}


@pytest.mark.slow
def test_the_best_of_candidates_meets_the_margins_with_the_largest_bandwidth_or_says_not():
    tuned, loop = setup()
    errors = [PlantError(), PlantError(1.2, 0.75, 1.1, 0.8)]
    candidates = [uniform(loop.model, kp, kd, 2.5e4, 0.002)
                  for kp in (300.0, 700.0) for kd in (20.0, 40.0)]
    requirement = Requirement()
    design = best_of(tuned, candidates, errors, requirement)
    assert design.met and not design.missed
    bandwidth = min(r.margins.bandwidth for r in design.rows)
    for gains in candidates:
        other = assess(tuned, gains, errors, requirement, exact=False)
        if requirement.shortfall(other[0].margins) >= 1.0:
            assert min(r.margins.bandwidth for r in other) <= bandwidth + 1e-9
    out_of_reach = best_of(tuned, candidates, errors, Requirement(gain_db=40.0))
    assert not out_of_reach.met and out_of_reach.missed == ['gain']


def test_uniform_gains_blended_from_three_linearizations_are_the_linearization_anew():
    tuned, loop = setup()
    gains = uniform(loop.model, 321.0, 27.0, 2e4, 0.01)
    blended = tuned.controllers(gains, [1])[1]
    anew = tuned._controller(gains, 1)
    for name in ('Jq', 'Jv', 'Jp', 'Ju'):
        assert np.allclose(getattr(blended, name), getattr(anew, name), rtol=1e-6,
                           atol=1e-6 * np.abs(getattr(anew, name)).max()), name


def run(area=1.0, delay=0, observer=False):
    """
    Return the worst PMA's command variation (MPa/s) of the file's loop, builtin engine.

    The plant's PMA area scaled by `area`, its sensor `delay` ticks late and unstamped;
    `observer`: the Kalman observer's loop, the sensor lengths only with 2 um of noise.
    """
    simulator = {'mismatch.area_scale': area, 'engine': 'builtin'}
    if delay:
        simulator.update({'sensor.delay': delay * 0.002, 'sensor.stamp': 'publish'})
    if observer:
        simulator.update({'sensor.velocity': False, 'noise.position': 2e-6, 'noise.seed': 4})
    runtime, plant = node_pair(PARAMS, {**FORMER, 'observer.type': 'kalman' if observer
                                        else 'none'}, simulator)
    log = simulate_nodes(runtime, plant, DURATION)
    late = log.t >= DURATION - LATE
    return worst_variation(log.t[late], log.command[late]) / 1e6


def worst_margins(velocity='measured'):
    """Return the smallest gain and delay margins (s) of the file's gains over its poses."""
    tuned, loop = setup(velocity=velocity)
    found = [loop_margins(LoopSystem.build(pose, c, PlantError(), tuned.options))
             for (_, pose), c in zip(tuned.poses, tuned.controllers(shipped(loop)).values())]
    return min(m.gain for m in found), min(m.delay for m in found)


@pytest.mark.slow
def test_the_real_loop_is_quiet_inside_the_predicted_gain_margin_and_chatters_outside():
    gain = worst_margins()[0]
    assert run(area=0.8 * gain) < QUIET                  # measured: 0.08 MPa/s at 1.47
    assert run(area=1.25 * gain) > CHATTER               # measured: 7.7 MPa/s at 2.3


@pytest.mark.slow
def test_the_real_loop_is_quiet_inside_the_predicted_delay_margin_and_chatters_outside():
    delay, period = margins().delay, system().period
    assert run(delay=math.floor(0.8 * delay / period)) < QUIET    # 3 ticks: 0.12 MPa/s
    assert run(delay=math.ceil(1.25 * delay / period)) > CHATTER  # 6 ticks: 4.9 MPa/s


@pytest.mark.slow
def test_the_observers_loop_is_quiet_inside_its_predicted_margins_and_not_outside():
    gain, delay = worst_margins('kalman')
    assert 1.3 < gain < 2.0 and 0.015 < delay < 0.03, (gain, delay)   # 1.59, 22 ms
    assert run(area=0.8 * gain, observer=True) < QUIET_PMA / 1e6       # 0.09 MPa/s
    assert run(area=1.25 * gain, observer=True) > CHATTER              # 3.8 MPa/s
    ticks = delay / system().period             # unstamped: the observer cannot predict it
    assert run(delay=math.floor(0.8 * ticks), observer=True) < QUIET_PMA / 1e6   # 0.12
    assert run(delay=math.ceil(1.25 * ticks), observer=True) > 2.0 * QUIET_PMA / 1e6  # 2.4


def test_the_overlay_gives_every_joint_its_gains(tmp_path):
    loop = setup()[1]
    tree = load_yaml(overlay(shipped(loop), loop.settings.joints))
    values = tree['continuum_controller']['ros__parameters']
    assert values['gains']['kd'] == [40.0] * 9 and values['velocity_filter'] == 0.01
    # every value a float, as a double parameter must be: rcl refuses `40` there
    assert all(type(v) is float for gains in values['gains'].values() for v in gains)


@pytest.mark.parametrize('argv, key', [
    (['--poses', '0'], '--poses'), (['--area', '1.5'], '--area'),
    (['--measurement-delay', '0.003'], '--measurement-delay'),
    (['--kd', '-1'], '--kd'), (['--valves', '0.02', '-1'], '--valves'),
    (['--velocity', 'kalman', '--position-noise', '0'], '--position-noise'),
    (['--kp', '150'], '--no-search')])
def test_bad_options_name_their_key(argv, key):
    with pytest.raises(ConfigError) as caught:
        main(['config/continuum_3section.yaml', *argv, '--no-search'])
    assert caught.value.key == key


@pytest.mark.slow
def test_the_command_prints_the_table_and_writes_an_overlay_the_nodes_read(tmp_path, capsys):
    out = tmp_path / 'tuned.yaml'
    argv = ['config/continuum_3section.yaml', '--poses', '1', '--stiffness', '0', '--damping',
            '0', '--mass', '0', '--kp', '300', '--kd', '20', '--ki', '2.5e4',
            '--velocity-filter', '0.002', '--velocity', 'measured', '--write', str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "the file's gains: smallest GM" in printed and 'proposed: smallest GM' in printed
    assert 'with no feedback the arm leaves its poses at up to' in printed
    rows = [line for line in printed.splitlines() if line.endswith((' yes', ' NO'))]
    assert len(rows) == 6                                        # 3 cases, twice
    loop = controller_loop(['config/continuum_3section.yaml', out])
    assert np.all(loop.settings.kd == 20.0) and np.all(loop.settings.ki == 2.5e4)
    assert loop.settings.velocity_filter == 0.002


@functools.lru_cache(maxsize=None)
def engine(name):
    """Return the DiscretePlant of the file's simulator on engine `name`, at the first pose."""
    tuned, _ = setup()
    return held_engine(PARAMS, {'engine': name}, tuned.poses[0][1], tuned.period)


def engine_margins(name, delay=0, kd=40.0):
    """Return the Margins of the file's loop (kd replaced) around engine `name`'s plant."""
    tuned, loop = setup(delay)
    gains = Gains(loop.settings.kp, np.full(9, kd), loop.settings.ki,
                  loop.settings.velocity_filter)
    controller = tuned.controllers(gains)[0]
    return loop_margins(LoopSystem.build(tuned.poses[0][1], controller, PlantError(),
                                         tuned.options, engine(name)))


@pytest.mark.slow
def test_the_builtin_engine_linearized_is_the_models_plant():
    linear, stepped = margins(), engine_margins('builtin')
    assert stepped.gain == pytest.approx(linear.gain, rel=0.03)      # 1.84: 5.31 / 5.32 dB
    assert stepped.delay == pytest.approx(linear.delay, rel=0.03)    # 9.07 / 9.13 ms


@pytest.mark.slow
def test_the_mujoco_stack_topples_unheld_at_the_models_toppling_rate():
    """
    The disc stack linearized at the file's first pose (4 discs a section, its every disc's
    state) topples in its two bending directions at 2.05 and 1.49 1/s (its discs sit on three
    PMAs, not on a ring): the model's plant, 1.85 1/s in both, lies between, within 25 % of
    each. The builtin engine (the integral model) gives 1.84.
    """
    tuned, _ = setup()
    radii = np.sort(np.abs(np.linalg.eigvals(engine('mujoco').Phi)))[::-1]
    fastest, second = np.log(radii[:2]) / tuned.period
    model = toppling_rate(tuned.plant(0, PlantError()), tuned.period)
    assert second < model < fastest
    assert fastest < 1.25 * model and second > 0.75 * model


@pytest.mark.slow
def test_the_mujoco_stack_linearized_chatters_near_25_hz_from_one_tick_of_delay_at_kd_40():
    # the lead's measurements in process: kd 40 chatters at 1 tick, kd 20 is quiet up to 2
    now, late = engine_margins('mujoco', 0), engine_margins('mujoco', 1)
    assert now.stable and not late.stable and 20.0 < late.chatter < 30.0
    assert engine_margins('mujoco', 2, kd=20.0).stable
    assert not engine_margins('mujoco', 3, kd=20.0).stable
