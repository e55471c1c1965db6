"""
The closed-loop demo over ROS 2: simulator and controller as two processes, recorded here.

    continuum-ctrl demo [--arm continuum|continuum_task|continuum_ilc|2r|panda|FILE [FILE ...]]
                        [--duration S] [--out DIR]
                        [--engine builtin|mujoco]

Starts the nodes of `launch_description.simulation` (the exact `--ros-args` command lines of
the launch files; the simulator once the controller is heard), waits until the controller is
active, records `~/state`, `~/commands` and `/diagnostics` for `duration` seconds, stops the
nodes with SIGINT, then prints per-section (per-joint for rigid arms) RMS and maximum tracking
errors, the worst PMA's (joint's) command variation (MPa/s, N m/s) and chatter index (of the
recorded commands at the ticks, as in the CSV: sim/report.py), the tip's error (the task frame,
else a continuum arm's last section tip, by the controller's kinematics) and, when the
simulator captures the tip (`mocap.*`), the true tip's error beside it (the captured tip
against the controller's `~/tip_desired` at its stamp), and the loop figures,
and writes into DIR: `closed_loop.png` (desired vs actual positions, and the commands),
`learning.png` where the loop learns a periodic reference (`ilc.enable`: the RMS error per
period, also printed, sim/period_report.py, of the arm's true positions from the simulator's
`~/joint_states_true`),
`closed_loop.csv` (one row per control tick: time, desired and actual position, effort and
command per joint; empty command fields before the first command), `closed_loop.mcap` (a
rosbag2 MCAP bag of `/joint_states`, the true ones, the commands and `~/state`, for
`continuum-ctrl identify`, Foxglove and `ros2 bag info`) and the nodes' logs. `--engine` sets
the simulator's `engine` over the file's (through DIR/engine.yaml, a parameter file given
after it). Without it a
continuum arm whose file names no engine runs on MuJoCo (an arm the controller's equations did
not build, in real time beside the controller here), any other as its file says; the printout
names the engine that ran.
"""

import argparse
import csv
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Optional, Tuple

import yaml

import numpy as np

from continuum_ctrl.apps.launch import start, stop
from continuum_ctrl.apps.node_pair import (check_parameter_file, check_same_message,
                                           command_message, controller_model)
from continuum_ctrl.apps.task_plot import plot_task, true_tip
from continuum_ctrl.params import file_parameters
from continuum_ctrl.params.launch_description import (arm_files, ARMS, CONTROLLER,
                                                      JOINT_TRUTH_TOPIC, MOCAP_TOPIC,
                                                      SIMULATOR, simulation)
from continuum_ctrl.ros.conversion import REJECT_KINDS
from continuum_ctrl.ros.recorder import Recorder
from continuum_ctrl.runtime.lateness import LATE_GAP
from continuum_ctrl.runtime.node_settings import ControllerNodeSettings, SimulatorNodeSettings
from continuum_ctrl.sim.period_report import show_periods
from continuum_ctrl.sim.plant import ENGINES
from continuum_ctrl.sim.report import plot, print_tables, tip_frame, tip_paths

#: seconds allowed for the nodes to start (model set-up, JIT compilation)
START_TIMEOUT = 60.0
#: share of the ticks, and longest gap (s), of a recording the demo calls complete
COMPLETE, MAX_GAP = 0.99, 0.02
#: longest wait, s, for the ~/state rows of the recording's last ticks (and the diagnostics
#: that cover them) after its duration
TAIL_WAIT = 10.0


def align(times, commands, t):
    """
    Return, per time in `t`, the latest command sent at or before it.

    NaN where none was sent yet: no command is not a zero command (zero effort, or a PMA
    vented to 0 Pa).
    """
    index = np.searchsorted(times, t, side='right') - 1
    aligned = commands[np.maximum(index, 0)].astype(float)
    aligned[index < 0] = np.nan
    return aligned


def write_csv(path, joint_names, t, q_des, q, effort, command):
    """
    Write one row per tick: t, then q_des, q, effort, command per joint.

    A value not known (NaN: a command before the first one sent) is an empty field.
    """
    header = ['t'] + [f'{kind}_{name}' for kind in ('q_des', 'q', 'effort', 'command')
                      for name in joint_names]
    with open(path, 'w', newline='') as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in np.column_stack((t - t[0], q_des, q, effort, command)):
            writer.writerow(['' if np.isnan(v) else f'{v:.9g}' for v in row])


def tick_counts(t, period, end=None):
    """
    Return ``(expected, missing, largest gap s, late)`` of the recorded tick stamps `t` (s).

    `period`: the nominal one between two ``~/state`` messages, s; `end`: the stamp (s) the
    recording was to reach (default: its last). The loop ticks on a fixed grid of deadlines,
    so the span from ``t[0]`` to `end` holds ``span / period + 1`` ticks; those not in `t`
    are missing: lost by the recording, or deadlines the loop skipped; a tail that never
    came counts as a gap. A tick is late when it follows the previous one by more than
    LATE_GAP periods: the same window as the recorded errors, not the whole node run.
    """
    if len(t) < 2:
        return len(t), 0, 0.0, 0
    end = t[-1] if end is None else max(end, t[-1])
    interval = np.diff(np.append(t, end))
    expected = max(int((end - t[0]) / period + 0.5) + 1, len(t))
    return (expected, expected - len(t), float(np.max(interval)),
            int(np.sum(interval > LATE_GAP * period)))


def recording_line(t, period, skipped, end=None):
    """
    Return the line that says how complete the recording is, and whether it is not.

    `skipped`: the deadlines the loop skipped while it was recorded (they have no tick to
    record; from its diagnostics windows, `recorder.Recorder.grown`).
    The other missing ticks were lost between the loop and the recording. `end`: as in
    `tick_counts`.
    """
    expected, missing, gap, _ = tick_counts(t, period, end)
    lost = max(missing - skipped, 0)
    line = (f'recording: {len(t)} of {expected} ticks, {missing} missing ({skipped:.0f} '
            f'deadlines the loop skipped, {lost} lost by the recording), largest gap '
            f'{gap * 1e3:.1f} ms')
    if missing > (1.0 - COMPLETE) * expected or gap > MAX_GAP:
        line += ('\nwarning: the recording has holes: the errors below, the CSV, the plot '
                 '(broken lines) and the bag cover the recorded ticks only')
    return line


def _median(diagnostics, key):
    """
    Return the median of a figure over the diagnostics windows but the first (NaN: none).

    A window without the figure's samples gives NaN, skipped: one such window among 300
    made a whole run's median NaN.
    """
    values = np.array([float(d[key]) for d in diagnostics[1:] if key in d])
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else float('nan')


def figure(diagnostics, key):
    """Return a float figure from the latest diagnostics that have it (NaN if none)."""
    for values in reversed(diagnostics):
        if key in values:
            return float(values[key])
    return float('nan')


def last_error(log_paths):
    """Return the last ``error:`` line of the nodes' logs (None if none says so)."""
    lines = [line for path in log_paths if Path(path).is_file()
             for line in Path(path).read_text(errors='replace').splitlines()
             if 'error:' in line]
    return lines[-1].strip() if lines else None


#: seconds at the end of a run over which the true tip's settled error is given (a 0.2 Hz
#: circle's revolution)
SETTLED = 5.0


def tip_error(model, frame, out, names, t, q_des, q, truth=None):
    """
    Return ``(frame, tip errors (N,) m, picture or None)`` of the run (None: no tip frame).

    The tip: the task frame `frame`, else a continuum arm's last section tip
    (`report.tip_frame`), by the controller's `model`; with a task frame the picture
    `task_space.png` is written, with the true tip (`truth`, task_plot.true_tip) when captured.
    """
    tip = tip_frame(model, frame)
    if tip is None:
        return None
    index = [names.index(name) for name in model.joint_names]      # joints -> model order
    if frame is None:
        return tip, tip_paths(model, tip, q_des[:, index], q[:, index])[2], None
    picture = out / 'task_space.png'
    return tip, plot_task(picture, model, frame, t, q_des[:, index], q[:, index], truth), \
        picture


def true_tip_line(truth, end):
    """Return the printout's line of the true tip's error (`task_plot.true_tip`'s result)."""
    stamps, _, error = truth
    settled = error[stamps >= end - SETTLED]
    last = (f', last {SETTLED:g} s RMS {np.sqrt(np.mean(settled ** 2)) * 1e3:.3f} mm'
            if settled.size else '')
    return (f'true tip (motion capture on {MOCAP_TOPIC}, {len(error)} samples, their noise '
            f'included): RMS error {np.sqrt(np.mean(error ** 2)) * 1e3:.3f} mm, largest '
            f'{error.max() * 1e3:.3f} mm{last}, against ~/tip_desired')


#: what the period table compares with the reference, by `period_source`'s kind
PERIOD_SOURCES = {
    'truth': "the arm's true positions (the simulator's ~/joint_states_true, no noise or "
             'delay) against the reference at their stamps; the tip by the controller\'s '
             'kinematics from them',
    'samples': "the sensor's samples (/joint_states), their noise included, against the "
               'reference at their stamps; the tip by the controller\'s kinematics from them',
}


def period_source(run):
    """
    Return ``(kind, (stamps s, positions) or None)`` of what the period table compares.

    'truth': the simulator's true joint states, when recorded; else 'samples': the sensor's;
    else ``(None, None)``: the ``~/state`` rows (one process: the plant's own).
    """
    for kind, recorded in (('truth', run.truth), ('samples', run.samples)):
        if recorded is not None and len(recorded[0]) > 1:
            return kind, recorded
    return None, None


def sampled_errors(run, model, frame, order):
    """
    Return ``(t, error, command, tip errors or None)`` for the period table of `run`.

    Through the nodes a ``~/state`` row pairs the reference at the tick with the estimate at
    the time of the sample the tick used, 2-4 ms earlier (the sensor's delay, the transport,
    the wait for the tick), which at the 1 Hz sinusoid's 44 mm/s read as 0.11 mm per section
    where the arm was 0.02 mm off. So the arm's true positions (else the sensor's samples,
    their noise included: `period_source`) are compared with the reference at their stamps
    (interpolated between the ticks), with the latest command sent by then (the first samples
    may be heard seconds after the activation, `t[0]`, where the periods start). In one
    process (neither) the rows are the plant's own. `frame`: the tip's (None: no tip),
    `order`: the model's joints in the row's.
    """
    t, q_des, q = run.t, run.q_des, run.q
    _, recorded = period_source(run)
    if recorded is not None:
        stamps, measured = recorded
        inside = (stamps >= t[0]) & (stamps <= t[-1])
        t, q = stamps[inside], measured[inside]
        q_des = np.column_stack([np.interp(t, run.t, column) for column in run.q_des.T])
        command = align(run.t, run.command, t)
    else:
        command = run.command
    tips = None if frame is None else tip_paths(model, frame, q_des[:, order], q[:, order])[2]
    return t, q - q_des, command, tips


def learning_line(diagnostics):
    """Return the line of the loop's own learning figures at the end (/diagnostics' ilc_*)."""
    last = next((d for d in reversed(diagnostics) if 'ilc_state' in d), {})
    if not last:
        return 'learning (/diagnostics): no ilc figures heard'
    return (f"learning (/diagnostics at the end): {last['ilc_state']}, "
            f"{last.get('ilc_trials', '?')} trials measured, the last trial's RMS "
            f"{float(last.get('ilc_trial_rms', 'nan')) * 1e3:.4f} mm or mrad, trend "
            f"{float(last.get('ilc_trend', 'nan')):.3f} (last / previous)")


def default_engine(simulator):
    """Return 'mujoco' for a continuum arm whose files name no engine, else None (theirs)."""
    tree, model = file_parameters(list(simulator.parameters), SIMULATOR)
    continuum = str(model.get('type', 'continuum_integral')).startswith('continuum')
    return 'mujoco' if continuum and 'engine' not in tree and 'sections' in model else None


def with_engine(nodes, engine, out):
    """
    Return `nodes` with the simulator's `engine` set to `engine` (None: as the files say).

    The setting goes into ``out/engine.yaml``, given after the simulator's own files.
    """
    if engine is None:
        return nodes
    path = Path(out) / 'engine.yaml'
    path.write_text(yaml.safe_dump({SIMULATOR: {'ros__parameters': {'engine': engine}}}))
    return [dataclasses.replace(node, parameters=node.parameters + (path,))
            if node.name == SIMULATOR else node for node in nodes]


def node_timing(path):
    """
    Return ``(period of ~/state s, recorder priority)`` for the nodes of parameter file(s) `path`.

    The recorder runs below both nodes' threads (their loops at `realtime_priority`, the
    rest one below): two below the lower node priority, normal scheduling if that is not 3+.
    """
    controller, _ = ControllerNodeSettings.split(file_parameters(path, CONTROLLER)[0])
    simulator, _ = SimulatorNodeSettings.split(file_parameters(path, SIMULATOR)[0])
    lowest = min(controller.realtime_priority, simulator.realtime_priority)
    return controller.period * controller.state_decimation, lowest - 2 if lowest > 2 else 0


@dataclasses.dataclass
class Recording:
    """
    What the demo recorded from `active_since` to `end` (s): the data its report is made of.

    `t`, `q_des`, `q`, `effort` (ticks x joints, `names` order) of the ``~/state`` rows;
    `command` aligned to `t` (NaN before the first); `diagnostics`, `simulator`: the
    controller's /diagnostics windows and the simulator's last ones (figures by key, as
    published); `skipped`: the deadlines the loop skipped while recorded; `tips`: the
    desired and captured tips (`Recorder.tips`); `samples`: the sensor's ``(stamps s,
    positions)`` (`Recorder.samples`; None: not recorded, as in one process); `truth`: the
    simulator's true joint states alike (JOINT_TRUTH_TOPIC).
    """

    names: list
    t: np.ndarray
    q_des: np.ndarray
    q: np.ndarray
    effort: np.ndarray
    command: np.ndarray
    diagnostics: list
    simulator: dict
    skipped: float
    end: float
    tips: dict
    samples: Optional[Tuple[np.ndarray, np.ndarray]] = None
    truth: Optional[Tuple[np.ndarray, np.ndarray]] = None


class NotThisPair(RuntimeError):
    """The recording is not of this controller and its simulator (the reason)."""


def _foreign_states():
    """Return the end of a NotThisPair line for joint_states from other nodes."""
    return (f"publishes joint_states on ROS_DOMAIN_ID {os.environ.get('ROS_DOMAIN_ID', '0')} "
            "(a test or another run); its figures would be another arm's: use a free domain")


def parse_args(argv):
    """Return the demo's command-line arguments."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl demo', description=__doc__.split(
        '\n\n')[0].strip())
    parser.add_argument('--arm', nargs='+', default=['continuum'],
                        help=f"{', '.join(ARMS)}, a file stem in config/ or a parameter file; "
                             f"several merge in order, an overlay last (default: continuum)")
    parser.add_argument('--duration', type=float, default=8.0, help='seconds recorded')
    parser.add_argument('--out', default='demo_out', help='output directory')
    parser.add_argument('--engine', choices=ENGINES, default=None,
                        help="the simulator's physics engine (default: the file's, else "
                             "mujoco for continuum arms and builtin for others)")
    return parser.parse_args(sys.argv[1:] if argv is None else argv)


def start_failure(logs, out):
    """Say why the nodes did not start (a node's error line, else the logs); the exit status."""
    for log in logs:
        log.flush()
    reason = last_error(log.name for log in logs)
    if reason:
        print(f'continuum-ctrl demo: error: a node failed: {reason} (logs in {out})',
              file=sys.stderr)
        return 2
    print('demo: the nodes did not start; see the logs in', out, file=sys.stderr)
    return 1


def record(rec, nodes, logs, processes, duration, actions=(), ready=None):
    """
    Start the nodes, record `duration` s from activation into `rec`; a Recording or None.

    `actions`: ``(s after activation, callable(rec))`` pairs, called in time order while
    recording (a tip target sent, say). `ready`: a condition awaited (START_TIMEOUT) after
    the activation; the actions' times and the `duration` then count from when it held
    (the recording still starts at the activation).

    The controller goes active (and anchors its reference) on the first joint states: the
    simulator starts only once the recorder hears the waiting controller, so the recording
    begins before activation whatever the order of DDS discovery (started together, the
    recorder missed the activation and the blend in some MuJoCo runs). None: they did not
    start. NotThisPair: the controller went active before its simulator was started (another
    node's joint_states on this domain), a node exited during the run, or another node
    publishes joint_states beside the simulator (discovered after the start).
    """
    processes += start(nodes[:1], outputs=logs[:1])
    started = rec.wait(lambda: rec.status is not None, START_TIMEOUT, processes)
    if started and rec.active_since is not None:
        raise NotThisPair('the controller went active before its simulator started: another '
                          f'node {_foreign_states()}')
    if started:
        processes += start(nodes[1:], outputs=logs[1:])
        started = rec.wait(lambda: rec.active_since is not None, START_TIMEOUT, processes)
    if not started:
        return None
    if ready is not None and not rec.wait(ready, START_TIMEOUT, processes):
        return None
    begun, origin = time.monotonic(), (rec.active_since if ready is None else time.time())
    for at, action in sorted(actions, key=lambda pair: pair[0]):
        rec.run(max(begun + at - time.monotonic(), 0.0))
        action(rec)
    rec.run(max(begun + duration - time.monotonic(), 0.0))
    exited = [node.name for node, p in zip(nodes, processes) if p.poll() is not None]
    if exited:
        raise NotThisPair(f"{', '.join(exited)} exited during the run: what was recorded "
                          'is not this pair (see its log)')
    # a publisher discovered only after the controller first reported escapes the check above
    publishers = rec.node.count_publishers('/joint_states')
    if publishers > 1:
        raise NotThisPair(f'of {publishers} nodes, more than this simulator '
                          f'{_foreign_states()}')
    # a loaded machine sends the last ticks' ~/state rows late: wait for them, and for both
    # nodes' diagnostics that cover the end (the loop's skipped deadlines, the totals)
    end = origin + duration
    rec.run(TAIL_WAIT, until=lambda: (rec.states[-1][0] >= end and
                                      max(rec.diagnostic_stamps, default=0) >= end and
                                      max(rec.sim_diagnostic_stamps, default=0) >= end))
    t, q_des, q, effort = rec.arrays(since=rec.active_since, until=end)
    times = np.array([c[0] for c in rec.commands])
    values = np.array([c[1] for c in rec.commands])
    return Recording(rec.joint_names, t, q_des, q, effort, align(times, values, t),
                     list(rec.diagnostics),
                     dict(rec.sim_diagnostics[-1]) if rec.sim_diagnostics else {},
                     rec.grown('run_missed_deadlines', rec.active_since, end), end,
                     {topic: list(samples) for topic, samples in rec.tips.items()},
                     rec.samples(rec.joint_names, rec.active_since, end),
                     rec.samples(rec.joint_names, rec.active_since, end, JOINT_TRUTH_TOPIC))


def report(run, arm, engine, period, controller, out):
    """Write the CSV, the plot and the tip picture of `run`, and print its figures."""
    names, t, q_des, q = run.names, run.t, run.q_des, run.q
    write_csv(out / 'closed_loop.csv', names, t, q_des, q, run.effort, run.command)
    plot(out / 'closed_loop.png', names, t, q_des, q, run.command, period)
    truth = true_tip(run.tips, f'/{CONTROLLER}/tip_desired', MOCAP_TOPIC, t[0], run.end)
    model, settings = controller_model(list(controller.parameters), controller.name)
    tip = tip_error(model, settings.task.frame, out, names, t, q_des, q, truth)
    _, _, _, late = tick_counts(t, period, run.end)
    print(f'closed loop over ROS 2: {arm}, engine {engine}, {t[-1] - t[0]:.1f} s from '
          f'activation')
    print(recording_line(t, period, run.skipped, run.end))
    print_tables(names, t, q - q_des, run.command, tip[:2] if tip else None)
    if truth is not None:
        print(true_tip_line(truth, run.end))
    order = [names.index(name) for name in model.joint_names]
    at, error, command, tips = sampled_errors(run, model, tip[0] if tip else None, order)
    learning = show_periods(out / 'learning.png', settings, q[0, order], names, at, error,
                            command, tips, origin=t[0])
    diagnostics, plant = run.diagnostics, run.simulator
    if learning:
        kind, _ = period_source(run)
        if kind is not None:
            print(f'(the periods: {PERIOD_SOURCES[kind]}; the table above pairs the estimate '
                  'at its sample with the reference at the tick, 2-4 ms later)')
        print(learning_line(diagnostics))
    print(f'loop rate {_median(diagnostics, "rate_hz"):.1f} Hz (median of 1 s '
          f'windows), period p99 {figure(diagnostics, "run_period_p99_us"):.0f} us, compute '
          f'p99 {figure(diagnostics, "run_compute_p99_us"):.0f} us, late ticks {late} of '
          f'{len(t)} recorded, joint_states age at the tick (its receipt to the tick) '
          f'p50/p99 {_median(diagnostics, "input_age_p50_us"):.0f}/'
          f'{_median(diagnostics, "input_age_p99_us"):.0f} us (medians of 1 s windows)')
    last = diagnostics[-1] if diagnostics else {}
    print(f'simulator at the end of the run: {plant.get("steps", "?")} steps, '
          f'{plant.get("overruns", "?")} overruns (simulated time dropped), stepping CPU '
          f'share {plant.get("cpu_share_stepping", "?")}, rejected commands '
          f'{plant.get("rejected_commands", "?")}, commands gone stale '
          f'{plant.get("stale_commands", "?")}, longest gap between commands '
          f'{plant.get("longest_command_gap_ms", "?")} ms, late commands dropped '
          f'{plant.get("late_commands", "?")}; controller: rejected joint_states '
          f'{sum(int(last.get(f"rejected_{k}", 0)) for k in REJECT_KINDS)}, state '
          f'timeouts {int(figure(diagnostics, "state_timeouts"))}')
    for picture in ((tip[2] if tip else None), learning and out / 'learning.png'):
        if picture:
            print(f'wrote {picture}')
    print(f'wrote {out / "closed_loop.png"}, {out / "closed_loop.csv"} (CSV: t, q_des_*, q_*, '
          f'effort_*, command_* per joint, SI units), {out / "closed_loop.mcap"} (rosbag2)')


def main(argv=None):
    """Run the demo; return 0 on success, 2 for a bad parameter file, 1 when the nodes fail."""
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    nodes = simulation(arm_files(args.arm))
    nodes = with_engine(nodes, args.engine or default_engine(nodes[1]), out)
    controller_files, simulator_files = (list(node.parameters) for node in nodes)
    check_parameter_file(controller_files, [nodes[0].name])
    check_parameter_file(simulator_files, [nodes[1].name])
    check_same_message(controller_files, simulator_files)
    engine = file_parameters(simulator_files, SIMULATOR)[0].get('engine', 'builtin')
    period, priority = node_timing(controller_files)
    logs = [open(out / f'{node.name}.log', 'w') for node in nodes]
    processes = []
    try:
        with Recorder(bag=True, priority=priority,
                      message=command_message(controller_files)) as rec:
            try:
                run = record(rec, nodes, logs, processes, args.duration)
            except NotThisPair as exc:
                print(f'continuum-ctrl demo: error: {exc} (logs in {out})', file=sys.stderr)
                return 1
            if run is None:
                return start_failure(logs, out)
            stop(processes)
            rec.write_bag(out / 'closed_loop.mcap')
    finally:
        stop(processes)
        for log in logs:
            log.close()
    report(run, ' + '.join(args.arm), engine, period, nodes[0], out)
    return 0
