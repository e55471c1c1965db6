"""
Closed loop under computed torque: with plant == model, e'' + Kd e' + Kp e = 0 exactly.

The simulated error is compared with the exact solution ``x(t) = expm(A t) x0`` of the linear
error system, ``x = [e, edot]``, ``A = [[0, I], [-Kp, -Kd]]``, for the same initial error.

Tolerance: with continuous-time control the only deviation is RK4's truncation error. For modes
``exp(lambda t)`` RK4's local error is ``|lambda dt|^5 / 120`` of the state per step, so over a
horizon T the global error is at most about ``T |lambda|^5 dt^4 / 120 * |x0|`` with
``|lambda|`` the largest closed-loop pole magnitude. The test uses that bound and also checks
that halving dt shrinks the deviation like dt^4, which only integration error does.
"""

from pathlib import Path

import numpy as np
import yaml
import pytest
from scipy.linalg import expm

from continuum_ctrl.params import ConfigError, model_spec
from continuum_ctrl.control import ComputedTorqueLaw
from continuum_ctrl.control.references import MinimumJerk, Sinusoid
from continuum_ctrl.apps.simulate import main as simulate_main
from support.command_bounds import QUIET_CHATTER, QUIET_PMA
from support.motion_range import motion_range
from continuum_ctrl.models import load_model
from continuum_ctrl.sim.closed_loop import SimulationDiverged, simulate

CONFIG = Path(__file__).resolve().parents[2] / 'config'


def linear_error(kp, kd, x0, t):
    """Return e(t) of e'' + Kd e' + Kp e = 0 at the uniformly spaced times `t`, (N, n)."""
    n = len(x0) // 2
    kp, kd = (np.diag(k) if np.ndim(k) == 1 else k for k in (kp, kd))
    a = np.block([[np.zeros((n, n)), np.eye(n)], [-kp, -kd]])
    step = expm(a * (t[1] - t[0]))
    x = np.empty((len(t), 2 * n))
    x[0] = x0
    for k in range(1, len(t)):
        x[k] = step @ x[k - 1]
    return x[:, :n], np.abs(np.linalg.eigvals(a)).max()


def deviation(log, kp, kd):
    """Return the largest |e_sim - e_linear| and the RK4 bound for the log's step."""
    x0 = np.r_[log.error[0], log.qd[0] - log.qd_des[0]]
    exact, pole = linear_error(kp, kd, x0, log.t)
    dt, horizon = log.t[1] - log.t[0], log.t[-1]
    bound = horizon * pole ** 5 * dt ** 4 / 120.0 * np.max(np.abs(x0))
    return np.max(np.abs(log.error - exact)), bound


def setup(model, seed, matrix_gains=False):
    """Return gains, a sinusoid reference and an initial state off the reference."""
    rng = np.random.default_rng(seed)
    n = model.n
    kp = rng.uniform(30.0, 80.0, n)
    kd = 2.0 * np.sqrt(kp) * rng.uniform(0.5, 1.2, n)
    if matrix_gains:  # coupled error dynamics: SPD, non-diagonal
        rotation = np.linalg.qr(rng.normal(size=(n, n)))[0]
        kp, kd = (rotation @ np.diag(k) @ rotation.T for k in (kp, kd))
    reference = Sinusoid(motion_range(model)[0], 0.3, rng.uniform(0.3, 1.0, n),
                         rng.uniform(0.0, 6.0, n))
    q0 = reference.sample(0.0)[0] + rng.uniform(-0.15, 0.15, n)
    qd0 = reference.sample(0.0)[1] + rng.uniform(-0.3, 0.3, n)
    return kp, kd, reference, q0, qd0


@pytest.mark.parametrize('arm, duration, matrix_gains', [
    pytest.param('planar_2r', 3.0, False, marks=pytest.mark.slow),
    ('planar_2r', 3.0, True),
    ('panda', 0.5, False),
])
def test_error_follows_linear_dynamics(arm, duration, matrix_gains):
    model = load_model(CONFIG / f'{arm}.yaml')
    kp, kd, reference, q0, qd0 = setup(model, 4, matrix_gains)
    law = ComputedTorqueLaw(model, kp, kd)
    results = [deviation(simulate(model, law, reference, q0, qd0, duration, dt), kp, kd)
               for dt in (4e-3, 2e-3)]
    for error, bound in results:
        assert error < bound, results
    assert results[1][0] < results[0][0] / 8.0, results  # dt^4: ideally / 16
    # the comparison is not vacuous: the initial error is large against the tolerance
    assert np.max(np.abs(q0 - reference.sample(0.0)[0])) > 0.05


def test_zero_order_hold_deviates_at_first_order_in_the_control_period():
    model = load_model(CONFIG / 'planar_2r.yaml')
    kp, kd, reference, q0, qd0 = setup(model, 6)
    law = ComputedTorqueLaw(model, kp, kd)
    errors = [deviation(simulate(model, law, reference, q0, qd0, 2.0, 1e-3,
                                 control_period=period), kp, kd)[0]
              for period in (8e-3, 4e-3)]
    assert 1.6 < errors[0] / errors[1] < 2.5, errors
    assert errors[1] < 0.05 * np.max(np.abs(q0 - reference.sample(0.0)[0])), errors


def test_model_mismatch_breaks_the_linear_error_dynamics():
    # a plant whose second link is 30 % heavier than the controller's model
    spec = model_spec(CONFIG / 'planar_2r.yaml')
    spec['constants'] = dict(spec['constants'], m2=1.3 * spec['constants']['m2'])
    plant, model = load_model(spec), load_model(CONFIG / 'planar_2r.yaml')
    kp, kd, reference, q0, qd0 = setup(model, 4)
    law = ComputedTorqueLaw(model, kp, kd)
    error, bound = deviation(simulate(plant, law, reference, q0, qd0, 3.0, 2e-3), kp, kd)
    assert error > 1e4 * bound and error > 1e-3, (error, bound)


def test_minimum_jerk_tracking_converges_and_logs_are_consistent():
    model = load_model(CONFIG / 'planar_2r.yaml')
    reference = MinimumJerk([0.1, 0.1], [0.5, 0.3], t0=0.0, duration=1.0)
    law = ComputedTorqueLaw(model, [100.0, 100.0], [20.0, 20.0])
    log = simulate(model, law, reference, [0.0, 0.2], [0.0, 0.0], 2.0, 1e-3,
                   control_period=2e-3)
    assert log.t.shape == (2001,) and log.q.shape == log.tau.shape == (2001, 2)
    np.testing.assert_allclose(log.q_des[-1], [0.5, 0.3])
    np.testing.assert_allclose(log.q[-1], [0.5, 0.3], atol=1e-5)
    np.testing.assert_array_equal(log.tau[1], log.tau[0])  # held between control ticks
    np.testing.assert_allclose(log.rms_error(), np.sqrt(np.mean(log.error ** 2, axis=0)))
    assert np.all(log.max_error() >= np.abs(log.error[0]))


def table(out):
    """
    Return the simulate printout's table: {group: (rms, max, command variation, chatter
    index)} in its units (mm or rad; MPa/s or N m/s).
    """
    rows = [line.split() for line in out.splitlines()
            if line.startswith(('joint', 'section', 'panda_joint'))]
    return {row[0]: (float(row[1]), float(row[3]), float(row[5]), float(row[-2]))
            for row in rows}


@pytest.mark.slow
def test_simulate_runs_the_controllers_loop_against_the_files_plant(tmp_path, capsys):
    """The planar arm as the two nodes run it: the file's reference, gains and rate."""
    assert simulate_main(['--arm', 'planar_2r', '--duration', '2', '--out', str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert 'Kp=100 Kd=20' in out and '500 Hz' in out and 'reference sinusoid' in out
    errors = table(out)
    assert list(errors) == ['joint1', 'joint2']
    assert all(0.0 < rms <= worst < 1e-2 for rms, worst, _, _ in errors.values())   # rad
    # quiet efforts: the sinusoid's own variation (40 / 13 N m/s), no power above 10 Hz
    assert all(0.0 < variation < 100.0 and chatter < QUIET_CHATTER
               for _, _, variation, chatter in errors.values()), errors
    image = tmp_path / 'planar_2r_tracking.png'
    assert image.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and image.stat().st_size > 10_000


def continuum_file(tmp_path, **controller):
    """Write the reference arm's file with controller keys replaced; return its path."""
    data = yaml.safe_load((CONFIG / 'continuum_3section.yaml').read_text())
    section = data['continuum_controller']['ros__parameters']
    for key, value in controller.items():
        section.setdefault(key.split('__')[0], {})[key.split('__')[1]] = value
    path = tmp_path / f'continuum_{len(list(tmp_path.glob("continuum_*")))}.yaml'
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.slow
def test_simulate_shows_what_uncompensated_valves_cost(tmp_path, capsys):
    """
    The reference arm behind its valves, with the file's compensation and without it: the
    same loop as the nodes, so the uncompensated valves show their degraded error. From
    activation, the blend's error counts in both; per section the uncompensated arm is 1.5 to
    3.5 times worse (0.10 / 0.06 / 0.04 mm against 0.07 / 0.03 / 0.01 mm). At the file's gains
    (kp 500, kd 40, the observer off without valves) it no longer chatters.
    """
    rms, variation, tips = [], [], []
    for path in (continuum_file(tmp_path, reference__blend_time=1.0),     # the figures' blend
                 continuum_file(tmp_path, output__time_constant=0.0, output__delay=0.0,
                                observer__type='none', reference__blend_time=1.0)):
        assert simulate_main(['--arm', str(path), '--duration', '6', '--out',
                              str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert 'Kp=500 Kd=40' in out and 'valves 0.02 s lag, 0.005 s dead time' in out
        rows = table(out)
        rms.append(np.array([value[0] for value in rows.values()]))
        variation.append(np.array([value[2] for value in rows.values()]))
        tips.append(float(out.split('tip (section3_tip): RMS error ')[1].split()[0]))
    compensated, uncompensated = rms
    # the compensated commands are quiet (0.1-0.2 MPa/s), and the tip's error is the PMAs'
    # grown about tenfold by the arm's length (1.0 mm)
    assert np.all(variation[0] <= QUIET_PMA * 1e-6), variation
    assert 2.0 * compensated.max() < tips[0] < 2.0 and tips[1] > tips[0], tips
    assert len(compensated) == 3 and np.all(compensated < 0.2)            # mm
    assert np.all(uncompensated > 1.5 * compensated), (compensated, uncompensated)
    assert uncompensated.mean() > 1.5 * compensated.mean(), (compensated, uncompensated)


@pytest.mark.parametrize('kwargs, key', [
    (dict(integrator='euler'), 'sim.integrator'),
    (dict(dt=0.0), 'sim.dt'),
    (dict(duration=0.0105), 'sim.duration'),
    (dict(control_period=1.5e-3), 'control.period'),
    (dict(control_period=0.0), 'control.period'),
])
def test_bad_simulation_settings_are_rejected(kwargs, key):
    model = load_model(CONFIG / 'planar_2r.yaml')
    law = ComputedTorqueLaw(model, [50.0, 50.0], [10.0, 10.0])
    args = dict(duration=0.01, dt=1e-3) | kwargs
    with pytest.raises(ConfigError, match=key.replace('.', r'\.')):
        simulate(model, law, MinimumJerk([0, 0], [1, 1], 0, 1), [0, 0], [0, 0], **args)


def test_divergence_is_reported_with_the_log_so_far():
    # gains far too high for a 10 ms zero-order hold: the sampled loop is unstable
    model = load_model(CONFIG / 'planar_2r.yaml')
    law = ComputedTorqueLaw(model, [1e6, 1e6], [2e3, 2e3])
    reference = MinimumJerk([0.1, 0.1], [0.5, 0.3], 0.0, 1.0)
    with pytest.raises(SimulationDiverged, match='diverged at t = ') as info:
        simulate(model, law, reference, [0.0, 0.0], [0.0, 0.0], 60.0, 1e-2, control_period=1e-2)
    log = info.value.log
    assert 0.0 < info.value.t < 60.0 and 0.0 < log.t[-1] <= info.value.t
    assert log.q.shape == (len(log.t), 2) and np.all(np.isfinite(log.q))
    assert np.max(np.abs(log.error[-1])) > 1e3
