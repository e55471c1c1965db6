"""The Kalman observer (control/observer.py): a known linear system, its samples, its settings."""

import numpy as np
import pytest

from continuum_ctrl.control.observer import kalman_gain, linearized, Observer
from continuum_ctrl.control.settings import ObserverSettings
from continuum_ctrl.models.base import DynamicsModel
from continuum_ctrl.models.integrators import implicit_damping_euler_stepper
from continuum_ctrl.apps.node_pair import controller_loop, controller_runtime, plant_of
from continuum_ctrl.params import ConfigError
from continuum_ctrl.sim.closed_loop import simulate_nodes

PERIOD = 0.002
CONFIG = 'continuum_3section.yaml'
#: s: the blend-in and its transient, then the time the figures are taken over
SETTLE, DURATION = 2.0, 6.0
#: N and m: a force the model misses, the noise of a PMA length sensor. Over a period the
#: force moves the velocity by about h w / (m + h D), 1.4 mm/s: less than a 2 ms difference
#: of 20 um noise (14 mm/s), the regime where an observer pays
FORCE_NOISE, POSITION_NOISE = 0.05, 2e-5


class MassSpringDamper(DynamicsModel):
    """Two coupled masses on springs and dampers, with gravity: a PMA pair's orders of size."""

    joint_names = ['a', 'b']
    has_passive_forces = True
    M = np.array([[0.012, 0.004], [0.004, 0.008]])          # kg
    K = np.array([[2500.0, -400.0], [-400.0, 1800.0]])      # N/m
    D = np.array([[30.0, -5.0], [-5.0, 25.0]])              # N s/m
    weight = np.array([0.1, 0.05])                          # N

    def mass_matrix(self, q):
        return self.M.copy()

    def coriolis_matrix(self, q, qd):
        return np.zeros((2, 2))

    def gravity_vector(self, q):
        return self.weight.copy()

    def gravity_potential(self, q):
        return float(self.weight @ q)

    def passive_forces(self, q, qd):
        return self.K @ q + self.D @ qd

    def damping_matrix(self, q):
        return self.D.copy()


def test_the_linearized_step_is_the_implicit_damping_step_of_the_linear_arm():
    model = MassSpringDamper()
    F, G = linearized(model, np.array([0.01, 0.02]), PERIOD)
    rng = np.random.default_rng(1)
    q, qd, w = rng.normal(0.0, 1e-3, 2), rng.normal(0.0, 0.1, 2), rng.normal(0.0, 1.0, 2)
    # the step the prediction takes: (M + h D)(v' - v) = h (w - K q - D v), q' = q + h v'
    v = qd + np.linalg.solve(model.M + PERIOD * model.D,
                             PERIOD * (w - model.K @ q - model.D @ qd))
    np.testing.assert_allclose(F @ np.concatenate((q, qd)) + G @ w,
                               np.concatenate((q + PERIOD * v, v)), rtol=1e-6, atol=1e-12)


def test_the_estimates_error_covariance_is_the_riccatis_and_beats_the_difference():
    """
    On the linear arm with the noise the filter assumes, its error covariance after each
    correction is ``(I - L H) P`` within sampling error, and its velocity error is a small
    part of the difference quotient's.
    """
    F, G = linearized(MassSpringDamper(), np.zeros(2), PERIOD)
    L, P = kalman_gain(F, G, FORCE_NOISE, POSITION_NOISE)
    H = np.hstack((np.eye(2), np.zeros((2, 2))))
    expected = (np.eye(4) - L @ H) @ P
    rng = np.random.default_rng(2)
    samples = 40000
    x, estimate, previous = np.zeros(4), np.zeros(4), np.zeros(2)
    errors, differences = np.zeros((samples, 4)), np.zeros((samples, 2))
    for k in range(samples):
        x = F @ x + G @ rng.normal(0.0, FORCE_NOISE, 2)
        y = x[:2] + rng.normal(0.0, POSITION_NOISE, 2)
        estimate = F @ estimate
        estimate += L @ (y - estimate[:2])
        errors[k] = x - estimate
        differences[k] = x[2:] - (y - previous) / PERIOD
        previous = y
    errors, differences = errors[100:], differences[100:]
    measured = errors.T @ errors / len(errors)
    # the errors are correlated over a few samples: a 40000-sample covariance is good to ~5 %
    np.testing.assert_allclose(np.diag(measured), np.diag(expected), rtol=0.08)
    correlation = measured[0, 2] / np.sqrt(measured[0, 0] * measured[2, 2])
    assert correlation == pytest.approx(expected[0, 2] / np.sqrt(expected[0, 0]
                                                                 * expected[2, 2]), abs=0.03)
    velocity_error = np.sqrt(np.mean(errors[:, 2:] ** 2))
    difference_error = np.sqrt(np.mean(differences ** 2))
    assert velocity_error < 0.2 * difference_error, (velocity_error, difference_error)
    position_error = np.sqrt(np.mean(errors[:, :2] ** 2))
    assert position_error < POSITION_NOISE                  # filtered, not just copied


def test_a_constant_force_the_model_misses_is_learnt_and_leaves_no_position_bias():
    """Without the bias state the estimate lags by a constant; with it, by nothing."""
    F, G = linearized(MassSpringDamper(), np.zeros(2), PERIOD)
    missed = np.array([0.8, -0.5])                          # N
    rng = np.random.default_rng(3)
    for bias_step, within in ((0.0, None), (0.3 * np.sqrt(PERIOD), 0.05)):
        L, _ = kalman_gain(F, G, FORCE_NOISE, POSITION_NOISE, bias_step)
        x, estimate, errors = np.zeros(4), np.zeros(len(L)), []
        for k in range(6000):
            x = F @ x + G @ (missed + rng.normal(0.0, FORCE_NOISE, 2))
            estimate[:4] = F @ estimate[:4] + (G @ estimate[4:] if bias_step else 0.0)
            estimate += L @ (x[:2] + rng.normal(0.0, POSITION_NOISE, 2) - estimate[:2])
            errors.append(x[:2] - estimate[:2])
        offset = np.abs(np.mean(errors[3000:], axis=0))
        if within is None:
            assert np.all(offset > 0.5 * POSITION_NOISE), offset
        else:
            assert np.all(offset < 0.05 * POSITION_NOISE), offset
            np.testing.assert_allclose(estimate[4:], missed, rtol=within)


def test_late_missing_and_reordered_samples():
    observer = Observer(MassSpringDamper(), ObserverSettings('kalman'), PERIOD, np.zeros(2))
    observer.start(np.zeros(2), np.zeros(2), 1.0)
    assert observer.step_at(1.0, PERIOD, 5) == -1            # nothing to correct with
    observer.measure(np.ones(2), np.zeros(2), 1.0031)        # late: 1.55 steps on
    assert observer.step_at(1.0, PERIOD, 5) == 2             # the step nearest its stamp
    observer.measure(np.ones(2), np.zeros(2), 1.002)         # older than the last: dropped
    observer.measure(np.ones(2), np.zeros(2), 1.0031)        # the same stamp again: dropped
    assert observer.dropped == 2 and observer.times[1] == 1.0031
    observer.measure(np.full(2, 2.0), np.full(2, 0.5), 1.5)  # after a gap: a restart there
    assert observer.times[0] == 1.5 and np.isnan(observer.times[1])
    assert np.array_equal(observer.x[:2], [[2.0, 2.0], [0.5, 0.5]])


def test_a_kalman_observer_without_the_valve_model_is_one_error_naming_the_key():
    with pytest.raises(ConfigError, match=r"parameter 'observer.type': 'kalman' is driven by "
                                          r"the valve model's pressures"):
        controller_loop('continuum_3section.yaml', {'observer.type': 'kalman',
                                                    'output.time_constant': 0.0,
                                                    'output.delay': 0.0})
    with pytest.raises(ConfigError, match=r"parameter 'observer.force_noise'"):
        controller_loop('continuum_3section.yaml', {'observer.force_noise': -1.0})
    with pytest.raises(ConfigError, match=r"parameter 'observer.cancel_bias': cancels the "
                                          r'estimated force bias: needs observer.bias_noise'):
        controller_loop('continuum_3section.yaml', {'observer.cancel_bias': True,
                                                    'observer.bias_noise': 0.0})


def held_pose_error(cancel):
    """
    Return the mean PMA-length error per PMA (m) holding a bent pose without integral action.

    The built-in plant's area 10 % above the file's and a 15 kPa dead zone: steady forces the
    model misses, which only the arm's own spring opposes when the law does not cancel them.
    """
    runtime = controller_runtime(CONFIG, {'gains.ki': [0.0], 'reference.type': 'hold',
                                          'reference.position': [0.006, 0.013, 0.020] * 3,
                                          'observer.cancel_bias': cancel,
                                          'reference.blend_time': 1.0})    # settled by 2 s
    plant = plant_of(CONFIG, {'initial.position': [0.006, 0.013, 0.020] * 3,
                              'mismatch.area_scale': 1.1, 'mismatch.deadzone': 15e3})
    log = simulate_nodes(runtime, plant, 3.0)
    return np.mean((log.q - log.q_des)[log.t >= 2.0], axis=0)


def test_the_law_cancelling_the_estimated_bias_removes_a_steady_model_error_without_integral():
    """
    The law less the observer's force bias (a disturbance observer): the steady error that the
    area and dead zone error leave against the arm's spring goes (measured: 0.2-0.9 mm
    without, below 0.01 um with).
    """
    kept = held_pose_error(cancel=False)
    cancelled = held_pose_error(cancel=True)
    assert np.max(np.abs(kept)) > 100e-6, kept
    assert np.all(np.abs(cancelled) < 0.02 * np.max(np.abs(kept))), (cancelled, kept)


def lengths_only(overrides):
    """
    Return ``(RMS per section m, worst command variation per section Pa/s)`` on MuJoCo.

    The file's controller (plus `overrides`) against the MuJoCo arm through a sensor that
    sends lengths only, with 20 um noise, 2 ms old (one tick), stamped at the measurement.
    """
    runtime = controller_runtime(CONFIG, overrides)
    plant = plant_of(CONFIG, {'engine': 'mujoco', 'noise.position': POSITION_NOISE,
                              'noise.seed': 4, 'sensor.velocity': False,
                              'sensor.delay': 0.002})
    log = simulate_nodes(runtime, plant, SETTLE + DURATION)
    late = log.t >= SETTLE
    error = (log.q - log.q_des)[late].reshape(-1, 3, 3)
    variation = np.sum(np.abs(np.diff(log.command[late], axis=0)), axis=0) / DURATION
    return np.sqrt(np.mean(error ** 2, axis=(0, 2))), variation.reshape(3, 3).max(axis=1)


@pytest.mark.slow
@pytest.mark.parametrize('kd', [40.0, 20.0], ids=['the file', 'kd 20'])
def test_on_the_mujoco_arm_the_observer_quiets_the_commands_of_a_lengths_only_sensor(kd):
    """
    Differenced lengths chatter (34 MPa/s measured in section 1 at kd 40, the file's gain,
    23 at kd 20), the observer's commands are quiet (0.6 and 0.4), and it tracks as well,
    within 10 % (kd 40: 0.024 / 0.016 / 0.018 mm against 0.20 / 0.088 / 0.035 mm; kd 20 and
    kp 500: 0.027 / 0.016 / 0.018 against 0.025 / 0.018 / 0.018).
    """
    gains = {'gains.kd': [kd] * 9}
    rms, variation = lengths_only({**gains, 'observer.type': 'none'})
    observed_rms, observed = lengths_only({**gains, 'observer.type': 'kalman'})
    assert np.max(variation) > 10e6                     # what the observer is for
    assert np.max(observed) < 1.5e6 and np.all(observed < 0.1 * variation)
    assert np.all(observed_rms <= 1.1 * rms), (observed_rms, rms)


def test_the_observer_switched_on_and_off_at_run_time_starts_from_the_loops_state():
    """Settings posted to the running loop, as a parameter change: control goes on."""
    runtime = controller_runtime(CONFIG, {'observer.type': 'none'})
    changes = {0.8: controller_runtime(CONFIG).settings,
               1.4: runtime.settings}
    tick, started = runtime.tick, []

    def tick_and_change(t, lateness=0.0):
        for at, settings in changes.items():
            if abs(t - at) < 1e-9:
                runtime.post_settings(settings, runtime.options)
        command = tick(t, lateness)
        if runtime.loop.observer is not None and not started:
            started.append(runtime.loop.observer.times[0])
        return command
    runtime.tick = tick_and_change
    old_state = {'sensor.delay': 0.002}
    log = simulate_nodes(runtime, plant_of(CONFIG, old_state), 2.0)
    unchanged = simulate_nodes(controller_runtime(CONFIG, {'observer.type': 'none'}),
                               plant_of(CONFIG, old_state), 2.0)
    assert started and 0.79 < started[0] < 0.8             # from the state of the change
    assert runtime.loop.observer is None and np.all(log.active[log.t > 0.5])
    for start, end in ((0.8, 1.4), (1.4, 2.0)):             # with it, then without again
        window = (log.t > start) & (log.t <= end)
        worst = np.max(np.abs(log.q - log.q_des)[window])
        assert worst < 1.5 * np.max(np.abs(unchanged.q - unchanged.q_des)[window]) + 2e-5


def observe_push(gate, push, start=0.5, duration=0.2, end=1.5):
    """
    Observe the two-mass arm pushed by `push` (N) from `start` for `duration` s; return traces.

    The observer's own correction and prediction (`implicit_damping_euler_stepper`), one
    sample a period; ``(t, bias, estimate error, largest bias change per sample)``.
    """
    model = MassSpringDamper()
    settings = ObserverSettings('kalman', POSITION_NOISE, FORCE_NOISE, 0.3, False, gate)
    observer = Observer(model, settings, PERIOD, np.zeros(2))
    steps = implicit_damping_euler_stepper(model)
    F, G = linearized(model, np.zeros(2), PERIOD)
    rng = np.random.default_rng(5)
    x = np.zeros(4)
    observer.start(np.zeros(2), np.zeros(2), 0.0)
    t = PERIOD * np.arange(1, round(end / PERIOD))
    bias, error, change = [], [], 0.0
    for now in t:
        pushed = push if start <= now - PERIOD < start + duration else 0.0
        x = F @ x + G @ (pushed + rng.normal(0.0, FORCE_NOISE, 2))
        observer.measure(x[:2] + rng.normal(0.0, POSITION_NOISE, 2), None, now)
        before = observer.bias.copy()
        q, qd = steps(observer.x[0], observer.x[1], observer.bias[None, :], PERIOD, 1,
                      (0, observer.gain, observer.y, observer.x, *observer.free,
                       observer.gate))
        observer.times[:] = (now, np.nan)
        change = max(change, float(np.max(np.abs(observer.bias - before))))
        bias.append(observer.bias.copy())
        error.append(observer.x[0] - x[:2])
        observer.x[0], observer.x[1] = q, qd
    return t, np.array(bias), np.array(error), change


def test_a_push_moves_the_bias_at_most_at_the_gated_rate_and_it_recovers():
    """
    A 20 N push of 0.2 s on the two-mass arm: the bias learns it ungated, not gated.

    Gated at 4 deviations of the innovation, the bias moves by at most ``|L_b| gate`` per
    sample (0.055 N here), so by 5.7 N over the push against 20 N ungated, and is back within 0.5 N
    0.3 s after the push.
    """
    push = np.array([20.0, -12.0])
    t, ungated, _, _ = observe_push(0.0, push)
    assert np.max(np.abs(ungated[:, 0])) > 15.0
    observer = Observer(MassSpringDamper(), ObserverSettings('kalman', POSITION_NOISE,
                                                             FORCE_NOISE, 0.3, False, 4.0),
                        PERIOD, np.zeros(2))
    t, gated, _, change = observe_push(4.0, push)
    rate = np.max(np.abs(observer.gain[4:]) @ observer.gate)
    assert change <= rate * (1 + 1e-9)
    assert np.max(np.abs(gated)) < 0.3 * np.max(np.abs(ungated))       # 5.7 N against 20 N
    assert np.max(np.abs(gated[t > 1.0])) < 0.5
