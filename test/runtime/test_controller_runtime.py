"""
The controller's runtime ticked in process, as ros2_controllers' tests call `update()`.

The planar arm's runtime as the node builds it from its file (`node_pair.controller_runtime`),
with a fake clock: states posted as the node's input thread would, ticks at chosen times and
lateness, the command, the status, the ~/state rows, the log lines and the figures read back.
"""

import numpy as np
import pytest

from continuum_ctrl.control.loop import ACTIVE, STALE, TrajectoryRejected, WAITING
from continuum_ctrl.apps.node_pair import controller_runtime
from continuum_ctrl.runtime.controller_runtime import DEGRADED, RuntimeOptions, STATE_PARTS
from continuum_ctrl.runtime.lateness import LATE_SHARE, split, split_in_python

PERIOD = 0.002
#: what the node's diagnostics publish, read by docs/topics.md, the demo and the tests
KEYS = ('status', 'rate_hz', 'period_p50_us', 'period_p99_us', 'period_max_us',
        'jitter_p99_us', 'compute_p50_us', 'compute_p99_us', 'compute_max_us',
        'input_age_p50_us', 'input_age_p99_us', 'state_wait_p50_us', 'state_wait_p99_us',
        'grid_moved_us', 'state_latency_p50_us', 'state_latency_p99_us', 'missed_share',
        'command_variation', 'command_variation_joint', 'chatter_index', 'chatter_joint',
        'run_ticks', 'run_late_ticks', 'run_missed_deadlines', 'run_period_p50_us',
        'run_period_p99_us', 'run_period_max_us', 'run_compute_p50_us', 'run_compute_p99_us',
        'run_compute_max_us', 'nonfinite_efforts', 'state_timeouts', 'run_state_rows_dropped',
        'clamped_tip_targets', 'reach_bounded_joints', 'planning', 'plans', 'plan_max_s',
        'planner_ready', 'rejected_estimated_speed', 'observer_dropped_samples',
        'integral_force_max', 'integral_held_joints', 'learnt_stiffness_max',
        'rejected_pressures')
#: what a loop learning from repetition adds (`ilc.enable`), before `rejected_pressures`
ILC_KEYS = ('ilc_state', 'ilc_trials', 'ilc_trial_rms', 'ilc_trend', 'ilc_gain')
Q = np.array([0.1, -0.2])


def runtime_of(resume_count=1, **options):
    runtime = controller_runtime('planar_2r.yaml', {'resume_count': resume_count})
    if options:
        runtime.options = RuntimeOptions(PERIOD, **options)
        runtime.restart()
    return runtime


def activate(runtime, ticks=1):
    """Post a state and tick, `ticks` times from t = 0; return the next tick's time."""
    for k in range(ticks):
        runtime.post_state(Q, np.zeros(2), k * PERIOD)
        runtime.tick(k * PERIOD)
    return ticks * PERIOD


def test_the_safe_command_until_a_state_then_control():
    runtime = runtime_of(resume_count=3)
    safe = runtime.loop.safe_command().copy()
    assert np.array_equal(runtime.tick(0.0), safe) and runtime.status == WAITING
    activate(runtime, 2)
    assert runtime.status == WAITING                  # the streak needs 3 valid states
    runtime.post_rejection('range')                   # a bad state breaks it
    activate(runtime, 3)
    assert runtime.status == ACTIVE
    command = runtime.tick(3 * PERIOD)
    assert np.all(np.isfinite(command)) and np.any(command != safe)   # gravity is held
    assert runtime.rejected == {'pressures': 0, 'range': 1}


def test_a_stale_state_falls_back_to_the_safe_command():
    runtime = runtime_of()
    t = activate(runtime)
    assert runtime.status == ACTIVE
    timeout = runtime.loop.settings.state_timeout
    runtime.tick(t + 0.5 * timeout)
    assert runtime.status == ACTIVE
    command = runtime.tick(t + 1.5 * timeout)
    assert runtime.status == STALE
    assert np.array_equal(command, runtime.loop.safe_command())
    assert any('no valid joint states' in text for _, text in runtime.drain_events())
    assert list(runtime.drain_events()) == []         # drained once


def test_a_rejected_pressure_is_counted_and_said_once():
    runtime = runtime_of()                            # effort output: pressures are refused
    runtime.post_pressures(np.full(2, 1e5), 0.0)
    runtime.post_pressures(np.full(2, 1e5), 0.0)
    runtime.tick(0.0)
    assert runtime.rejected['pressures'] == 2
    lines = [text for level, text in runtime.drain_events() if level == 'warn']
    assert len(lines) == 1 and 'rejected ~/pressures: the output is not pressure' in lines[0]


def test_the_figures_keys_and_what_they_count():
    runtime = runtime_of()
    runtime.tick(0.0)
    t = activate(runtime, 5)
    runtime.post_state(Q, np.zeros(2), t, latency=1e-3)
    runtime.tick(t + 0.5 * PERIOD)
    figures = dict(runtime.figures())
    assert tuple(figures) == KEYS
    learning = controller_runtime('planar_2r.yaml', {'ilc.enable': True})
    assert tuple(dict(learning.figures())) == KEYS[:-1] + ILC_KEYS + KEYS[-1:]
    assert dict(learning.figures())['ilc_state'] == 'off'      # no reference yet
    assert figures['status'] == ACTIVE and figures['run_ticks'] == 7
    assert figures['state_wait_p50_us'] == pytest.approx(0.0)
    waits = [0.0] * 5 + [0.5 * PERIOD * 1e6]             # the last state waited half a period
    assert figures['state_wait_p99_us'] == pytest.approx(np.percentile(waits, 99.0))
    assert figures['state_latency_p50_us'] == pytest.approx(1e3)
    assert figures['run_late_ticks'] == 0 and figures['run_missed_deadlines'] == 0
    assert np.isnan(dict(runtime.figures())['period_p50_us'])   # a new window


def test_a_chattering_command_warns_in_the_diagnostics():
    """
    An arm on its reference is quiet and OK (from the activation blend on). States whose
    joint2 jumps 50 mrad back and forth each tick (a bad sensor) make the command alternate
    at 250 Hz by about 5 N m, against the sinusoid's 9 N m swing: the window's chatter index
    is above 0.5 at joint2, and the status line warns, until `chatter_warning` 0 turns the
    check off. The inertia couples the jump into joint1's command, the larger.
    """
    runtime = runtime_of()
    t = activate(runtime)
    loop = runtime.loop

    def run(jump, ticks):
        for k in range(ticks):
            runtime.post_state(loop.q_des + (-1) ** k * np.array([0.0, jump]), loop.qd_des,
                               t + k * PERIOD)
            runtime.tick(t + k * PERIOD)
        values = runtime.figures()
        return values, dict(values)
    values, figures = run(0.0, 700)                         # past the activation blend
    assert figures['chatter_index'] < 0.05 and runtime.verdict(values) == (ACTIVE, True)
    quiet = figures['command_variation']
    t += 700 * PERIOD
    values, figures = run(0.05, 300)
    assert figures['chatter_index'] > 0.6 and figures['command_variation'] > 20 * quiet
    assert figures['chatter_joint'] == 'joint2'
    assert figures['command_variation_joint'] == 'joint1'
    message, ok = runtime.verdict(values)
    assert not ok and message.startswith(f'{ACTIVE}; the command chatters: chatter index')
    assert 'at joint2 (above 0.5)' in message and 'N/s or N m/s at joint1' in message
    runtime.options = RuntimeOptions(PERIOD, chatter_warning=0.0)
    assert runtime.verdict(values) == (ACTIVE, True)


def test_lateness_has_one_definition_for_every_figure():
    """A tick's lateness (the loop thread's) counts late ticks, skipped and missed deadlines."""
    assert split(0.0, PERIOD) == (0, False)
    assert split(LATE_SHARE * PERIOD, PERIOD) == (0, True)
    assert split(2.2 * PERIOD, PERIOD) == (2, False)
    for lateness in (0.0, 0.49, 0.5, 0.99, 1.0, 2.6, -1.0, float('nan')):   # periods
        assert split(lateness * PERIOD, PERIOD) == split_in_python(lateness * PERIOD, PERIOD)
    runtime = runtime_of(safe_on_overrun=True, max_missed_share=0.2)
    t = activate(runtime)
    assert runtime.status == ACTIVE
    lateness = [0.0, 0.6 * PERIOD, 2.1 * PERIOD, 0.0, 3.7 * PERIOD]
    for k, late in enumerate(lateness):
        runtime.post_state(Q, np.zeros(2), t + k * PERIOD)
        runtime.tick(t + k * PERIOD, late)
    figures = dict(runtime.figures())
    assert figures['run_late_ticks'] == 2                   # 0.6 and 3.7 periods: 0.6, 0.7
    assert figures['run_missed_deadlines'] == 5             # skipped: 2 + 3
    assert runtime.detector.missed == 7                     # skipped, and the late ones
    for k in range(60):                                     # starved: the safe command
        command = runtime.tick(t + (5 + k) * PERIOD, 0.6 * PERIOD)
    assert runtime.status == DEGRADED
    assert np.array_equal(command, runtime.loop.safe_command())
    assert any('control loop starved' in text for _, text in runtime.drain_events())


def test_a_starved_loop_reports_degraded_only_while_active():
    """Starved and stale: the status says stale, what the command is (reporting only)."""
    runtime = runtime_of(max_missed_share=0.2)
    t = activate(runtime)
    for k in range(60):
        runtime.post_state(Q, np.zeros(2), t)
        runtime.tick(t, 0.6 * PERIOD)
        t += PERIOD
    assert runtime.status == DEGRADED and runtime.loop.status == ACTIVE
    command = runtime.tick(t + runtime.loop.settings.state_timeout, 0.6 * PERIOD)
    assert runtime.degraded and runtime.status == STALE
    assert np.array_equal(command, runtime.loop.safe_command())


def test_state_rows_every_decimation_ticks_with_the_loop_buffers():
    runtime = runtime_of(state_decimation=2)
    t = activate(runtime, 4)
    runtime.post_state(Q, np.zeros(2), t)
    runtime.tick(t)
    rows = list(runtime.drain_rows())
    assert [status for _, status, _ in rows] == [ACTIVE, ACTIVE]
    t_row, _, row = rows[-1]
    assert t_row == pytest.approx(3 * PERIOD)
    parts = row.reshape(len(STATE_PARTS), 2)
    assert np.array_equal(parts[STATE_PARTS.index('q')], Q)


def test_rows_beyond_a_ring_the_reader_left_are_dropped_counted_and_labelled():
    """The reader a whole ring behind: the oldest rows kept, in order, with their status."""
    runtime = runtime_of(max_missed_share=0.2)
    start = activate(runtime)
    list(runtime.drain_rows())
    capacity = runtime.row_capacity
    for k in range(capacity + 5):           # every tick late: starved after a while
        runtime.post_state(Q, np.zeros(2), start + k * PERIOD)
        runtime.tick(start + k * PERIOD, 0.6 * PERIOD)
    rows = list(runtime.drain_rows())
    assert dict(runtime.figures())['run_state_rows_dropped'] == 5
    assert [t for t, _, _ in rows] == pytest.approx(start + PERIOD * np.arange(capacity))
    statuses = [status for _, status, _ in rows]
    assert statuses[0] == ACTIVE and statuses[-1] == DEGRADED
    runtime.tick(start + (capacity + 5) * PERIOD)
    assert len(list(runtime.drain_rows())) == 1       # room again once read


def test_settings_posted_twice_keep_a_reanchor_and_trajectories_need_control():
    runtime = runtime_of()
    with pytest.raises(TrajectoryRejected, match='controller is waiting'):
        runtime.follow(np.array([1.0]), np.array([Q]))
    t = activate(runtime, 2)
    settings = runtime.loop.settings
    runtime.post_settings(settings, runtime.options, reanchor=True)
    runtime.post_settings(settings, runtime.options)
    anchored = runtime.loop.reference
    runtime.tick(t)
    assert runtime.loop.reference is not anchored       # restarted from the measured state
    runtime.follow(np.array([1.0]), np.array([Q + 0.05]), t=t)
    runtime.tick(t + PERIOD)
    end = runtime.loop.reference.reference.sample(1.0)[0]
    assert np.allclose(end, Q + 0.05)                 # the waypoints, installed by the tick
    with pytest.raises(TrajectoryRejected, match='no task space'):
        runtime.request_tip_target(np.zeros(3))       # the planar file has no task frame


def test_a_velocity_from_positions_passes_one_low_pass():
    """joint_states without velocities: the difference of positions, then `velocity_filter`."""
    from sensor_msgs.msg import JointState
    from continuum_ctrl.ros.conversion import JointStateReader
    runtime = controller_runtime('planar_2r.yaml', {'resume_count': 1, 'velocity_filter': 0.01})
    loop = runtime.loop
    reader = JointStateReader(loop.model.joint_names, loop.low, loop.high)
    names = list(loop.model.joint_names)
    speed = np.array([0.5, -1.0])
    for k in range(3):                                 # at rest, then moving at `speed`
        t = k * PERIOD
        q = Q + speed * max(k - 1, 0) * PERIOD
        runtime.post_state(*reader.read(JointState(name=names, position=list(q)), t), t)
        runtime.tick(t)
    weight = PERIOD / (PERIOD + 0.01)                  # one first-order step, not two
    np.testing.assert_allclose(loop.qd, weight * speed, rtol=1e-9)
