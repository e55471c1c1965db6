"""
`continuum-ctrl simulate`: the controller against the simulator's plant, in one process.

    continuum-ctrl simulate [--arm 2r|panda|continuum|PARAMS.yaml] [--duration 8] [--out out/]
                            [--engine builtin|mujoco] [--kp KP] [--kd KD]

The two nodes' cycle without ROS or real time (`node_pair`, `sim.closed_loop.simulate_nodes`):
the controller node's `ControllerRuntime` of the file (its loop's reference, gains, law,
limits, valve compensation, watchdog and activation blend) ticks at its `rate_hz` against the
simulator's `Plant` of the same file (its model, mismatch, valves, noise, integrator and
`engine`). Each tick the loop gets the plant's state as the simulator node stamps it, and
its command drives the plant until the next tick. `--kp`/`--kd` replace the file's gains (one
value for every joint). Prints per section (joint) from activation, as the demo does for the
same file: the RMS and largest tracking error, and the worst PMA's (joint's) command
variation (sum of |change| per second, MPa/s or N m/s) and chatter index (its share of power
above 10 Hz, control/command_quality.py); then the tip's error (the task frame, else a
continuum arm's last section tip, by the controller's own kinematics); and writes
``<out>/<arm>_tracking.png``. Where the loop learns a periodic reference (`ilc.enable`), it
prints the same figures per period as well and plots them into ``<out>/<arm>_learning.png``
(sim/period_report.py).
"""

import argparse
import dataclasses
from pathlib import Path
import sys

import numpy as np

from continuum_ctrl.control.gains import validate_gain
from continuum_ctrl.params.launch_description import arm_files, ARMS
from continuum_ctrl.apps.node_pair import node_pair
from continuum_ctrl.params import ConfigError
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.sim.period_report import show_periods
from continuum_ctrl.sim.plant import ENGINES
from continuum_ctrl.sim.report import plot, print_tables, tip_frame, tip_paths


def _gain_text(gain):
    gain = np.asarray(gain)
    return f'{gain.flat[0]:g}' if np.all(gain == gain.flat[0]) else np.array2string(gain)


def run(path, duration, engine=None, kp=None, kd=None):
    """
    Return ``(loop, plant, log)``: the file's node pair run for `duration` s (NodeLoopLog).

    `engine` (None: the file's) and `kp`, `kd` (None: the file's; a number: every joint)
    override the file.
    """
    runtime, plant = node_pair(path, {}, {} if engine is None else {'engine': engine})
    loop = runtime.loop
    n = loop.model.n
    gains = {name: validate_gain([value] * n, n, f'--{name}')
             for name, value in (('kp', kp), ('kd', kd)) if value is not None}
    if gains:                                       # as a runtime gain change does
        runtime.post_settings(dataclasses.replace(loop.settings, **gains), runtime.options)
    return loop, plant, simulate_nodes(runtime, plant, duration)


def main(argv=None):
    """Run the closed loop; return the exit status (1 if it never became active)."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl simulate', description=__doc__.split(
        '\n\n')[0].strip())
    parser.add_argument('--arm', nargs='+', default=['2r'],
                        help=f"{', '.join(ARMS)}, a file stem in config/ or a parameter YAML "
                             f"file; several merge in order, an overlay last (default 2r)")
    parser.add_argument('--duration', type=float, default=8.0, help='seconds (default 8)')
    parser.add_argument('--out', default='out', help='output directory (default ./out)')
    parser.add_argument('--kp', type=float, default=None,
                        help="1/s^2, every joint (default: the file's gains.kp)")
    parser.add_argument('--kd', type=float, default=None,
                        help="1/s, every joint (default: the file's gains.kd)")
    parser.add_argument('--engine', choices=ENGINES, default=None,
                        help="the simulator's physics engine (default: the file's, else "
                             "builtin)")
    args = parser.parse_args(argv)
    if not args.duration > 0.0:
        raise ConfigError('--duration', 'must be > 0')
    paths = arm_files(args.arm)
    path = paths[-1]
    loop, plant, log = run(paths, args.duration, args.engine, args.kp, args.kd)
    settings = loop.settings
    lag, dead_time, _ = plant.settings.actuator
    valves = (f'valves {lag:g} s lag, {dead_time:g} s dead time' if lag or dead_time
              else 'no valves')
    compensation = ('compensated for {:g} s, {:g} s'.format(*settings.compensation)
                    if any(settings.compensation) else 'not compensated')
    print(f'{path.stem}: {loop.model.n} joints, law passive at {settings.passive}, '
          f'Kp={_gain_text(settings.kp)} Kd={_gain_text(settings.kd)} '
          f'Ki={_gain_text(settings.integral_gain)}'
          f'{" 1/s^3" if settings.ki_inertial is not None else ""}, {1.0 / loop.period:g} Hz, '
          f'reference {settings.reference.kind}, {args.duration:g} s, engine '
          f'{plant.settings.engine}; '
          f'{valves}, {compensation}')
    if not log.active.any():
        print('continuum-ctrl simulate: the controller never became active', file=sys.stderr)
        return 1
    first = int(np.argmax(log.active))
    names = list(settings.joints)
    t = log.t[first:]
    q_des, q = (x[first:][:, settings.order] for x in (log.q_des, log.q))
    command = log.command[first:]
    print(f'closed loop in one process: {t[-1] - t[0]:.1f} s from activation, '
          f'{len(t)} ticks')
    frame = tip_frame(loop.model, settings.task.frame)
    tip = None if frame is None else (frame, tip_paths(
        loop.model, frame, log.q_des[first:], log.q[first:])[2])
    print_tables(names, t, q - q_des, command, tip)
    image = Path(args.out) / f'{path.stem}_tracking.png'
    image.parent.mkdir(parents=True, exist_ok=True)
    plot(image, names, t, q_des, q, command, loop.period)
    print(f'plot: {image}')
    learning = image.with_name(f'{path.stem}_learning.png')
    if show_periods(learning, settings, log.q[first], names, t, q - q_des, command,
                    None if tip is None else tip[1]):
        print(f'plot: {learning}')
    return 0
