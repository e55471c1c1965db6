"""
Issue 49: the largest PMA error from activation over many starts of one configuration.

    python bench/activation_spread.py [--arm FILE] [--starts 10] [--duration 3]
                                      [--engine mujoco] [--discovery 30] [--stall 0]
                                      [--nodes [--out DIR]]

Each start runs the file's controller against its simulator (`--engine`, default the MuJoCo
disc stack) from activation and takes the largest PMA-length error, when it came, and the
RMS per section; the spread (min / median / max) of those over the starts follows.

In process (default) the two nodes' cycle runs without ROS (sim/closed_loop.py), and what
differs between two starts of the nodes is drawn per start: the command topic is matched
up to `--discovery` ms after the first command (till then the plant rests and hears
nothing, so the controller anchors at a resting or a falling arm), and with `--stall MS`
the command stream stalls that long once, 0.5 to 2.5 s after the start (the simulator hears
no command; past `command_timeout` it vents: issue 49's collapse at 177 ms). ``--nodes``
starts the demo's two node processes instead (`continuum-ctrl demo`), and adds per start
the simulator's count of stale commands, its longest gap between two commands heard and the
recording's longest gap between two controller ticks.
"""

import argparse
from pathlib import Path
import re
import subprocess
import sys
import tempfile

import numpy as np

from continuum_ctrl.apps.node_pair import node_pair
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.sim.report import summary

CONFIG = Path(__file__).resolve().parents[1] / 'config' / 'continuum_3section.yaml'
#: when a `--stall` begins, s after the start: the blend, where issue 49's collapses came
STALL_WINDOW = (0.5, 2.5)


def largest(t, names, q_des, q):
    """Return ``(largest error m, its time s, [(section, rms, max)])`` of a run's error."""
    error = q - q_des
    worst = int(np.argmax(np.max(np.abs(error), axis=1)))
    return float(np.max(np.abs(error))), float(t[worst] - t[0]), summary(names, error)


def in_process(path, engine, duration, discovery, stall):
    """Run one start in one process; return `largest` and the simulator's stale count."""
    runtime, plant = node_pair(path, None, {'engine': engine})
    log = simulate_nodes(runtime, plant, duration,
                         deaf=[(0.0, discovery)] + ([] if stall is None else [stall]))
    loop = runtime.loop
    first = int(np.argmax(log.active))
    order = loop.settings.order
    figures = largest(log.t[first:], list(loop.settings.joints),
                      log.q_des[first:][:, order], log.q[first:][:, order])
    return figures, f'stale {plant.stale_commands}'


def through_nodes(path, engine, duration, out):
    """
    Run one start through the demo's node processes; return `largest` and its gap line.

    A demo that fails (a start-up that timed out on a loaded machine) raises RuntimeError
    with its last line.
    """
    done = subprocess.run([sys.executable, '-m', 'continuum_ctrl.apps.cli', 'demo', '--arm',
                           str(path), '--engine', engine, '--duration', str(duration),
                           '--out', str(out)], capture_output=True, text=True)
    if done.returncode:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f'exit status {done.returncode}')
    data = np.genfromtxt(out / 'closed_loop.csv', delimiter=',', names=True)
    names = [c[len('q_des_'):] for c in data.dtype.names if c.startswith('q_des_')]
    q_des, q = (np.column_stack([data[f'{part}_{n}'] for n in names]) for part in ('q_des', 'q'))
    found = re.search(r'commands gone stale (\S+), longest gap between commands (\S+) ms',
                      done.stdout)
    ticks = re.search(r'largest gap (\S+) ms', done.stdout)
    gaps = ', '.join(([f'stale {found[1]}, longest gap between commands heard {found[2]} ms']
                      if found else []) + ([f'between ticks {ticks[1]} ms'] if ticks else []))
    return largest(data['t'], names, q_des, q), gaps


def spread(values):
    """Return 'min / median / max' of `values` in mm."""
    return ' / '.join(f'{1e3 * f(values):.3f}' for f in (np.min, np.median, np.max))


def main(argv=None):
    """Print each start and the spread."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--arm', type=Path, default=CONFIG)
    parser.add_argument('--starts', type=int, default=10)
    parser.add_argument('--duration', type=float, default=3.0)
    parser.add_argument('--engine', default='mujoco')
    parser.add_argument('--discovery', type=float, default=30.0,
                        help='in process: longest delay of the command topic, ms')
    parser.add_argument('--stall', type=float, default=0.0,
                        help='in process: a command stall of this many ms per start')
    parser.add_argument('--seed', type=int, default=49)
    parser.add_argument('--nodes', action='store_true', help='through the node processes')
    parser.add_argument('--out', type=Path, help="--nodes: keep each start's demo output "
                        'in OUT/start_N (default: none kept)')
    args = parser.parse_args(argv)
    draw = np.random.default_rng(args.seed)
    worst, rms = [], []
    print(f'{args.arm.name}, engine {args.engine}, {args.starts} starts of {args.duration} s'
          + (' through the nodes' if args.nodes else ' in process'))
    for start in range(args.starts):
        matched = 1e-3 * draw.uniform(0.0, args.discovery)
        at = draw.uniform(*STALL_WINDOW)
        if args.nodes:
            with tempfile.TemporaryDirectory() as scratch:
                out = Path(scratch) if args.out is None else args.out / f'start_{start + 1}'
                try:
                    (error, when, rows), notes = through_nodes(args.arm, args.engine,
                                                               args.duration, out)
                except RuntimeError as exc:
                    print(f'start {start + 1:>2}: the demo failed: {exc}', flush=True)
                    continue
        else:
            stall = (at, at + 1e-3 * args.stall) if args.stall else None
            (error, when, rows), notes = in_process(args.arm, args.engine, args.duration,
                                                    matched, stall)
            notes = (f'commands from {1e3 * matched:.1f} ms, ' + (
                f'stalled {args.stall:.0f} ms at {at:.2f} s, ' if stall else '') + notes)
        worst.append(error)
        rms.append([r for _, r, _ in rows])
        sections = ' | '.join(f'{1e3 * r:.3f} / {1e3 * m:.3f}' for _, r, m in rows)
        print(f'start {start + 1:>2}: largest {1e3 * error:.3f} mm at {when:.2f} s; per section '
              f'RMS / max mm {sections}; {notes}', flush=True)
    rms = np.array(rms)
    print(f'largest error, min / median / max: {spread(np.array(worst))} mm')
    for k in range(rms.shape[1]):
        print(f'section {k + 1} RMS, min / median / max: {spread(rms[:, k])} mm')


if __name__ == '__main__':
    main()
