"""
Controller and simulator as real processes over DDS, started with the launch command lines.

Tracking bounds come from the gains: with the plant equal to the model the error obeys
``e'' + Kd e' + Kp e = 0``; what remains is the measurement delay delta (one publish period,
a control period, transport, and scheduling on a loaded 2-core machine, where the loop may
run at half its rate: we allow 50 ms), which acts as a lag of the reference,
``|e| <~ |qd_des| delta``.
"""

import os
import signal
import time

import numpy as np
import pytest
from rcl_interfaces.srv import GetParameters, SetParameters, SetParametersAtomically
from rclpy.parameter import Parameter
from rclpy.time import Time
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from continuum_ctrl.params import file_parameters
from continuum_ctrl.params.launch_description import config_path, CONTROLLER
from continuum_ctrl.models import load_model
from continuum_ctrl.ros.conversion import stamp_seconds
from continuum_ctrl.runtime.scheduling import set_thread_priority
from support.command_bounds import (QUIET_CHATTER, QUIET_PMA, recorded, worst_chatter,
                                    worst_variation)
from support.ros_nodes import in_thread, params_file, running, windows

#: starts node processes or DDS participants, for more than a few seconds
pytestmark = [pytest.mark.ros, pytest.mark.slow]


#: measurement delay allowed for on a loaded 2-core machine, s
DELAY = 0.05
#: states in the controller-only tests, model order (joint1, joint2), rad
STATE = np.array([0.6, 0.25])


def call(rec, service_type, name, request, timeout=30.0):
    """Call a service from the recorder's node; return the response."""
    client = rec.node.create_client(service_type, name)
    assert rec.wait(client.service_is_ready, timeout)
    future = client.call_async(request)
    assert rec.wait(future.done, timeout)
    return future.result()


def set_params(rec, **values):
    """Set controller parameters (dotted names as keyword '__'); return the results."""
    request = SetParameters.Request(parameters=[
        Parameter(name.replace('__', '.'), value=value).to_parameter_msg()
        for name, value in values.items()])
    return call(rec, SetParameters, f'/{CONTROLLER}/set_parameters', request).results


def set_atomically(rec, **values):
    """Set controller parameters all or nothing; return the one result."""
    request = SetParametersAtomically.Request(parameters=[
        Parameter(name.replace('__', '.'), value=value).to_parameter_msg()
        for name, value in values.items()])
    return call(rec, SetParametersAtomically, f'/{CONTROLLER}/set_parameters_atomically',
                request).result


def get_param(rec, name):
    """Return a controller parameter's value message."""
    response = call(rec, GetParameters, f'/{CONTROLLER}/get_parameters',
                    GetParameters.Request(names=[name]))
    return response.values[0]


def settle(rec, seconds):
    """Record for `seconds` and return the states of that time: t, q_des, q, effort."""
    start = time.time()
    rec.run(seconds)
    return rec.arrays(since=start)


def catch_up(rec, until, timeout=10.0):
    """
    Record until the commands sent up to `until` (s) are in.

    A recorder starved by the nodes' SCHED_FIFO loops on a loaded machine lagged the states
    by over 4 s (1 run in 6 here): no command after the blend had reached it.
    """
    rec.wait(lambda: rec.commands and rec.commands[-1][0] >= until, timeout)


def tracking_bound(tree, delay=DELAY):
    """Return the largest lag error |qd_des| delta of a sinusoid reference, per joint."""
    ref = tree['reference']
    return np.abs(ref['amplitude']) * 2 * np.pi * np.asarray(ref['frequency']) * delay


@pytest.fixture(scope='class')
def two_link(tmp_path_factory):
    """Run the 2R controller and simulator; yield ``(recorder, parameter tree)``."""
    tmp_path = tmp_path_factory.mktemp('two_link')
    path = params_file(tmp_path, 'planar_2r.yaml', continuum_controller={
        'state_timeout': 0.5, 'state_decimation': 5})
    tree, _ = file_parameters(path, 'continuum_controller')
    with running(tmp_path, path) as (rec, _):
        yield rec, tree


def trajectory(names, times, positions):
    """Return a JointTrajectory starting now (zero stamp)."""
    msg = JointTrajectory(joint_names=names)
    for t, p in zip(times, positions):
        point = JointTrajectoryPoint(positions=list(p))
        point.time_from_start.sec, point.time_from_start.nanosec = int(t), int(t % 1 * 1e9)
        msg.points.append(point)
    return msg


class TestTwoLink:
    """One 2R pair: it tracks its sinusoid first, then follows a trajectory sent to it."""

    def test_two_link_tracks_its_reference(self, two_link):
        rec, tree = two_link
        since, sim_since = len(rec.diagnostics), len(rec.sim_diagnostics)
        t, q_des, q, _ = settle(rec, 5.0)
        error = np.abs(q - q_des)[t > t[0] + 1.0]           # after the 1 s blend
        bound = tracking_bound(tree)                         # 0.063 and 0.047 rad
        assert len(error) > 200                             # ~/state at 100 Hz
        rms = np.sqrt(np.mean(error ** 2, axis=0))
        assert np.all(rms < bound), f'RMS {rms}; {windows(rec, since, sim_since)}'
        assert np.all(np.percentile(error, 90, axis=0) < 2 * bound)
        assert np.ptp(q_des[:, 0]) > 0.7                    # it moved: 2 x 0.4 rad amplitude
        # quiet efforts: none of their power above 10 Hz (command_bounds.py)
        assert worst_chatter(*recorded(rec.commands, t[0] + 1.0)) < QUIET_CHATTER

    def test_trajectory_followed_and_invalid_ones_rejected(self, two_link):
        rec, _ = two_link
        pub = rec.node.create_publisher(JointTrajectory, f'/{CONTROLLER}/joint_trajectory', 10)
        rec.wait(lambda: pub.get_subscription_count() > 0, 30.0)
        goal = np.array([0.8, 0.5])                           # joint1, joint2
        pub.publish(trajectory(['joint2', 'joint1'], [1.0, 2.0], [[0.2, 0.4], goal[::-1]]))
        t, q_des, q, _ = settle(rec, 3.5)
        assert np.allclose(q_des[-1], goal, atol=1e-9)
        assert np.all(np.abs(q[-1] - goal) < 0.02)
        for bad in (trajectory(['joint1', 'elbow'], [1.0], [[0.1, 0.1]]),
                    trajectory(['joint1', 'joint2'], [1.0, 0.5], [[0.1, 0.1], [0.2, 0.2]]),
                    trajectory(['joint1', 'joint2'], [1.0], [[0.1]]),
                    trajectory(['joint1', 'joint2'], [1.0], [[0.1, float('inf')]])):
            pub.publish(bad)
        t, q_des, q, _ = settle(rec, 2.5)
        assert np.allclose(q_des, goal, atol=1e-9)            # the reference was kept
        assert rec.wait(lambda: rec.diagnostics[-1]['rejected_trajectory'] == '4', 5.0)


def test_continuum_arm_tracks_its_reference(tmp_path):
    """
    The integral-model plant under the CoG-model controller, in pressure mode.

    Kp = 700 1/s^2: the error transient decays as exp(-26 t); the reference moves at most
    0.007 m * 2 pi * 0.25 Hz = 11 mm/s, so a 50 ms lag costs 0.55 mm. Delays also spoil the
    cancellation of the PMAs' stiffness and damping, which the inertia-weighted feedback
    (M Kp, 2.4 to 77 N/m against 2200 N/m) corrects only slowly: embedded simulations give
    0.7 / 1.2 / 2.1 mm RMS at 4 / 8 / 16 ms of delay, and a machine loaded by other jobs
    adds stalls of tens of ms (measured here: 1.5 to 5 mm). We require the RMS error per
    section below the 7 mm amplitude, where a controller that does nothing (PMAs at rest,
    about 0 m) would be off by more than the 13 mm centre, and actual lengths that follow the
    desired ones (mean correlation > 0.5; doing nothing gives about 0, a scrambled joint
    order about -0.5).
    """
    path = params_file(tmp_path, 'continuum_3section.yaml',
                       continuum_controller={'state_timeout': 0.5, 'state_decimation': 5})
    privileged = in_thread(lambda: set_thread_priority(50)) is None
    with running(tmp_path, path) as (rec, processes):
        t, q_des, q, effort = settle(rec, 6.0)
        catch_up(rec, t[-1])
        commands = np.array([c[1] for c in rec.commands])
        quiet = recorded(rec.commands, t[0] + 1.5)
        policies = [os.sched_getscheduler(p.pid) for p in processes]
    # the config's realtime_priority (/**: both nodes) puts both loop threads under SCHED_FIFO
    assert policies == [os.SCHED_FIFO if privileged else os.SCHED_OTHER] * 2
    assert_continuum_tracks(t, q_des, q, effort, commands, quiet)


def assert_continuum_tracks(t, q_des, q, effort, commands, quiet):
    """
    Assert the bounds of `test_continuum_arm_tracks_its_reference` on a continuum run.

    The run's states (`t`, `q_des`, `q`, `effort`), its commands and its commands after the
    blend (`quiet`: t, values).
    """
    keep = t > t[0] + 1.5
    error = (q - q_des)[keep]
    rms = np.sqrt(np.mean(error.reshape(len(error), 3, 3) ** 2, axis=(0, 2)))
    assert len(error) > 200                             # ~/state at 100 Hz
    assert np.all(rms < 0.007), rms
    follow = [np.corrcoef(q[keep, k], q_des[keep, k])[0, 1] for k in range(9)]
    assert np.mean(follow) > 0.5, follow
    assert commands.shape[1] == 9
    assert np.all((commands >= 0.0) & (commands <= 5e5))
    assert np.all(effort >= -1e-9) and np.all(effort <= 66.5 + 1e-9)
    # the commands beside the error: quiet (0.1-0.2 MPa/s in one process), not chattering
    print(f'\nRMS error per section {np.round(rms * 1e3, 3)} mm, worst command variation '
          f'{worst_variation(*quiet) * 1e-6:.2f} MPa/s')
    assert worst_variation(*quiet) <= QUIET_PMA, worst_variation(*quiet)


#: stamped commands replayed late (0.5 s old) into the running simulator
REPLAYS = 20


def test_continuum_arm_tracks_on_stamped_commands_and_drops_late_ones(tmp_path):
    """
    `output.message: joint_state` for both nodes (`/**`): the loop tracks within the bounds of
    the default's test, its commands as quiet; each carries the joint names and the stamp of
    its tick (at most a few ms before it is sent). Then REPLAYS copies of a command set to
    p_max everywhere, stamped 0.5 s ago, are published beside the controller's: the simulator
    drops every one and counts it (`late_commands`), and the arm tracks on. Changing the
    message kind, or the joints it names, at run time is refused.
    """
    path = params_file(tmp_path, 'continuum_3section.yaml',
                       all={'output': {'message': 'joint_state'}},
                       continuum_controller={'state_timeout': 0.5, 'state_decimation': 5})
    with running(tmp_path, path) as (rec, _):
        heard = []
        rec.node.create_subscription(         # with the send time (DDS source timestamp)
            JointState, f'/{CONTROLLER}/commands',
            lambda msg, info: heard.append((msg, info['source_timestamp'] * 1e-9)), 1000)
        t, q_des, q, effort = settle(rec, 6.0)
        catch_up(rec, t[-1])
        commands = np.array([c[1] for c in rec.commands])
        quiet = recorded(rec.commands, t[0] + 1.5)
        before = int(rec.sim_diagnostics[-1]['late_commands'])
        replay = rec.node.create_publisher(JointState, f'/{CONTROLLER}/commands', 10)
        assert rec.wait(lambda: replay.get_subscription_count() >= 3, 30.0)  # sim, recorder, us
        old = heard[-1][0]
        old.effort = [5e5] * len(old.effort)
        old.header.stamp = Time(nanoseconds=time.time_ns() - 500_000_000).to_msg()
        for _ in range(REPLAYS):      # paced: the histories keep the last 10 of a burst
            replay.publish(old)
            rec.run(0.01)
        assert rec.wait(lambda: int(rec.sim_diagnostics[-1]['late_commands'])
                        >= before + REPLAYS, 10.0), rec.sim_diagnostics[-1]['late_commands']
        since = time.time()
        t_after, q_des_after, q_after, _ = settle(rec, 2.0)
        # the message kind and the names it carries are fixed while the node lives
        names = [f'section{i}_pma{j}' for i in (1, 2, 3) for j in (1, 2, 3)]
        for key, value in (('output__message', 'multiarray'), ('joints', names[::-1])):
            result, = set_params(rec, **{key: value})
            assert not result.successful and key.replace('__', '.') in result.reason
    assert_continuum_tracks(t, q_des, q, effort, commands, quiet)
    print(f'\nlate commands before the replay: {before}')
    ours = [(msg, sent) for msg, sent in heard if msg.effort[0] != 5e5]
    stamps = np.array([stamp_seconds(msg.header.stamp) for msg, _ in ours])
    waits = np.array([sent for _, sent in ours]) - stamps       # the tick's compute time
    assert len(ours) > 1000 and all(list(msg.name) == names for msg, _ in ours)
    assert np.all(np.diff(stamps) > 0.0)                   # one stamp per tick, in order
    assert np.median(waits) < 0.01 and np.all(waits > -1e-3), np.percentile(waits, [50, 99])
    error = np.abs(q_after - q_des_after)[t_after > since + 0.1]
    assert np.sqrt(np.mean(error ** 2)) < 0.007                 # still tracking


def state_publisher(rec, names, positions, rate=200.0):
    """Publish a fixed JointState from the recorder's node at `rate` Hz."""
    pub = rec.node.create_publisher(JointState, '/joint_states', 10)
    msg = JointState(name=names, position=positions, velocity=[0.0] * len(names))
    rec.node.create_timer(1.0 / rate, lambda: pub.publish(msg))


def expected_command(model, kp, q_ref):
    """Return the computed torque at STATE with zero velocity, hold at `q_ref` (model order)."""
    return model.inverse_dynamics(STATE, np.zeros(2), -np.asarray(kp) * (STATE - q_ref))


@pytest.fixture(scope='class')
def reordered(tmp_path_factory):
    """Run the 2R controller alone with joints [joint2, joint1], fed a fixed state."""
    tmp_path = tmp_path_factory.mktemp('reordered')
    path = params_file(tmp_path, 'planar_2r.yaml', continuum_controller={
        'joints': ['joint2', 'joint1'], 'state_timeout': 1.0,
        'reference': {'type': 'hold', 'position': [0.3, 0.5], 'blend_time': 0.0},
        'gains': {'kp': [100.0, 50.0], 'kd': [20.0, 20.0]},
        'limits': {'effort': [500.0, 500.0]}})
    model = load_model(config_path('planar_2r.yaml'))
    with running(tmp_path, path, with_simulator=False) as (rec, processes):
        # names in yet another order, with a joint the controller does not know
        state_publisher(rec, ['wrist', 'joint1', 'joint2'], [9.0, *STATE])
        assert rec.wait(lambda: rec.status == 'active', 60.0, processes)
        yield rec, model, processes


def latest_command(rec, seconds=0.5):
    """Return the last command after `seconds` more of messages."""
    rec.run(seconds)
    return rec.commands[-1][1]


class TestReordered:
    """One controller: its commands in joints order first, then gain changes at run time."""

    def test_commands_in_joints_order_whatever_the_state_order(self, reordered):
        rec, model, _ = reordered
        command = latest_command(rec)
        tau = expected_command(model, [50.0, 100.0], [0.5, 0.3])   # model order
        assert command.shape == (2,)
        assert np.allclose(command, tau[[1, 0]], rtol=1e-9, atol=1e-9)

    def test_runtime_gain_change_and_refusals(self, reordered):
        rec, model, _ = reordered
        before = latest_command(rec)
        results = set_params(rec, gains__kp=[300.0, 10.0])
        assert results[0].successful
        after = latest_command(rec)
        assert np.allclose(after, expected_command(model, [10.0, 300.0], [0.5, 0.3])[[1, 0]],
                           rtol=1e-9)
        assert not np.allclose(after, before)
        for bad in ([-1.0, 5.0], [1.0], [1.0, float('nan')]):
            result = set_params(rec, gains__kp=bad)[0]
            assert not result.successful and 'gains.kp' in result.reason
        # a set with one bad member is refused whole, whichever check refuses it
        result = set_atomically(rec, gains__kd=[3.0, 3.0], rate_hz=-5.0)
        assert not result.successful and 'rate_hz' in result.reason
        result = set_atomically(rec, gains__kd=[3.0, 3.0], reference__type='spiral')
        assert not result.successful and 'reference.type' in result.reason
        assert list(get_param(rec, 'gains.kd').double_array_value) == [20.0, 20.0]
        assert not set_params(rec, model__type='urdf')[0].successful        # read-only
        assert list(get_param(rec, 'gains.kp').double_array_value) == [300.0, 10.0]
        assert np.allclose(latest_command(rec), after, rtol=1e-12)


def test_realtime_priority_of_the_loop_thread_at_start_and_at_run_time(tmp_path):
    """The loop thread at SCHED_FIFO from the file, the others one below; then all normal."""
    path = params_file(tmp_path, 'planar_2r.yaml', continuum_controller={
        'realtime_priority': 30})
    privileged = in_thread(lambda: set_thread_priority(30)) is None
    with running(tmp_path, path, with_simulator=False) as (rec, processes):
        pid = processes[0].pid
        log = (tmp_path / f'{CONTROLLER}.log')
        if privileged:      # the loop thread at 30; the executor (main) and DDS threads at 29
            assert os.sched_getscheduler(pid) == os.SCHED_FIFO
            assert os.sched_getparam(pid).sched_priority == 29
            priorities = [os.sched_getparam(int(tid)).sched_priority
                          for tid in os.listdir(f'/proc/{pid}/task')]
            assert priorities.count(30) == 1 and set(priorities) == {29, 30}, priorities
        else:
            assert rec.wait(lambda: 'cannot use SCHED_FIFO' in log.read_text(), 10.0)
        result = set_params(rec, realtime_priority=100)[0]
        assert not result.successful and 'realtime_priority' in result.reason
        assert set_params(rec, realtime_priority=0)[0].successful
        assert rec.wait(lambda: os.sched_getscheduler(pid) == os.SCHED_OTHER, 10.0)
        assert rec.status is not None and processes[0].poll() is None


@pytest.mark.parametrize('message', ['multiarray', 'joint_state'])
def test_runner_stops_nodes_and_the_last_command_is_safe(tmp_path, message):
    """
    `continuum-ctrl launch` forwards SIGINT; the controller's last command is zero effort, in
    the kind of message `output.message` names (a JointState stamped when it was sent).
    """
    import subprocess
    import sys
    from support.ros_nodes import Recorder, START_TIMEOUT
    path = params_file(tmp_path, 'planar_2r.yaml', all={'output': {'message': message}})
    with Recorder(message=message, bag=True) as rec:
        runner = subprocess.Popen([sys.executable, '-m', 'continuum_ctrl.apps.cli', 'launch',
                                   'simulation', '--params-file', str(path)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            assert rec.wait(lambda: rec.active_since is not None, START_TIMEOUT, [runner])
            rec.run(1.0)
            assert np.any(rec.commands[-1][1] != 0.0)
            runner.send_signal(signal.SIGINT)
            assert runner.wait(timeout=30.0) == 0
        finally:
            if runner.poll() is None:
                runner.kill()
        rec.run(1.0)
    assert np.array_equal(rec.commands[-1][1], [0.0, 0.0])
    *_, last, _, sent = [m for m in rec.messages if m[0].endswith('/commands')][-1]
    if message == 'joint_state':            # stamped as sent: a driver takes it
        assert list(last.name) == ['joint1', 'joint2']
        assert abs(stamp_seconds(last.header.stamp) - sent * 1e-9) < 0.01
