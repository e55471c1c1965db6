"""
Issue 51's rigid case in process: a Panda repeating a 2 s trajectory, learnt trial by trial.

    python bench/ilc_trials.py [--trials 12] [--off] [--engine mujoco|builtin]
                               [--late S] [--set KEY=YAML ...]

`config/panda.yaml`'s controller with ``ilc.enable`` against the Panda in MuJoCo, its links
20 % heavier (``mismatch.mass_scale``). The trajectory (20 points, positions only, 0.1 s
apart: a smooth excursion out of the start pose and back) is sent again every 2.5 s, each
time as a JointTrajectory message reaches the controller node: read by the node's conversion
(ros/conversion.py's `trajectory_arrays`; its header stamp 0, or with `--late` between half
of that and that long before it arrives) and handed to the runtime's `follow`, in one
process through the nodes' cycle (sim/closed_loop.py). Prints per trial the RMS joint error
over the trial's 2 s (rad: the worst joint's and over all joints) and the worst joint's
effort variation (N m/s), then the learning's /diagnostics figures.
"""

import argparse
from types import SimpleNamespace
import time

import numpy as np

from continuum_ctrl.apps.node_pair import node_pair
from continuum_ctrl.ros.conversion import trajectory_arrays
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.sim.report import variation_rate
from continuum_ctrl.params import load_yaml

CONFIG = 'panda.yaml'
#: the excursion's amplitude per joint, rad, and the trial's points' times, s
AMPLITUDE = np.array([0.4, 0.3, 0.4, 0.4, 0.5, 0.4, 0.5])
TIMES = np.arange(1, 21) * 0.1
#: the first trajectory's arrival (s, after the loop's start) and the time between them
FIRST, EVERY = 1.0, 2.5


def message(start, stamp):
    """Return the trajectory as a JointTrajectory's fields: out of `start` and back."""
    names = [f'panda_joint{k}' for k in range(1, 8)]
    shape = np.sin(np.pi * TIMES / TIMES[-1]) ** 2 * np.sin(2.0 * np.pi * TIMES / TIMES[-1]
                                                            + np.arange(7)[:, None])
    positions = start[:, None] + AMPLITUDE[:, None] * shape
    points = [SimpleNamespace(positions=list(p), velocities=[], accelerations=[],
                              time_from_start=SimpleNamespace(sec=int(t),
                                                              nanosec=int(round(t % 1 * 1e9))))
              for p, t in zip(positions.T, TIMES)]
    sec = int(stamp)
    header = SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=int((stamp - sec) * 1e9)))
    return SimpleNamespace(joint_names=names, points=points, header=header), names


def trials(argv=None):
    """Run the case; print and return the per-trial figures (worst joint rad, all rad, N m/s)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--trials', type=int, default=12)
    parser.add_argument('--off', action='store_true', help='without learning')
    parser.add_argument('--engine', default='mujoco', choices=('mujoco', 'builtin'))
    parser.add_argument('--late', type=float, default=0.0, metavar='S',
                        help='the header stamp up to this long before the arrival (drawn '
                        'between half of it and it; 0: stamp 0)')
    parser.add_argument('--set', action='append', default=[], metavar='KEY=YAML')
    args = parser.parse_args(argv)
    controller = {'reference.type': 'hold', 'ilc.enable': not args.off,
                  **{k: load_yaml(v) for k, v in (s.split('=', 1) for s in args.set)}}
    runtime, plant = node_pair(CONFIG, controller, {'engine': args.engine,
                                                    'mismatch.mass_scale': 1.2})
    loop = runtime.loop
    start_pose = plant.q.copy()
    arrivals = FIRST + EVERY * np.arange(args.trials)
    lateness = np.random.default_rng(3)

    def send(k, t):
        if np.any(np.abs(arrivals - t) < 0.5 * loop.period):
            stamp = t - args.late * lateness.uniform(0.5, 1.0) if args.late > 0.0 else 0.0
            msg, names = message(start_pose, stamp)
            times, *points = trajectory_arrays(msg, names, stamp - t if stamp > 0.0 else 0.0)
            runtime.follow(times, *points, t=t)

    begin = time.perf_counter()
    log = simulate_nodes(runtime, plant, FIRST + EVERY * args.trials, after_tick=send)
    print(f'{args.engine}, mass x 1.2, ilc {"off" if args.off else "on"}, '
          f'{time.perf_counter() - begin:.0f} s of compute; per trial: RMS rad (worst joint, '
          'all joints) | worst N m/s')
    rows = []
    for k, arrival in enumerate(arrivals):
        inside = (log.t >= arrival) & (log.t < arrival + TIMES[-1])
        error = (log.q - log.q_des)[inside]
        per_joint = np.sqrt(np.mean(error ** 2, axis=0))
        rate = float(np.nanmax(variation_rate(log.t[inside], log.effort[inside])))
        rows.append((float(per_joint.max()), float(np.sqrt(np.mean(error ** 2))), rate))
        print(f'{k + 1:4d}  {per_joint.max():.5f}  {rows[-1][1]:.5f}  | {rate:.1f}', flush=True)
    print('ilc:', dict(loop.ilc.figures()))
    return rows


if __name__ == '__main__':
    trials()
