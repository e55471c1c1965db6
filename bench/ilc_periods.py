"""
Issue 51's acceptance in process: the error per period of a 1 Hz sinusoid, learnt or not.

    python bench/ilc_periods.py [--periods 20] [--plant mujoco4|builtin] [--off]
                                [--set KEY=YAML ...]

`config/continuum_3section.yaml`'s controller at 1 Hz with ``ilc.enable`` against the
package's arm behind the mismatch options (stiffness x 1.2, damping x 1.25, area x 1.1, a
15 kPa dead zone), lengths only (20 um noise, 2 ms old): bench/quiet_loop.py's
``lengths_1hz`` case, run in one process through the nodes' cycle (sim/closed_loop.py).
``--burst S``: the length noise x 10 (200 um) for 2 s from S s (the plant's clock:
``noise.burst_*``, sim/sensor.py);
``--push S ...``: a push on the tip along x, 20 N (``--push-size``) for 0.2 s from each S s
(the plant's clock: sim/push.py); ``--true-tip``: the plant's tip captured, its error
against the desired tip (by the controller's kinematics) per period as well. Prints
per period: the RMS PMA-length error per section (mm), the tip's RMS by the
controller's kinematics (mm) and the worst PMA's command variation (MPa/s); then the best
10 periods against the last 10.
"""

import argparse
import dataclasses
import time

import numpy as np

from continuum_ctrl.apps.node_pair import node_pair
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.sim.period_report import learnt_period, per_period, plot_periods, print_periods
from continuum_ctrl.sim.report import tip_frame, tip_paths
from continuum_ctrl.params import load_yaml

from quiet_loop import CONFIG, LENGTHS, MISMATCH, PLANTS


def periods(argv=None):
    """Run the case; print the per-period figures; return them (`PeriodRow`s)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--periods', type=int, default=20)
    parser.add_argument('--plant', default='mujoco4', choices=PLANTS)
    parser.add_argument('--off', action='store_true', help='without learning')
    parser.add_argument('--set', action='append', default=[], metavar='KEY=YAML')
    parser.add_argument('--plot', metavar='PNG', help='plot the RMS per period there')
    parser.add_argument('--burst', type=float, metavar='S',
                        help="the length noise x 10 for 2 s from S s (the plant's clock: "
                             "noise.burst_*)")
    parser.add_argument('--push', type=float, nargs='+', default=[], metavar='S',
                        help="a push on the tip along x for 0.2 s from each S s (the plant's "
                             'clock)')
    parser.add_argument('--push-size', type=float, default=20.0, metavar='N',
                        help='the pushes, N (default 20)')
    parser.add_argument('--true-tip', action='store_true',
                        help="capture the plant's tip (mocap.rate_hz 120) and give its RMS "
                             "error per period against the desired tip")
    args = parser.parse_args(argv)
    controller = {'reference.frequency': [1.0], 'ilc.enable': not args.off,
                  **{k: load_yaml(v) for k, v in (s.split('=', 1) for s in args.set)}}
    pushes = {'push.size': [args.push_size] * len(args.push), 'push.start': args.push} \
        if args.push \
        else {}
    capture = {'mocap.rate_hz': 120.0} if args.true_tip else {}
    burst = {'noise.burst_start': [args.burst],
             'noise.burst_position': 10.0 * LENGTHS['noise.position']} \
        if args.burst is not None \
        else {}
    runtime, plant = node_pair(CONFIG, controller, {**MISMATCH, **PLANTS[args.plant], **LENGTHS,
                                                    **pushes, **capture, **burst})
    loop = runtime.loop
    blend = loop.settings.reference.blend_time
    start = time.perf_counter()
    log = simulate_nodes(runtime, plant, blend + args.periods + 0.1)
    first = int(np.argmax(log.active))
    order, names = loop.settings.order, list(loop.settings.joints)
    q_des, q = log.q_des[first:, order], log.q[first:, order]
    desired, _, tip = tip_paths(loop.model, tip_frame(loop.model), q_des, q)
    learnt = learnt_period(dataclasses.replace(
        loop.settings, ilc=dataclasses.replace(loop.settings.ilc, enable=True)), q[0])
    print(f'{args.plant}, ilc {"off" if args.off else "on"}, '
          f'{time.perf_counter() - start:.0f} s of compute')
    rows = per_period(names, log.t[first:], q - q_des, log.command[first:], *learnt, tip)
    print_periods(names, rows, log.command)
    if args.true_tip:
        truth = np.linalg.norm(log.tip[first:] - desired, axis=1)
        true_rows = per_period(names, log.t[first:], q - q_des, log.command[first:], *learnt,
                               truth)
        print('true tip RMS per period, mm (the plant\'s against the desired tip): '
              + ' '.join(f'{1e3 * row.tip:.2f}' for row in true_rows))
    worst = np.array([max(row.rms) for row in rows])
    if len(worst) >= 20:
        tens = np.convolve(worst, np.ones(10) / 10, 'valid')
        print(f'worst section, mean over 10 periods: best {1e3 * tens.min():.4f} mm, last '
              f'{1e3 * tens[-1]:.4f} mm ({tens[-1] / tens.min():.2f} x)')
    print('ilc:', dict(loop.ilc.figures()))
    if args.plot:
        plot_periods(args.plot, names, rows, log.command)
    return rows


if __name__ == '__main__':
    periods()
