"""
Identification (`continuum-ctrl identify`): readers, the actuator-lag filter, recovery on a
mismatched simulated arm, better control with the fitted file, the MCAP round trip, the
actuator lag, and one clear error line for each kind of bad input.
"""

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from continuum_ctrl.apps import cli
from continuum_ctrl.control.references import Multisine
from continuum_ctrl.identify.bag import BagWriter, stamp, write_run
from continuum_ctrl.identify.data import read_csv, read_diagnostics, read_mcap
from continuum_ctrl.identify.fit import DEFAULT_FIT, identify, Options
from continuum_ctrl.identify.report import fitted_yaml, text
from continuum_ctrl.identify.setup import read_setup
from continuum_ctrl.identify.signals import applied_mean
from continuum_ctrl.apps.demo import align, write_csv

sys.path.insert(0, str(Path(__file__).parents[1]))
from support.identify_plant import (assert_recovered, closed_loop, MISMATCH,  # noqa: E402
                                    NOMINAL_GAINS, PARAMS, still_csv, synthetic_run)

EXCITATION = 'config/identify_excitation.yaml'
#: sensor noise of the acceptance runs: m and m/s standard deviations
NOISE = {'noise.position': 1e-5, 'noise.velocity': 1e-3, 'noise.seed': 3}
TRUTH = {'stiffness': 1.2 * 2200.0, 'damping': 0.75 * 30.0, 'area': 1.1 * 1.33e-4,
         'deadzone': 15e3}


@pytest.fixture(scope='module')
def setup():
    return read_setup(PARAMS)


def names(setup):
    return setup.joints.model_names


def test_multisine_stays_inside_and_has_exact_derivatives():
    ref = Multisine([0.013] * 3, [0.007] * 3, [0.2, 3.0], 4)
    times = np.arange(0.0, 60.0, 0.01)
    q = np.array([ref.sample(t)[0] for t in times])
    assert np.all(np.abs(q - 0.013) <= 0.007 + 1e-15)
    assert np.max(q) - np.min(q) > 0.007                 # it really moves
    assert len(np.unique(np.round(ref.omega, 12))) == ref.omega.size   # distinct frequencies
    h = 1e-6
    for t in (0.3, 7.1, 42.0):
        (qm, qdm, _), (q0, qd0, qdd0), (qp, qdp, _) = (ref.sample(t + s) for s in (-h, 0, h))
        np.testing.assert_allclose(qd0, (qp - qm) / (2 * h), atol=1e-7)
        np.testing.assert_allclose(qdd0, (qdp - qdm) / (2 * h), atol=1e-5)


def _cell_means(times, dt, function):
    """The mean of `function` over each cell ``times -+ dt / 2``, by a fine midpoint rule."""
    fine = times[:, None] + dt * ((np.arange(1000) + 0.5) / 1000 - 0.5)[None, :]
    return function(fine).mean(axis=1)


def test_applied_pressure_is_the_cell_mean_of_the_delayed_first_order_lag():
    dt = 0.001
    times = np.arange(0.0, 0.3, dt)
    command_t = np.array([0.0, 0.05, 0.15])
    command = np.array([[0.0], [2.0e5], [1.0e5]])
    p, defined = applied_mean(command_t, command, times, time_constant=0.03, delay=0.005)
    np.testing.assert_array_equal(defined, times - 0.5 * dt >= 0.005)   # from the arrival on
    at_switch = 2e5 * (1 - np.exp(-(0.155 - 0.055) / 0.03))

    def closed_form(t):
        step1 = 2e5 * (1 - np.exp(-(t - 0.055) / 0.03))
        step2 = 1e5 + (at_switch - 1e5) * np.exp(-(t - 0.155) / 0.03)
        return np.where(t < 0.055, 0.0, np.where(t < 0.155, step1, step2))

    np.testing.assert_allclose(p[:, 0], _cell_means(times, dt, closed_form), atol=1.0)


@pytest.mark.parametrize('time_constant, delay', [(0.0, 0.0), (0.0, 0.003), (0.03, 0.005)])
def test_applied_mean_ignores_rounding_at_ties(time_constant, delay):
    """
    Commands logged at the samples' own times, a hair before or after as rounding falls, give
    the same cell means: each counts half in its sample's cell (a point value of the hold
    would take the command before or after it, a whole period apart).
    """
    dt = 0.002
    times = dt * np.arange(200)
    command = np.random.default_rng(0).uniform(0.0, 3e5, (200, 2))
    mean, defined = applied_mean(times, command, times, time_constant, delay)
    for nudge in (-1e-12, 1e-12):
        nudged, _ = applied_mean(times + nudge, command, times, time_constant, delay)
        np.testing.assert_allclose(nudged[defined], mean[defined], rtol=0, atol=1.0)
    if time_constant == delay == 0.0:        # the hold's mean: half of each of two commands
        np.testing.assert_allclose(mean[1:], 0.5 * (command[:-1] + command[1:]), rtol=1e-12)


def test_synthetic_run_recovers_the_truth(setup):
    """An exact data set (the controller's own model, no noise): every parameter to 1 %."""
    run = synthetic_run(setup, duration=12.0)
    result = identify([run], setup)
    for e in result.estimates:
        key = e.key.split('.')[-1]
        assert e.value == pytest.approx(TRUTH[key], rel=0.01, abs=300.0 if key == 'deadzone'
                                        else 0.0), e.label
    assert result.r2_test_all > 0.999


@pytest.fixture(scope='module')
def excitation_fit(setup, tmp_path_factory):
    """35 s of multisine excitation on the mismatched, noisy plant (1 ms step), identified."""
    run, *_ = closed_loop([PARAMS, EXCITATION], {**MISMATCH, **NOISE}, 35.0, step=0.001)
    result = identify([run], setup)
    path = tmp_path_factory.mktemp('identify') / 'fitted.yaml'
    path.write_text(fitted_yaml(result, ['embedded loop']))
    return result, path


@pytest.mark.slow
def test_recovers_stiffness_area_and_deadzone(excitation_fit):
    result, _ = excitation_fit
    print('\n' + '\n'.join(f'{e.label}: {e.value:.6g} +- {e.se:.2g}' for e in result.estimates))
    assert_recovered(result, TRUTH)


@pytest.mark.slow
def test_recovers_damping(excitation_fit):
    """
    The plant steps at 1 ms: its damping-implicit Euler step holds the stiffness force over a
    step, which looks like ``K step / 2`` less damping (10 % at the config's 2 ms, 5 % here).
    """
    result, _ = excitation_fit
    for e in result.values('model.sections.damping'):
        assert e.value == pytest.approx(TRUTH['damping'], rel=0.15), e.label


@pytest.mark.slow
def test_the_excitation_stays_inside_the_pressure_range_on_an_arm_off_its_file(excitation_fit):
    """The shipped excitation (0.2-1 Hz) asks no PMA of the arm 20 % off for more than p_max."""
    result, _ = excitation_fit
    assert result.left_out == {'outside the stroke': 0, 'at the pressure limit': 0}


@pytest.mark.slow
def test_samples_at_the_pressure_limit_or_outside_the_stroke_are_left_out_and_said(setup):
    """
    An excitation up to 3 Hz asks the arm 20 % off for more than p_max in places (section 1
    carries the arm: about 13 % of the samples) and leaves the stroke in a few: both are left
    out and reported, and the rest still fits (R^2 > 0.99 on held-out data).
    """
    run, *_ = closed_loop([PARAMS, EXCITATION], {**MISMATCH, **NOISE}, 20.0,
                          controller_overrides={'reference.band': [0.2, 3.0]})
    result = identify([run], setup)
    left_out = result.left_out
    assert 0 < left_out['at the pressure limit'] <= 0.3 * result.samples, left_out
    assert left_out['outside the stroke'] <= 0.05 * result.samples, left_out
    assert result.r2_test_all > 0.99
    report = text(result, setup, ['run'])
    assert f"{left_out['at the pressure limit']} at the pressure limit" in report
    for e in result.values('model.sections.stiffness'):
        assert e.value == pytest.approx(TRUTH['stiffness'], rel=0.03), e.label


@pytest.mark.slow
def test_fitted_file_halves_the_tracking_error(excitation_fit):
    """
    The standard reference (the config's sinusoid) on the mismatched plant: excite, identify,
    run with both files, within 0.3 mm RMS.
    """
    _, fitted = excitation_fit
    data = yaml.safe_load(fitted.read_text())['/**']['ros__parameters']
    assert set(data) == {'model', 'output'}
    rms = []
    for files in ([PARAMS], [PARAMS, str(fitted)]):
        _, t, q, q_des = closed_loop(files, {**MISMATCH, **NOISE}, 10.0)
        rms.append(float(np.sqrt(np.mean((q - q_des)[t > 2.0] ** 2))))
    print(f'\nRMS tracking error after 2 s: nominal {rms[0] * 1e3:.2f} mm, fitted '
          f'{rms[1] * 1e3:.2f} mm')
    assert rms[1] <= 0.5 * rms[0] and rms[1] <= 0.3e-3


@pytest.mark.slow
def test_identifies_actuator_lag_and_delay(setup):
    """
    A 30 ms valve lag and 5 ms delay (1 ms plant step) on the mismatched plant, excited by
    the controller as its file has it: compensating the 20 ms / 5 ms valves it believes in,
    with the file's gains (kd 40, a 10 ms velocity filter). (Without any compensation the loop
    chatters behind the valves, and the chatter's content above the lag's corner reads as one
    37 ms lag without dead time; the excitation file's quieter gains, kd 20 or a 20 ms filter,
    leave too little content above it to tell the two apart: a 37-38 ms lag, no delay.)
    """
    run, *_ = closed_loop([PARAMS, EXCITATION], {**MISMATCH, **NOISE}, 20.0,
                          controller_overrides={'output.time_constant': 0.02,
                                                'output.delay': 0.005, **NOMINAL_GAINS},
                          time_constant=0.03, delay=0.005, step=0.001)
    result = identify([run], setup, Options(DEFAULT_FIT + ('time_constant', 'delay')))
    lag, = result.values('output.time_constant')
    delay, = result.values('output.delay')
    print(f'\ntime constant {lag.value * 1e3:.2f} +- {lag.se * 1e3:.2f} ms, delay '
          f'{delay.value * 1e3:.2f} +- {delay.se * 1e3:.2f} ms')
    assert lag.value == pytest.approx(0.03, rel=0.10)
    assert delay.value == pytest.approx(0.005, abs=0.002)      # one sample at 500 Hz
    assert 'round it up' in text(result, setup, ['run'])


def test_bag_written_by_the_package_reads_back_as_the_csv(setup, tmp_path):
    run = synthetic_run(setup, duration=6.0, noise=1e-5)
    bag = write_run(tmp_path / 'run.mcap', names(setup), run.t, run.q, run.command,
                    t0=1.7e9)
    write_csv(tmp_path / 'run.csv', names(setup), run.t, run.q, run.q, run.q, run.command)
    from_bag = read_mcap(bag, setup.joints)
    from_csv = read_csv(tmp_path / 'run.csv', setup.joints)
    np.testing.assert_allclose(from_bag.t - from_bag.t[0], from_csv.t, atol=2e-9)
    np.testing.assert_allclose(from_bag.q, from_csv.q, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(from_bag.command, from_csv.command, rtol=1e-8)
    a, b = (identify([r], setup).estimates for r in (from_bag, from_csv))
    for x, y in zip(a, b):
        assert x.value == pytest.approx(y.value, rel=1e-6), x.label


def test_ticks_before_the_first_command_have_empty_command_fields(setup, tmp_path):
    """The demo's CSV: no command yet is an empty field, not 0 Pa; identify skips those rows."""
    import csv
    run = synthetic_run(setup, duration=4.0)
    command = align(run.t[10:], run.command[10:], run.t)        # the first one at tick 10
    assert np.all(np.isnan(command[:10])) and np.array_equal(command[10:], run.command[10:])
    write_csv(tmp_path / 'late.csv', names(setup), run.t, run.q, run.q, run.q, command)
    write_csv(tmp_path / 'all.csv', names(setup), run.t, run.q, run.q, run.q, run.command)
    with open(tmp_path / 'late.csv', newline='') as handle:
        rows = list(csv.reader(handle))
    columns = [k for k, name in enumerate(rows[0]) if name.startswith('command_')]
    assert len(columns) == 9
    assert [{row[k] for k in columns} for row in rows[1:12]] == [{''}] * 10 + [
        {f'{v:.9g}' for v in run.command[10]}]
    assert all(rows[1][k] != '' for k in range(len(rows[0])) if k not in columns)
    late, whole = (read_csv(tmp_path / name, setup.joints) for name in ('late.csv', 'all.csv'))
    np.testing.assert_array_equal(late.t, whole.t[10:])
    np.testing.assert_array_equal(late.command, whole.command[10:])
    np.testing.assert_array_equal(late.q, whole.q[10:])


def test_diagnostics_as_rclpy_gives_them_go_into_a_bag_and_read_back(tmp_path):
    """The level (a `byte`, bytes in rclpy) and the figures of the controller's status."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    statuses = [DiagnosticStatus(level=DiagnosticStatus.WARN, name='c: control loop',
                                 message='active; the command chatters', hardware_id='/c',
                                 values=[KeyValue(key='chatter_index', value='0.76')]),
                DiagnosticStatus(level=DiagnosticStatus.OK, name='s', hardware_id='/s')]
    msg = DiagnosticArray(status=statuses)
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1700000000, 500000000
    with BagWriter(tmp_path / 'd.mcap') as bag:
        bag.write('/diagnostics', 'diagnostic_msgs/msg/DiagnosticArray', msg, 1)
    assert read_diagnostics(tmp_path / 'd.mcap', '/c') == [
        (1700000000.5, 'c: control loop', 1, 'active; the command chatters',
         {'chatter_index': '0.76'})]
    assert [status[2] for status in read_diagnostics(tmp_path / 'd.mcap')] == [1, 0]


def test_another_robots_joint_states_in_the_bag_are_skipped_and_counted(setup, tmp_path):
    """A gripper's states on the shared /joint_states, between the arm's: the same run."""
    run = synthetic_run(setup, duration=2.0)
    alone = read_mcap(write_run(tmp_path / 'alone.mcap', names(setup), run.t, run.q,
                                run.command), setup.joints)
    with BagWriter(tmp_path / 'shared.mcap') as bag:
        for time, position, values in zip(run.t, run.q, run.command):
            ns = int(round(time * 1e9))
            for joints, q in ((names(setup), position), (['gripper_finger'], [0.01])):
                bag.write('/joint_states', 'sensor_msgs/msg/JointState', {
                    'header': {'stamp': stamp(time), 'frame_id': ''}, 'name': list(joints),
                    'position': list(q), 'velocity': [], 'effort': []}, ns)
            bag.write('/continuum_controller/commands', 'std_msgs/msg/Float64MultiArray',
                      {'layout': {'dim': [], 'data_offset': 0}, 'data': list(values)}, ns)
    shared = read_mcap(tmp_path / 'shared.mcap', setup.joints)
    assert alone.foreign == 0 and shared.foreign == len(run.t)
    for field in ('t', 'q', 'command_t', 'command'):
        np.testing.assert_array_equal(getattr(shared, field), getattr(alone, field))


def test_cli_writes_the_fitted_file_and_report(setup, tmp_path, capsys):
    run = synthetic_run(setup, duration=8.0)
    bag_dir = tmp_path / 'bag'
    bag_dir.mkdir()
    write_run(bag_dir / 'bag_0.mcap', names(setup), run.t, run.q, run.command)
    (bag_dir / 'metadata.yaml').write_text(yaml.safe_dump({'rosbag2_bagfile_information': {
        'version': 9, 'storage_identifier': 'mcap', 'relative_file_paths': ['bag_0.mcap']}}))
    out, report = tmp_path / 'fitted.yaml', tmp_path / 'report'
    assert cli.main(['identify', PARAMS, str(bag_dir), '--out', str(out), '--report',
                     str(report), '--per-pma']) == 0
    printed = capsys.readouterr().out
    assert 'condition number' in printed and 'R^2' in printed
    data = yaml.safe_load(out.read_text())['/**']['ros__parameters']
    assert len(data['output']['area']) == 9 and len(data['model']['sections']['damping']) == 3
    assert '# standard error' in out.read_text()
    assert all((report / name).is_file() for name in ('report.txt', 'fitted.yaml',
                                                      'held_out.png'))


# -- bad input: one error line, exit status 2, no traceback ---------------------------------

def _bag(setup, path, run, names=None, topic='/continuum_controller/commands', command=None):
    return write_run(path, names or setup.joints.model_names, run.t, run.q,
                     run.command if command is None else command, topic)


def _no_topic(setup, tmp, run):
    return [str(_bag(setup, tmp / 'a.mcap', run, topic='/other/commands'))]


def _joint_names(setup, tmp, run):
    renamed = [name.replace('pma', 'muscle') for name in setup.joints.model_names]
    return [str(_bag(setup, tmp / 'a.mcap', run, names=renamed))]


def _command_length(setup, tmp, run):
    return [str(_bag(setup, tmp / 'a.mcap', run, command=run.command[:, :8]))]


def _too_little(setup, tmp, run):
    write_csv(tmp / 'a.csv', setup.joints.model_names, run.t[:60], run.q[:60], run.q[:60],
              run.q[:60], run.command[:60])
    return [str(tmp / 'a.csv')]


def _unexcited(setup, tmp, run):
    return still_csv(setup, tmp, run, 0.013, 2.2e5)


def _below_deadzone(setup, tmp, run):
    write_csv(tmp / 'a.csv', setup.joints.model_names, run.t, run.q, run.q, run.q,
              np.zeros_like(run.command))
    return [str(tmp / 'a.csv')]


#: (case, data builder, what the error line must say); joinable to the bad-input corpus
BAD_INPUTS = [
    ('bag without the topics', _no_topic, "no messages on topic '/continuum_controller/"),
    ('joint names not in PARAMS', _joint_names, 'do not match the parameter file'),
    ('commands of the wrong length', _command_length, 'commands have [8] values, expected 9'),
    ('too little data', _too_little, 'too little data'),
    ('unexcited parameters', _unexcited, 'run an excitation reference'),
    ('pressures never above the dead zone', _below_deadzone, 'above the dead zone'),
    ('no such file', lambda setup, tmp, run: [str(tmp / 'missing.mcap')], 'no such file'),
]


@pytest.mark.parametrize('case, build, message', BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_error_line(setup, tmp_path, capsys, case, build, message):
    run = synthetic_run(setup, duration=4.0)
    out = tmp_path / 'fitted.yaml'
    status = cli.main(['identify', PARAMS, *build(setup, tmp_path, run), '--out', str(out)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert not out.exists()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('continuum-ctrl identify: error: '), err
    assert message in lines[0]
    assert 'Traceback' not in err
    if case == 'unexcited parameters':
        assert 'section' in lines[0] or 'area' in lines[0]


@pytest.mark.ros
def test_record_writes_a_bag_identify_reads(setup, tmp_path):
    """`continuum-ctrl record` against a publisher of joint states and commands."""
    import os
    import subprocess
    import time

    import rclpy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    env = dict(os.environ)             # conftest: this machine, a domain of this run's own
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('fake_arm', context=context)
    states = node.create_publisher(JointState, '/joint_states', 10)
    commands = node.create_publisher(Float64MultiArray, '/continuum_controller/commands', 10)
    out = tmp_path / 'rec.mcap'
    recorder = subprocess.Popen([sys.executable, '-m', 'continuum_ctrl.apps.cli', 'record',
                                 str(out), '/joint_states', '/continuum_controller/commands',
                                 '--duration', '3'], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    sent = 0
    try:
        end = time.monotonic() + 30.0
        while recorder.poll() is None and time.monotonic() < end:
            msg = JointState(name=names(setup), position=[0.01 + 1e-4 * sent] * 9)
            states.publish(msg)
            commands.publish(Float64MultiArray(data=[1e5] * 9))
            sent += 1
            time.sleep(0.01)
        output = recorder.communicate(timeout=30)[0]
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
    assert recorder.returncode == 0, output
    run = read_mcap(out, setup.joints)
    assert len(run.t) > 50 and np.all(np.diff(run.t) > 0)
    np.testing.assert_allclose(run.command, 1e5)
    np.testing.assert_allclose(np.diff(run.q[:, 0]), 1e-4, rtol=1e-6)  # none lost, in order


def test_a_fit_the_nodes_would_refuse_is_not_written(setup):
    """
    A negative damping (a disc-stack arm excited to its pressure limits gave -27 N s/m, held-out
    R^2 -0.29) means the model does not explain the data: `identify --out` refuses it in one
    line naming the value, instead of writing a file the nodes refuse at start-up.
    """
    from continuum_ctrl.identify.report import unusable

    result = identify([synthetic_run(setup, duration=8.0)], setup)
    assert unusable(result) is None
    estimates = [dataclasses.replace(e, value=-27.3) if e.label == 'section 2 damping' else e
                 for e in result.estimates]
    problem = unusable(dataclasses.replace(result, estimates=estimates))
    assert problem.startswith('not written: the fit gives section 2 damping = -27.3 N s/m')
    assert 'model.sections.damping must be >= 0' in problem


def test_a_dead_zone_fitted_below_zero_is_held_at_zero_the_bounded_optimum(setup):
    """
    A plant whose pressures read 5 kPa high (a "dead zone" of -5 kPa, as a gravity load the
    model gets wrong looks): the free fit finds it, `identify` holds it at its bound and
    refits the rest, and no dead zone at or above zero fits the training data better.
    """
    from continuum_ctrl.actuation.pressure_map import ActuationMap
    from continuum_ctrl.identify.fit import Identification

    run = synthetic_run(setup, duration=8.0, deadzone=-5e3)
    fit = ('stiffness', 'damping', 'area', 'deadzone')
    free = Identification([run], setup, Options(fit)).fit()
    assert free.values('output.deadzone')[0].value == pytest.approx(-5e3, rel=0.05)
    bounded = identify([run], setup, Options(fit))
    (held,) = bounded.values('output.deadzone')
    assert (held.value, held.se) == (0.0, 0.0)
    assert any('below its bound; held at 0 Pa' in line for line in bounded.details)
    assert [e.key for e in bounded.estimates] == [e.key for e in free.estimates]
    assert bounded.rms_train > free.rms_train

    def held_at(pa):
        act = setup.actuation
        at = dataclasses.replace(setup, actuation=ActuationMap(
            act.n, act.area, pa, act.p_min, act.p_max, slope=act.slope, stroke=act.stroke))
        return Identification([run], at, Options(fit[:3])).fit().rms_train

    assert held_at(0.0) == pytest.approx(bounded.rms_train, rel=1e-9)
    assert held_at(0.0) < held_at(1e3) < held_at(3e3)


def test_a_parameter_the_data_do_not_pin_is_refused_or_held_at_the_files_value(setup):
    """
    A slow excitation (0.05-0.1 Hz) behind 20 um of noise hardly shows damping: the fit
    refuses it, naming it; with `hold` every damping is held at the file's value, said, and
    stiffness, area and dead zone are still the truth.
    """
    from continuum_ctrl.params import ConfigError

    run = synthetic_run(setup, duration=20.0, band=(0.05, 0.1), noise=2e-5)
    fit = ('stiffness', 'damping', 'area', 'deadzone')
    with pytest.raises(ConfigError, match='the data do not excite section . damping'):
        identify([run], setup, Options(fit))
    result = identify([run], setup, Options(fit, hold=True))
    damping = result.values('model.sections.damping')
    assert [(e.value, e.se) for e in damping] == [(30.0, 0.0)] * 3
    assert sum("damping: held at the file's value" in line for line in result.details) == 3
    for key, truth in (('model.sections.stiffness', TRUTH['stiffness']),
                       ('output.area', TRUTH['area']), ('output.deadzone', TRUTH['deadzone'])):
        for e in result.values(key):
            assert e.value == pytest.approx(truth, rel=0.01), e


def test_the_smoothing_window_for_a_cutoff_has_its_cutoff_at_any_rate():
    from scipy.signal import freqz, savgol_coeffs

    from continuum_ctrl.identify.signals import POLYORDER, window_for_cutoff, window_samples

    for rate in (250.0, 500.0, 1000.0):
        for hz in (5.0, 10.0):
            samples = window_samples(1.0 / rate, window_for_cutoff(hz))
            f, h = freqz(savgol_coeffs(samples, POLYORDER), worN=20000, fs=rate)
            assert f[np.argmax(np.abs(h) < 2 ** -0.5)] == pytest.approx(hz, rel=0.03)


@pytest.mark.slow
def test_calibration_on_the_mujoco_arm(setup, tmp_path):
    """
    The recipe on an arm the controller's equations did not build: the MuJoCo disc stack 20 %
    off the file (measured: stiffness 2446 N/m for 2640, area 1.35e-4 for 1.46e-4 m^2 at the
    right ratio, the force scale resting on gravity and inertia; held-out R^2 0.96). Without
    integral action the fitted file tracks to 0.02-0.03 mm where the nominal one is 1.8 mm off.
    """
    plant = {'engine': 'mujoco', **MISMATCH, **NOISE}
    run, *_ = closed_loop([PARAMS, EXCITATION], plant, 35.0)
    result = identify([run], setup)
    assert result.r2_test_all > 0.9 and result.left_out['at the pressure limit'] == 0
    stiffness = [e.value for e in result.values('model.sections.stiffness')]
    area, = result.values('output.area')
    for k in stiffness:                         # the ratio the statics fix
        assert k / area.value == pytest.approx(TRUTH['stiffness'] / TRUTH['area'], rel=0.05)
    fitted = tmp_path / 'fitted.yaml'
    fitted.write_text(fitted_yaml(result, ['mujoco']))
    rms = []
    for files in ([PARAMS], [PARAMS, str(fitted)]):
        _, t, q, q_des = closed_loop(files, plant, 8.0, controller_overrides={'gains.ki': [0.0]})
        error = (q - q_des)[t > 4.0]
        rms.append(np.sqrt(np.mean(error.reshape(len(error), 3, 3) ** 2, axis=(0, 2))))
    nominal, calibrated = rms
    assert nominal.min() > 1e-3 and calibrated.max() < 0.1e-3, (nominal, calibrated)


@pytest.mark.parametrize('missing', ['none.yaml', 'run.mcap', 'run.csv'])
def test_a_missing_input_fails_at_once_without_loading_scipy(tmp_path, missing):
    """One error line and status 2 before the fit's modules (and SciPy, 2.6 s) are imported."""
    import subprocess
    params, data = (tmp_path / missing, tmp_path) if missing.endswith('.yaml') else (
        PARAMS, tmp_path / missing)
    code = ('import sys\nfrom continuum_ctrl.apps import cli\nstatus = cli.main(sys.argv[1:])\n'
            "sys.exit(99 if 'scipy' in sys.modules else status)")
    done = subprocess.run([sys.executable, '-c', code, 'identify', str(params), str(data)],
                          capture_output=True, text=True, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr            # 99: SciPy was imported first
    assert len(lines) == 1 and lines[0].startswith('continuum-ctrl identify: error: ')
    assert missing in lines[0]
