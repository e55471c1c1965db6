"""
The controller and the simulator on two hosts: network namespaces and a link between them.

One run of the shipped continuum config (`test/support/two_hosts.py` makes the rig) goes through a
timeline: tracking, the link down for 0.05 s, 0.5 s and 5 s, a burst of duplicated and
reordered packets, and a SIGINT to the controller while the link is down. The tests then
judge the records of both sides; each prints its figures (`pytest -s`). Runs on loopback
give the tracking to compare with, and a second run on the rig with stamped commands has
some replayed late. Where network namespaces cannot be made (no root), every test here is
skipped and says why.
"""

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from continuum_ctrl.params.launch_description import config_path, CONTROLLER, SIMULATOR
from continuum_ctrl.params import read_yaml
from continuum_ctrl.runtime.controller_runtime import CONTROLLING
from continuum_ctrl.sim.plant import PLANT_FIELDS
from support.ros_nodes import params_file, running, stall, STALL_GAP, stall_of, unstalled
from support.two_hosts import Link, pair, RIG_ENV, Unavailable

pytestmark = [pytest.mark.ros, pytest.mark.slow]

CONFIG = 'continuum_3section.yaml'
_file = read_yaml(config_path(CONFIG))
_shared, _controller, _simulator = (_file[key]['ros__parameters']
                                    for key in ('/**', CONTROLLER, SIMULATOR))
#: the safe command of `safe_mode: zero` in pressure mode: every PMA at `p_min` (Pa)
SAFE = _shared['output']['p_min']
#: a jump: the pressure step that moves a PMA by this much (m) against its stiffness. The
#: reference has moved on by several mm while the arm vented; a resume without the blend
#: would step by that much
JUMP = 2e-3
JUMP_PA = JUMP * min(_shared['model']['sections']['stiffness']) / _shared['output']['area'][0]
#: the largest command step the file's `limits.effort_rate` allows, Pa per tick: the step out
#: of the safe command to the hold pressure is a ramp of such steps
RAMP_PA = (min(_controller['limits']['effort_rate']) / _controller['rate_hz']
           / _shared['output']['area'][0])
#: the most ticks such a ramp can take: across the whole pressure range, and one part step
RAMP_TICKS = int(np.ceil((_shared['output']['p_max'] - SAFE) / RAMP_PA)) + 1
#: s; the shipped file's watchdog, and the simulator's default command timeout
STATE_TIMEOUT = _controller['state_timeout']
COMMAND_TIMEOUT = PLANT_FIELDS['command_timeout'].default
BLEND_TIME = _controller['reference']['blend_time']
#: the simulator's valves: dead time and lag, s
VALVE_DELAY, VALVE_LAG = (_simulator['actuator'][key] for key in ('delay', 'time_constant'))
#: link outages, s
OUTAGES = (0.05, 0.5, 5.0)
#: s of tracking measured before the faults (after the blend: two periods of the shipped
#: reference, whose 0.25 Hz sinusoid then ends where it began), and after each return
TRACKING, AFTER = 8.0, 2.0
#: s a return gets before the next fault: up to 1.2 s for control to come back (11 ms here;
#: with a downed interface Fast DDS took up to 1 s), then the blend, then the AFTER window
RECOVERY = 1.2 + BLEND_TIME + AFTER
#: loopback runs at most, to compare the tracking with (test_tracking_across_...)
LOOPBACK_RUNS = 3
#: s of replayed packets, and the share of frames sent twice
REPLAY, REPLAY_SHARE = 2.0, 0.5
#: s the link is down before the SIGINT (the controller is stale by then)
DOWN_BEFORE_SIGINT = 0.3
#: s the loop may take beyond a timeout to act: two 2 ms ticks and a loaded machine's stall
SLACK = 0.05
#: the one line the controller logs when its safe command's delivery is not confirmed
UNCONFIRMED = re.compile(r'safe command: not acknowledged within')


@dataclass
class Fault:
    """One link outage: the nominal length and when it began and ended (time.time())."""

    down: float
    lost: float
    back: float


@dataclass
class Timeline:
    """What one run on the rig recorded, and when its faults were."""

    near: dict
    far: dict
    faults: list
    replay: tuple           # (start, end, copies sent)
    sigint: float           # when the controller got SIGINT
    exit_s: float           # its exit, s after the signal
    exit_status: int
    controller_log: str

    def commands(self):
        """Return the controller's commands as sent: (send times, values)."""
        return (np.array([c[0] for c in self.near['commands']]),
                np.array([c[1] for c in self.near['commands']]))

    def tracking(self, since, until):
        """Return the per-section RMS tracking error (mm) of the states in a span (s)."""
        rows = [s for s in self.near['states'] if since <= s[0] <= until]
        error = np.array([s[1] - s[2] for s in rows])
        return np.sqrt(np.mean(error.reshape(len(rows), 3, -1) ** 2, axis=(0, 2))) * 1e3

    def statuses(self, since, until):
        """Return (stamp, status) of the controller's states in a span (s)."""
        return statuses(self.near, since, until)


def statuses(near, since, until):
    """Return (stamp, status) of the controller's states heard by `near` in a span (s)."""
    return [(s[0], status) for s, status in zip(near['states'], near['statuses'])
            if since <= s[0] <= until]


@pytest.fixture(scope='module')
def link():
    """The two namespaces and their link; skipped, with the reason, where none can be made."""
    made = Link()
    try:
        made.__enter__()
    except Unavailable as exc:
        pytest.skip(f'two-host rig unavailable: {exc}')
    try:
        yield made
    finally:
        made.__exit__()


@pytest.fixture(scope='module')
def timeline(link, tmp_path_factory):
    """Run the timeline of the module docstring once; return its Timeline."""
    tmp = tmp_path_factory.mktemp('two_hosts')
    faults = []
    with pair(tmp, config_path(CONFIG), link) as run:
        time.sleep(BLEND_TIME + TRACKING)
        for down in OUTAGES:
            lost = link.cut()
            time.sleep(down)
            faults.append(Fault(down, lost, link.restore()))
            time.sleep(RECOVERY)
        start = time.time()
        replayer = subprocess.run(
            [sys.executable, str(Path(__file__).parents[1] / 'support' / 'rig_replay.py'),
             link.near, link.ends[link.near], link.far, link.ends[link.far], str(REPLAY),
             str(REPLAY_SHARE)], capture_output=True, text=True, check=True)
        replay = (start, time.time(), int(replayer.stdout))
        time.sleep(1.0)
        link.cut()
        time.sleep(DOWN_BEFORE_SIGINT)
        sigint = time.time()
        run.controller.send_signal(signal.SIGINT)
        status = run.controller.wait(timeout=10.0)
        exit_s = time.time() - sigint
        link.restore()
        run.finish()
    return Timeline(run.near, run.far, faults, replay, sigint, exit_s, status,
                    Path(run.logs[CONTROLLER]).read_text())


def last_crossing(fault, received):
    """
    Return the receipt beside the driver (s) of the last command that crossed before the link
    went down: the one before the outage's gap in the receipts (`received`, s).

    The rig asks `bridge` to disable the port (`Link.cut`); on a loaded machine it once did
    so tens of ms later, and timings from the request read late by that much. And `bridge`
    may pass frames again before `Link.restore` returns, so a receipt before the returned
    time can be a repaired command. The rig's request where no gap is found.
    """
    after = np.sort(received[received >= fault.lost - 0.05])
    gaps = np.flatnonzero(np.diff(after) > 0.5 * fault.down)
    return float(after[gaps[0]]) if len(gaps) else fault.lost


def fault_figures(run, fault):
    """
    Return one outage's figures (times in s from the loss or the return, steps in Pa).

    The loss is when the link went down (`last_crossing`), not when the rig asked it to.
    `outage`: from the loss to the return; `safe`: the controller's first safe command;
    `vent`: the simulator's applied force below half its value at the loss (all PMAs: its
    valves' dead time and about 14 ms of their lag after it vented); `stale_due`: when the
    driver's command turned stale (received last before the loss, plus `command_timeout`);
    `driver_back`: the first command received beside the driver after the return; `active`:
    the controller's first controlling state after the return; `step_out_of_safe`,
    `step_after`: the largest change of any PMA's command from the safe command to the first
    controlling one, and between the controlling ones after the ramp out of it (the first
    steps over a jump, `ramp` of them, each within the rate limit; `largest_step` over all);
    `anchor_error`: the largest
    |reference - feedback| (m) at the first controlling state; `rms_after`: per section, mm,
    over AFTER s from the return. None where it did not happen.
    """
    sent, received = (np.array([c[i] for c in run.far['commands']]) for i in (0, 1))
    crossed = received < fault.back
    last = last_crossing(fault, received)
    lost = max(fault.lost, last)
    t, u = run.commands()
    span = (t > lost) & (t < fault.back + RECOVERY)
    safe = span & np.all(u == SAFE, axis=1)
    states = np.array([s[0] for s in run.far['states']])
    force = np.array([s[1] for s in run.far['states']])
    held = force[np.searchsorted(states, lost) - 1]
    vented = np.flatnonzero((states > lost) & (states < fault.back + RECOVERY)
                            & np.all(force <= 0.5 * held, axis=1))
    back = [stamp for stamp, status in run.statuses(fault.back, fault.back + RECOVERY)
            if status in CONTROLLING]
    after_back = np.flatnonzero((t > fault.back) & (t < fault.back + RECOVERY))
    controlling = after_back[~np.all(u[after_back] == SAFE, axis=1)]
    steps = np.abs(np.diff(u[controlling], axis=0)).max(axis=1)
    ramp = int(np.argmax(steps <= JUMP_PA)) if len(steps) else 0   # the steps out of safe
    first = controlling[0] if len(controlling) else None
    anchor = next((s for s in run.near['states'] if back and s[0] >= back[0]), None)

    def since(times, origin):
        return float(times[0] - origin) if len(times) else None
    return {
        'outage': fault.back - lost,
        'safe': since(t[safe], lost),
        'vent': since(states[vented], lost),
        'stale_due': float(last + COMMAND_TIMEOUT - lost),
        'driver_back': since(received[~crossed], fault.back),
        'active': since(np.array(back), fault.back),
        'step_out_of_safe': (float(np.abs(u[first] - u[first - 1]).max())
                             if first is not None and np.all(u[first - 1] == SAFE) else None),
        'step_after': float(steps[ramp:].max()) if len(steps) > ramp else None,
        'ramp': ramp, 'largest_step': float(steps.max()) if len(steps) else None,
        'anchor_error': None if anchor is None else float(np.abs(anchor[1] - anchor[2]).max()),
        'rms_after': run.tracking(fault.back, fault.back + AFTER),
    }


def active_since(run):
    """Return the stamp of the controller's first controlling state (s)."""
    return next(stamp for stamp, status in run.statuses(0, np.inf) if status in CONTROLLING)


def undisturbed(run):
    """Return the span of tracking before the first fault, after the blend (s)."""
    start = active_since(run) + BLEND_TIME
    return start, min(start + TRACKING, run.faults[0].lost)


def largest_step(run, since, until):
    """
    Return the largest change of any PMA's command per tick in a span (Pa).

    Between two commands the listener heard, over the ticks their send times span: a
    listener that missed commands (a late receiver beside the controller) would otherwise
    read several ticks' change as one step.
    """
    t, u = run.commands()
    span = (t >= since) & (t <= until)
    ticks = np.maximum(np.rint(np.diff(t[span]) * _controller['rate_hz']), 1.0)
    return float((np.abs(np.diff(u[span], axis=0)) / ticks[:, None]).max())


def whole(rms):
    """Return the whole arm's RMS (mm) from the per-section ones."""
    return float(np.sqrt(np.mean(np.square(rms))))


def grown(run, key, since, until):
    """Return how much the simulator's count `key` grew from `since` to `until` (s)."""
    counts = [(stamp, int(values[key])) for stamp, values in run.far['diagnostics']]
    first = next((n for stamp, n in reversed(counts) if stamp <= since), 0)
    last = next((n for stamp, n in reversed(counts) if stamp <= until), first)
    return last - first


def stalled_spans(run):
    """
    Return the spans (s) in which the machine held a node or the simulator's side up: a gap
    over STALL_GAP in the stamps of the simulator's `joint_states` or of the controller's
    `~/state`, as heard on their own side of the link (a link fault does not make them), or
    a `joint_states` received on the simulator's side over STALL_GAP after it was sent (it
    crossed no link: the receiving machine was late), widened by 0.2 s.
    """
    spans = []
    for stamps in ([s[0] for s in run.far['states']], [s[0] for s in run.near['states']]):
        stamps = np.array(stamps)
        for k in np.flatnonzero(np.diff(stamps) > STALL_GAP):
            spans.append((stamps[k] - 0.2, stamps[k + 1] + 0.2))
    for sent, received in run.far['state_receipts']:
        if received - sent > STALL_GAP:
            spans.append((sent - 0.2, received + 0.2))
    merged = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def skip_if_stalled(run, fault):
    """
    Skip the calling test when the machine stalled the nodes around `fault` (a Fault, or
    with `down` 0 a span of tracking): a node's own stream stopped (`stalled_spans`), or
    ros_nodes' `stall_of` (the loop's longest period, the plant steps dropped). On a loaded
    shared machine a stall of 0.1 s alone makes the controller stale and the driver vent,
    and the timings would be the machine's.
    """
    since, until = fault.lost - 0.5, fault.back + 1.5
    periods = [float(values.get('period_max_us', 0.0)) * 1e-6
               for stamp, values in run.near['diagnostics'] if since <= stamp <= until]
    stalled = stall_of(max(periods, default=0.0), grown(run, 'overruns', since, until))
    held = [(a, b) for a, b in stalled_spans(run) if a < until and b > since]
    if stalled is None and held:
        stalled = f'the machine held a node up for {max(b - a for a, b in held) - 0.4:.3f} s'
    if stalled is not None:
        pytest.skip(f'{fault.down:g} s down: {stalled}' if fault.down else stalled)


def test_tracking_across_the_link_matches_loopback(timeline, tmp_path):
    """
    The RMS tracking error across the link is at most 25 % over a run's on loopback.

    The loop's error varies from run to run on loopback alone: in section 1, 0.012-0.018 mm
    over nine runs here, in two groups (the nodes' start, not the link, decides), and on a
    loaded CI machine the run across the link read 0.0164 mm (whole arm) against 0.0136-
    0.0148 mm on loopback. So up to LOOPBACK_RUNS loopback runs are made, until the link's
    is at most 25 % over one. A link cannot make the loop better, so only the excess counts.
    """
    since, until = undisturbed(timeline)
    skip_if_stalled(timeline, Fault(0.0, since, until))
    across = timeline.tracking(since, until)

    def loopback():
        with running(tmp_path, config_path(CONFIG)) as (rec, _):
            rec.run(BLEND_TIME + (until - since) + 0.2)
            start = rec.active_since + BLEND_TIME
            t, q_des, q, _ = rec.arrays(start, start + (until - since))
            error = (q_des - q).reshape(len(t), 3, -1)
            return np.sqrt(np.mean(error ** 2, axis=(0, 2))) * 1e3, stall(rec, start)

    def within(rms):
        return whole(across) <= 1.25 * whole(rms)
    runs = []
    while len(runs) < LOOPBACK_RUNS and not any(map(within, runs)):
        runs.append(unstalled(loopback))
    print(f'\nRMS tracking error per section, mm, over {until - since:.1f} s: across the link '
          f'{np.round(across, 4)}, loopback {[np.round(rms, 4) for rms in runs]}')
    assert any(map(within, runs)), (across, runs)


@pytest.mark.parametrize('index', range(len(OUTAGES)), ids=[f'{d:g}s' for d in OUTAGES])
def test_link_loss_brings_the_safe_command_within_state_timeout(timeline, index):
    """Over `state_timeout` down: the safe command at once; a shorter outage: none."""
    skip_if_stalled(timeline, timeline.faults[index])
    f = fault_figures(timeline, timeline.faults[index])
    print(f'\nlink down {f["outage"]:.3f} s: safe command after {f["safe"]} s')
    if f['outage'] > STATE_TIMEOUT + SLACK:
        assert f['safe'] is not None and f['safe'] <= STATE_TIMEOUT + SLACK, f
    elif f['outage'] < STATE_TIMEOUT - SLACK:
        assert f['safe'] is None, f


@pytest.mark.parametrize('index', range(len(OUTAGES)), ids=[f'{d:g}s' for d in OUTAGES])
def test_the_driver_vents_after_command_timeout(timeline, index):
    """
    Over `command_timeout` down, the simulator vents by itself once its command is that old
    (the controller's safe command cannot reach it), and counts it; shorter, it holds on.
    """
    fault = timeline.faults[index]
    skip_if_stalled(timeline, fault)
    f = fault_figures(timeline, fault)
    print(f'\nlink down {f["outage"]:.3f} s: the driver vents after {f["vent"]} s (its '
          f'command was due to go stale after {f["stale_due"]:.3f} s)')
    if f['outage'] > COMMAND_TIMEOUT + SLACK:
        half_lag = VALVE_DELAY + VALVE_LAG * np.log(2)
        assert f['vent'] is not None, f
        assert f['stale_due'] <= f['vent'] <= f['stale_due'] + half_lag + SLACK, f
        assert grown(timeline, 'stale_commands', fault.lost, fault.back + RECOVERY) >= 1
    elif f['outage'] < COMMAND_TIMEOUT - SLACK and f['safe'] is None:
        assert f['vent'] is None, f


def test_no_command_repaired_after_an_outage_is_older_than_the_driver_timeout(timeline):
    """
    Through every fault, the commands the writer repairs after the return (sent before it,
    received after it) are safe ones or younger than the driver's timeout: an outage longer
    than `state_timeout` has filled the writer's history (keep last 10) with safe commands
    before the return. Spans in which the machine held a node or the simulator's side up
    (`stalled_spans`) are left out, and counted.

    A command sent after the return crosses a working link: its transit is the link's and
    the machines', which the product does not decide for an unstamped command (stamped ones
    older than the timeout the driver drops: `test_a_command_replayed_late_...`). Its
    largest transit is printed, not judged: once in a few loaded runs one read 164-166 ms.
    """
    spans = stalled_spans(timeline)
    kept = [(sent, received, values) for sent, received, values in timeline.far['commands']
            if not any(a <= sent <= b for a, b in spans)]
    repaired = [(received - sent, fault.down) for sent, received, values in kept
                for fault in timeline.faults
                if sent < fault.back <= received and not np.all(values == SAFE)]
    fresh = [received - sent for sent, received, _ in kept
             if not any(sent < fault.back <= received for fault in timeline.faults)]
    oldest = max(repaired, default=(0.0, None))
    print(f'\n{len(kept)} commands received beside the driver outside {len(spans)} stalls of '
          f'the machine: {len(repaired)} repaired after a return not safe, the oldest '
          f'{oldest[0]:.3f} s after it was sent ({oldest[1]} s down); the longest transit '
          f'across the working link {max(fresh):.3f} s')
    if len(kept) < len(timeline.far['commands']) / 2:
        pytest.skip(f'the machine held the nodes or the simulator\'s side up for more than half '
                    f'the run ({len(spans)} spans)')
    assert oldest[0] <= COMMAND_TIMEOUT, oldest


@pytest.mark.parametrize('index', range(len(OUTAGES)), ids=[f'{d:g}s' for d in OUTAGES])
def test_control_resumes_through_the_blend_without_a_jump(timeline, index):
    """
    After the return the controller controls again, its reference starting at the pose the
    arm holds, and no command step moves a PMA by JUMP: the one larger change is the first
    hold command out of the safe command, by design, a ramp of steps within the rate limit.
    """
    skip_if_stalled(timeline, timeline.faults[index])
    f = fault_figures(timeline, timeline.faults[index])
    print(f'\nlink down {f["outage"]:.3f} s: commands reach the driver {f["driver_back"]} s '
          f'after the return, controlling after {f["active"]} s, step out of the safe '
          f'command {f["step_out_of_safe"]} Pa, a ramp of {f["ramp"]} steps within the rate '
          f'limit ({RAMP_PA:.0f} Pa), then at most {f["step_after"]:.0f} Pa (bound '
          f'{JUMP_PA:.0f}), reference - feedback at the start {f["anchor_error"]:.2g} m; RMS '
          f'error over {AFTER:g} s after the return {np.round(f["rms_after"], 4)} mm')
    assert f['active'] is not None and f['active'] <= RECOVERY - BLEND_TIME - AFTER, f
    assert f['step_after'] is not None and f['step_after'] <= JUMP_PA, f
    assert f['largest_step'] <= RAMP_PA * (1.0 + 1e-6) and f['ramp'] <= RAMP_TICKS, f
    if f['step_out_of_safe'] is not None:       # it went stale: a fresh start from the pose
        assert f['anchor_error'] <= JUMP / 10, f


#: mm the whole arm's RMS error may add over a burst of copies, beside 1.5 times its own.
#: A loaded machine alone moves it that much: with two busy processes and no copies, section
#: 3's RMS went from 0.0026 to 0.0079 mm here, and CI's 2-core machine gave 0.021 mm in a
#: burst against 0.014 before it. A state taken out of order would put the feedback back by
#: the reference's motion over the copy's delay (7.8 mm/s RMS, up to 20 ms): about 0.08 mm.
REORDER_ALLOWANCE = 0.005


def test_duplicated_and_reordered_packets_move_nothing(timeline):
    """
    A burst of frames sent twice, the copies late: the arm stays controlled, its whole RMS
    error within a loaded machine's variation of the undisturbed one, command steps hold.
    """
    start, end, copies = timeline.replay
    since, until = undisturbed(timeline)
    for span in ((since, until), (start, end)):
        skip_if_stalled(timeline, Fault(0.0, *span))
    calm, burst = timeline.tracking(since, until), timeline.tracking(start, end)
    steps = largest_step(timeline, since, until), largest_step(timeline, start, end)
    print(f'\n{copies} frames sent twice over {end - start:.1f} s: RMS error {np.round(burst, 4)}'
          f' mm (undisturbed {np.round(calm, 4)}), largest step {steps[1]:.0f} Pa '
          f'(undisturbed {steps[0]:.0f})')
    assert copies > 1000
    assert {status for _, status in timeline.statuses(start, end)} <= set(CONTROLLING)
    assert whole(burst) <= 1.5 * whole(calm) + REORDER_ALLOWANCE, (burst, calm)
    assert steps[1] <= 3 * steps[0]     # the quiet loop's own largest step varies 2-fold
    assert grown(timeline, 'stale_commands', start, end + 1.0) == 0


def test_sigint_with_the_link_down_ends_safe_in_bounded_time(timeline):
    """
    SIGINT while the link is down: the last command is the safe one, one line says its
    delivery was not confirmed, and the controller exits at once (its wait is 0.2 s).
    """
    t, u = timeline.commands()
    lines = [line for line in timeline.controller_log.splitlines() if UNCONFIRMED.search(line)]
    print(f'\nexit {timeline.exit_s:.3f} s after SIGINT, status {timeline.exit_status}: '
          f'{lines}')
    assert timeline.exit_status == 0
    assert timeline.exit_s <= 2.0
    assert t[-1] >= timeline.sigint and np.all(u[-1] == SAFE)
    assert len(lines) == 1


#: stamped commands replayed 0.5 s late across the link
LATE_REPLAYS, LATE_AGE = 20, 0.5


def test_a_command_replayed_late_over_the_link_is_dropped(link, tmp_path):
    """
    With stamped commands (`output.message: joint_state`), commands the controller sent
    0.5 s before, replayed unchanged from its side of the link, are dropped by the simulator
    by their stamps and counted (`late_commands`): exactly those, and control goes on.
    """
    params = params_file(tmp_path, CONFIG, all={'output': {'message': 'joint_state'}})
    with pair(tmp_path, params, link) as run:
        time.sleep(BLEND_TIME + 1.0)
        start = time.time()
        replayer = subprocess.run(
            link.command(link.near, [
                sys.executable, str(Path(__file__).parents[1] / 'support' / 'rig_late_command.py'),
                str(LATE_REPLAYS), str(LATE_AGE)]),
            env={**os.environ, **RIG_ENV}, capture_output=True, text=True, check=True)
        end = time.time()
        time.sleep(2.5)                 # two diagnostics windows of the simulator's
        run.finish()
    sent = int(replayer.stdout)
    late = grown(run, 'late_commands', start - 1.0, end + 2.5)
    seen = {status for _, status in statuses(run.near, start, end + 1.0)}
    print(f'\n{sent} commands replayed {LATE_AGE:g} s late: the simulator dropped {late} as '
          f'late; controller status {seen}')
    assert sent == LATE_REPLAYS
    assert late == LATE_REPLAYS
    assert seen <= set(CONTROLLING)


def test_static_peers_discover_across_the_link_without_multicast(link, tmp_path):
    """
    `ROS_STATIC_PEERS` with the hosts' addresses and discovery kept to LOCALHOST, no
    multicast route: the pair still meets across the link (docs/two-hosts.md), and the link
    carries the data: cut, the controller sends its safe command.
    """
    peers = {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST',
             'ROS_STATIC_PEERS': ';'.join(link.address.values())}
    link.multicast(False)
    try:
        with pair(tmp_path, config_path(CONFIG), link, env=peers) as run:
            fault = Fault(0.5, link.cut(), 0.0)
            time.sleep(fault.down)
            fault.back = link.restore()
            time.sleep(0.5)
            run.finish()
    finally:
        link.multicast(True)
    lost = max(fault.lost, last_crossing(fault, np.array([c[1] for c in run.far['commands']])))
    safe = [sent for sent, values in run.near['commands']
            if sent > lost and np.all(values == SAFE)]
    print(f'\nstatic peers: the safe command {safe[0] - lost:.3f} s after the cut'
          if safe else '\nstatic peers: no safe command after the cut')
    assert safe and safe[0] - lost <= STATE_TIMEOUT + SLACK
