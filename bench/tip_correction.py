"""
The task-space correction on a captured tip (issue 50's acceptance cases).

    python bench/tip_correction.py [targets|circle|dropout|timeout|calibrated ...] [--nodes]
                                   [--discs 8] [--bandwidth W] [--bag calib.mcap]

The nodes' loop and plant of `continuum_task` (the overlay on continuum_3section.yaml: its
gains, observer and valves) run in one process (`sim.closed_loop.simulate_nodes`), the plant
the MuJoCo disc stack (8 discs per section by default) 20 % off the controller's model
(stiffness x 1.2, damping x 1.25, PMA area x 1.1, a 15 kPa dead zone), under gravity,
starting at 13 mm per PMA; motion capture 120 Hz, 0.2 mm noise, 10 ms latency. Each case
prints the true tip's error (the last disc, noiseless) beside the model's (its kinematics at
the plant's PMA lengths) and the command variation (MPa/s, the worst PMA):
- targets: three ~/tip_target poses 250, 350 and 450 mm off the axis (`--radii`), bent
  towards 0, 1 and 2 rad (`--angles`), moved to at up to
  0.25 m/s (`task.max_speed`; the file's 0.05 m/s takes 10 s per move); errors 3 s after
  each move ends (and their largest over the next 2 s);
- circle: a 3 cm circle at 0.2 Hz around a point 300 mm off the axis; RMS over one
  revolution after the move and the ramp;
- dropout: the circle with the capture lost for 2 s from 13 s; the largest change of the
  true error against the undisturbed run, during it and over 5 s from its start;
- timeout: the capture stops for good at a target: the log lines and the error after.
- calibrated: without motion capture (the controller's correction off; the plant still
  captures, for the true tip only): the targets with the model alone, then calibrated from a
  60 s bag (`--bag`; recorded first when it is not there: 15 tip targets a
  bearing step and a golden-ratio reach apart, identify/calibration_run.py) by
  `continuum-ctrl identify --fit kinematics`; then calibrated with the capture on.

With `--nodes` every case runs through the controller and simulator node processes over DDS
(the demo's start and recording, apps/demo.py `record`; a free ROS_DOMAIN_ID): the true tip
is the simulator's `~/tip_true` (its capture without noise, latency or dropouts), the
model's tip its kinematics at the joints of `~/state`, the path point `~/tip_desired`; tip
targets go to `~/tip_target`, and the calibration bag is the recording's (/joint_states,
/mocap/tip; through the nodes too). Figures on a loaded machine vary from run to run.
"""

import argparse
import math
from pathlib import Path
from types import SimpleNamespace
import tempfile
import time

from geometry_msgs.msg import PoseStamped
from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter
import yaml

import numpy as np

from continuum_ctrl import load_model
from continuum_ctrl.apps import demo, identify
from continuum_ctrl.apps.launch import stop
from continuum_ctrl.apps.node_pair import command_message, node_pair, overrides_file
from continuum_ctrl.identify.calibration_run import bent_tip, record_calibration, workspace_tour
from continuum_ctrl.params.launch_description import (arm_files, CONTROLLER, SIMULATOR,
                                                      simulation, TRUTH_TOPIC)
from continuum_ctrl.ros.recorder import Recorder
from continuum_ctrl.ros.task_messages import TipPose
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.sim.report import command_summary, summary

TIP = 'section3_tip'
#: the plant 20 % off, captured as the issue's acceptance says
PLANT = {'engine': 'mujoco', 'mismatch.stiffness_scale': 1.2, 'mismatch.damping_scale': 1.25,
         'mismatch.area_scale': 1.1, 'mismatch.deadzone': 15000.0, 'initial.position': [0.013],
         'mocap.rate_hz': 120.0, 'mocap.noise': 2e-4, 'mocap.latency': 0.01}
#: seconds after a move's end at which a target's error is taken
SETTLE = 3.0
#: the circle's dropout starts here, s from the start (through the nodes: the activation)
DROPOUT = 13.0
#: seconds of the calibration bag
CALIBRATION = 60.0


class Run:
    """
    One in-process run: the loop, the plant, what it logged (true and model tips).

    `actions`: ``(s, tip target)`` pairs; `log.t` (s from the start), `log.tip` (the true
    tip, m), `log.command`; `model_tip` and `target` (the path point, NaN before the first
    tip reference) at `log.t`; `events` ``(t, text)``; `plant_start` (s: the capture's
    origin on `log.t`).
    """

    plant_start = 0.0

    def __init__(self, controller, plant, duration, actions=()):
        self.runtime, self.plant = node_pair(arm_files('continuum_task'), controller, plant)
        self.model = self.runtime.loop.model
        self.names = list(self.runtime.loop.settings.joints)
        self.targets = []
        self.actions = sorted(actions, key=lambda a: a[0])
        self.events = []
        start = time.perf_counter()
        self.log = simulate_nodes(self.runtime, self.plant, duration, self._after)
        self.wall = time.perf_counter() - start
        log = self.log
        self.model_tip = np.array([self.model.frame_pose(q, TIP)[:3, 3] for q in log.q])
        self.target = np.array(self.targets)
        order = self.runtime.loop.settings.order
        self.joint_error = (log.q - log.q_des)[:, order]

    def _after(self, k, t):
        while self.actions and self.actions[0][0] <= t:
            self.runtime.request_tip_target(self.actions.pop(0)[1])
        self.events += [(t, text) for _, text in self.runtime.drain_events()]
        target = self.runtime.tip_target()
        self.targets.append(np.full(3, np.nan) if target is None else target.copy())

    def errors(self):
        """Return the true and the model's tip errors against the path point, m (N,)."""
        return (np.linalg.norm(self.log.tip - self.target, axis=1),
                np.linalg.norm(self.model_tip - self.target, axis=1))

    def variation(self, since):
        """Return the worst PMA's command variation, MPa/s, from `since` s."""
        keep = (self.log.t >= since) & np.all(np.isfinite(self.log.command), axis=1)
        return max(v for _, _, v, _ in command_summary(self.names, self.log.t[keep],
                                                       self.log.command[keep])) * 1e-6

    def sections(self, since):
        """Return the PMA-length tracking RMS per section from `since` s, mm, as text."""
        keep = self.log.t >= since
        return ' / '.join(f'{rms * 1e3:.3f}' for _, rms, _ in
                          summary(self.names, self.joint_error[keep]))

    def move_end(self, sent, goal):
        """Return when the path point reached `goal` after `sent` (s; the move's end; NaN: not)."""
        reached = (self.log.t >= sent) & (np.linalg.norm(self.target - goal, axis=1) < 1e-6)
        return float(self.log.t[reached][0]) if reached.any() else math.nan


class NodeRun(Run):
    """
    One run through the node processes, as `continuum-ctrl demo` runs them (apps/demo.py).

    The same figures as `Run`, from the recording: `log.t` s from the controller's activation
    or, with tip targets (`actions`), from when its planner served (seconds later under load:
    the targets wait for it, and the actions count from it); the true tip the simulator's
    ``~/tip_true`` (noiseless), the model's tip its kinematics at the joints of ``~/state``,
    the path point ``~/tip_desired``, both interpolated at the states' stamps; `events` the
    controller's log lines. Tip targets are published on ``~/tip_target``; `bag`: a path to
    write the rosbag2 recording to; `dropout`: ``(start, duration)`` s of a capture dropout
    from the activation (set on the running simulator: its `mocap.dropouts` count from its
    own start, which comes 0.1-3 s before the activation on a loaded machine). The
    nodes' logs and the arrays (`run.npz`) stay in `out`, for a look at a run gone wrong.
    """

    def __init__(self, controller, plant, duration, actions=(), bag=None, dropout=None):
        out = Path(tempfile.mkdtemp(prefix='tip_correction_'))
        overlay = overrides_file(out / 'overrides.yaml', controller, plant)
        files = arm_files('continuum_task') + (overlay,)
        nodes = simulation(files)
        self.model = load_model(list(files), CONTROLLER)
        logs = [open(out / f'{node.name}.log', 'w') for node in nodes]
        processes = []
        start = time.perf_counter()
        try:
            with Recorder(bag=bag is not None, priority=demo.node_timing(files)[1],
                          message=command_message(files)) as rec:
                target = rec.node.create_publisher(PoseStamped, f'/{CONTROLLER}/tip_target',
                                                   10)
                pose = TipPose('base')
                sends = [(at, lambda r, g=goal: target.publish(pose.fill(_at(g), time.time())))
                         for at, goal in actions]
                if dropout is not None:
                    sends.append((dropout[0], _lose(rec.node, dropout[1])))
                ready = _planner_ready(rec) if actions else None
                run = demo.record(rec, nodes, logs, processes, duration, sends, ready)
                stop(processes)
                if run is None:
                    raise RuntimeError(f'the nodes did not start: logs in {out}')
                if bag is not None:
                    rec.write_bag(bag)
        finally:
            stop(processes)
            for log in logs:
                log.close()
        self.wall = time.perf_counter() - start
        self.names, self.out = run.names, out
        self._arrays(run, ready.at if ready else run.t[0])
        np.savez(out / 'run.npz', t=self.log.t, tip=self.log.tip, model_tip=self.model_tip,
                 target=self.target, q_des=run.q_des, q=run.q, command=run.command)
        self.events = [(np.nan, line) for line in
                       (out / f'{CONTROLLER}.log').read_text(errors='replace').splitlines()]

    def _arrays(self, run, origin):
        """Fill `log`, `model_tip` and `target` from the demo's Recording `run`; t0 `origin`."""
        order = [run.names.index(name) for name in self.model.joint_names]
        truth, desired = (run.tips[topic] for topic in (TRUTH_TOPIC,
                                                        f'/{CONTROLLER}/tip_desired'))
        self.plant_start = truth[0][0] - origin
        self.log = SimpleNamespace(t=run.t - origin, tip=_along(truth, run.t),
                                   command=run.command)
        self.model_tip = np.array([self.model.frame_pose(q, TIP)[:3, 3]
                                   for q in run.q[:, order]])
        self.target = _along(desired, run.t)
        self.joint_error = run.q - run.q_des


def _planner_ready(rec):
    """
    Return ``ready()``: whether the controller's planner serves (its IK process started).

    ``ready.at``: when it first held (s, the recording's clock). Under load the IK process
    starts seconds after the activation, and tip targets wait for it.
    """
    def ready():
        if rec.diagnostics and rec.diagnostics[-1].get('planner_ready') == '1':
            ready.at = ready.at or time.time()
        return bool(ready.at)
    ready.at = 0.0
    return ready


def _lose(node, seconds):
    """Return ``action(rec)``: the running simulator's capture lost for `seconds` from now."""
    client = node.create_client(SetParameters, f'/{SIMULATOR}/set_parameters')
    lost = Parameter('mocap.dropouts', value=[0.0, float(seconds)]).to_parameter_msg()
    # a new capture, its dropouts counted from its first sample: now
    return lambda rec: client.call_async(SetParameters.Request(parameters=[lost]))


def _at(position):
    """Return the 4x4 pose at `position` (m), unrotated."""
    pose = np.eye(4)
    pose[:3, 3] = position
    return pose


def _along(samples, t):
    """Return the positions of `samples` ((stamp s, (3,)) pairs) at `t` (s), NaN outside."""
    if not samples:
        return np.full((len(t), 3), np.nan)
    stamps = np.array([stamp for stamp, _ in samples])
    points = np.array([point for _, point in samples])
    out = np.column_stack([np.interp(t, stamps, points[:, i]) for i in range(3)])
    out[(t < stamps[0]) | (t > stamps[-1])] = np.nan
    return out


def runner(args):
    """Return the run's class: through the node processes (`--nodes`) or in process."""
    return NodeRun if args.nodes else Run


def targets(args, controller=None, label='targets'):
    """Three tip targets 250-450 mm off the axis, 9 s each; `controller`: its own overrides."""
    controller = {'reference.type': 'hold', 'task.correction.bandwidth': args.bandwidth,
                  'task.max_speed': 0.25, **(controller or {})}
    probe = node_pair(arm_files('continuum_task'), controller, {})[0].loop.model
    goals = [bent_tip(probe, TIP, r, a) for r, a in zip(args.radii, args.angles)]
    starts = [1.0, 10.0, 19.0]
    run = runner(args)(controller, {**PLANT, 'mujoco.discs': args.discs}, 28.0,
                       list(zip(starts, goals)))
    true, model = run.errors()
    t = run.log.t
    print(f"{label} ({run.wall:.0f} s wall{getattr(run, 'out', '') and f', in {run.out}'}):")
    for start, goal in zip(starts, goals):
        end = run.move_end(start, goal)
        if not end + SETTLE + 2.0 <= t[-1]:
            print(f'  {np.hypot(*goal[:2]) * 1e3:.0f} mm off the axis: the move did not end '
                  f'{SETTLE + 2.0:g} s before the run did (a loaded machine: run it again)')
            continue
        at = np.flatnonzero(t >= end + SETTLE)[0]
        span = (t >= end + SETTLE) & (t < end + SETTLE + 2.0)
        print(f'  {np.hypot(*goal[:2]) * 1e3:.0f} mm off the axis, the move ended '
              f'{end - start:.2f} s after the target was sent: {SETTLE:g} s after its end true '
              f'{true[at] * 1e3:.3f} mm (largest over 2 s {true[span].max() * 1e3:.3f}), '
              f'model {model[at] * 1e3:.3f} mm')
    print(f'  command variation {run.variation(1.0):.3f} MPa/s (worst PMA, from 1 s), PMA-length '
          f'RMS per section {run.sections(1.0)} mm')


def record_bag(args, bag):
    """Record the 60 s calibration bag: 15 tip targets touring the workspace (module doc)."""
    controller = {'reference.type': 'hold', 'task.max_speed': 0.25}
    plant = {**PLANT, 'mujoco.discs': args.discs}
    runtime, plant_now = node_pair(arm_files('continuum_task'), controller, plant)
    goals = workspace_tour(runtime.loop.model, TIP, 15)
    start = time.perf_counter()
    if args.nodes:
        dwell = (CALIBRATION - 1.0) / len(goals)
        NodeRun(controller, plant, CALIBRATION,
                [(1.0 + k * dwell, goal) for k, goal in enumerate(goals)], bag)
    else:
        record_calibration(runtime, plant_now, CALIBRATION, bag, goals)
    print(f'recorded {bag} ({CALIBRATION:g} s, {time.perf_counter() - start:.0f} s wall)')


def calibrated(args):
    """Run the targets without motion capture: the model alone, then calibrated from a bag."""
    blind = {'task.correction.bandwidth': 0.0}
    targets(args, blind, 'targets without motion capture, the model alone')
    bag = Path(args.bag or Path(tempfile.mkdtemp()) / 'calibration.mcap')
    if not bag.exists():
        record_bag(args, bag)
    out = bag.with_suffix('.yaml')
    if identify.main([str(arm_files('continuum_task')[0]), str(bag), '--fit', 'kinematics',
                      '--out', str(out)]):
        return
    overlay = yaml.safe_load(out.read_text())['continuum_controller']['ros__parameters']
    calibration = {f'task.calibration.{key}': value
                   for key, value in overlay['task']['calibration'].items()}
    targets(args, {**blind, **calibration}, 'targets without motion capture, calibrated')
    targets(args, calibration, 'targets with motion capture, calibrated')


def circle(args, dropout=None):
    """Run a 3 cm circle at 0.2 Hz around a point 300 mm off the axis; `dropout`: (start, s)."""
    controller = {'reference.type': 'tip_circle', 'reference.tip_radius': 0.03,
                  'task.correction.bandwidth': args.bandwidth, 'reference.blend_time': 0.0}
    probe = node_pair(arm_files('continuum_task'), controller, {})[0].loop.model
    edge = bent_tip(probe, TIP, 0.33, 0.0)
    controller['reference.tip_center'] = [0.3, 0.0, float(edge[2])]
    plant = {**PLANT, 'mujoco.discs': args.discs}
    if args.nodes:      # a window that never comes, so that the node declares the key
        return NodeRun(controller, {**plant, 'mocap.dropouts': [1e6, 0.0]}, 20.0,
                       dropout=dropout)
    if dropout is not None:
        plant['mocap.dropouts'] = list(dropout)
    return Run(controller, plant, 20.0)


def circle_figures(args):
    """Print the circle's RMS over one revolution after the move and the ramp."""
    run = circle(args)
    true, model = run.errors()
    keep = run.log.t >= run.log.t[-1] - 5.0
    print(f'circle ({run.wall:.0f} s wall): last 5 s (one revolution) true RMS '
          f'{np.sqrt(np.mean(true[keep] ** 2)) * 1e3:.3f} mm, largest '
          f'{true[keep].max() * 1e3:.3f}; model RMS {np.sqrt(np.mean(model[keep] ** 2)) * 1e3:.3f}'
          f' mm; command variation {run.variation(run.log.t[-1] - 5.0):.3f} MPa/s, PMA-length '
          f'RMS per section {run.sections(run.log.t[-1] - 5.0)} mm')
    return run


def dropout(args):
    """
    Run the circle with a 2 s capture dropout from 13 s, against the undisturbed circle.

    From 13 s the gap is steady along the circle: before, it still grows as the arm settles
    after its move (7 to 10 mm from 9 to 13 s), which no map of the pose can hold. The runs
    are compared at the same time from the controller's activation, where their circles are
    in phase.
    """
    plain = circle(args)
    lost = circle(args, (DROPOUT, 2.0))
    t = plain.log.t
    start = DROPOUT
    window = (t >= start) & (t < start + 5.0)
    lost_error = np.interp(t, lost.log.t, lost.errors()[0])
    change = np.abs(lost_error - plain.errors()[0])
    during = change[(t >= start) & (t < start + 2.0)].max()
    print(f'dropout of 2 s at {start:.2f} s: true error changed by at most {during * 1e3:.3f} '
          f'mm during it, {change[window].max() * 1e3:.3f} mm over the 5 s from it; its RMS '
          f'{np.sqrt(np.mean(lost_error[window] ** 2)) * 1e3:.3f} mm against '
          f'{np.sqrt(np.mean(plain.errors()[0][window] ** 2)) * 1e3:.3f} undisturbed')


def timeout(args):
    """Stop the capture for good at 8 s, the tip held at a target 350 mm off the axis."""
    controller = {'reference.type': 'hold', 'task.correction.bandwidth': args.bandwidth,
                  'task.max_speed': 0.25}
    probe = node_pair(arm_files('continuum_task'), controller, {})[0].loop.model
    goal = bent_tip(probe, TIP, 0.35, 0.0)
    run = runner(args)(controller, {**PLANT, 'mujoco.discs': args.discs,
                                    'mocap.dropouts': [8.0, 100.0]}, 14.0, [(1.0, goal)])
    true, model = run.errors()
    lines = [text for _, text in run.events if 'tip measurement' in text]
    print(f'timeout: {len(lines)} log line(s): {lines}; true error at 7.9 s '
          f'{true[np.flatnonzero(run.log.t >= 7.9 + run.plant_start)[0]] * 1e3:.3f} mm, at '
          f'the end {true[-1] * 1e3:.3f} mm (model {model[-1] * 1e3:.3f} mm)')


CASES = {'targets': targets, 'circle': circle_figures, 'dropout': dropout, 'timeout': timeout,
         'calibrated': calibrated}


def main():
    """Run the cases asked for (default: all)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('cases', nargs='*', default=list(CASES), help=' | '.join(CASES))
    parser.add_argument('--nodes', action='store_true',
                        help="through the node processes (the demo's), not in process")
    parser.add_argument('--discs', type=int, default=8)
    parser.add_argument('--bandwidth', type=float, default=2.0)
    parser.add_argument('--bag', help='calibrated: the calibration bag (recorded when absent)')
    parser.add_argument('--radii', type=float, nargs=3, default=[0.25, 0.35, 0.45],
                        help='targets: m off the axis')
    parser.add_argument('--angles', type=float, nargs=3, default=[0.0, 1.0, 2.0],
                        help='targets: bend directions, rad')
    args = parser.parse_args()
    unknown = sorted(set(args.cases) - set(CASES))
    if unknown:
        parser.error(f'unknown cases {unknown}: choose from {list(CASES)}')
    for case in args.cases:
        CASES[case](args)


if __name__ == '__main__':
    main()
