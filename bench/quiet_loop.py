"""
Issue 39's acceptance matrix: tracking, command variation and tip error on arms unlike the model.

    ./run shell python bench/quiet_loop.py [--nodes] [--duration 8] [--cases NAME,...]
                                           [--plants NAME,...] [--set KEY=YAML ...]
                                           [--valves LAG DEAD] [--friction N]

Each case runs `config/continuum_3section.yaml`'s controller against a simulated arm with the
mismatch options (stiffness x 1.2, damping x 1.25, area x 1.1, a 15 kPa dead zone) and the
file's valves, on the MuJoCo disc stack at 4 and 8 discs and on the built-in integral model:

- ``exact``: lengths and exact velocities, stamped at the measurement;
- ``lengths``: lengths only, 20 um noise, 2 ms old, stamped at the measurement (sim/sensor.py);
- ``lengths_1hz``: the same at a 1 Hz sinusoid;
- ``end_stops``: lengths only against a reference that drives PMAs onto their end stops (the
  built-in plant with ``end_stops: true``);
- ``soft_corner``: exact states on an arm softer and heavier than its file, the tuner's
  worst corner (stiffness x 0.8, damping x 0.75, area x 0.9, mass x 1.2, no dead zone; run
  it with ``--duration 10``): where a loop without margin rings;
- issue 40's control case, today's law on PMAs as they are (sim/pma_traits.py), exact
  states: ``exact``, ``exact_1hz`` and ``hold`` (a bent pose held; run it with
  ``--duration 12``) with ideal PMAs, the same with an area that falls by 15 % over the
  stroke (``area``, ``area_1hz``, ``area_hold``) and with that area and 2 N of Maxwell-slip
  friction per PMA (3 % of the full 66.5 N; ``friction``, ``friction_1hz``,
  ``friction_hold``); ``stiff_friction`` and ``stiff_friction_hold``: the same with the
  bank 4 times stiffer, which a 0.5 ms plant step allows.

``--valves LAG DEAD`` (s) puts every case behind slower valves (the simulator's ``actuator.*``)
and sets the controller's compensation as docs/valves.md advises (``output.time_constant`` the
lag, ``output.delay`` the dead time plus TRANSPORT); ``--friction N`` adds N of break-away
friction per PMA (one Maxwell-slip element as stiff as a 2 ms step allows against the soft
corner's 22.5 N s/m), unknown to the controller unless ``--set`` gives ``output.friction``.

In process (default) the cases run the two nodes' cycle without ROS (sim/closed_loop.py);
``--nodes`` runs them through the demo's two node processes (`continuum-ctrl demo`, a
parameter file per case). Per section: the RMS and largest PMA-length error from activation
and over the last half of the run, the largest peak-to-peak of a PMA's error from 2 s after
activation on (a limit cycle's size while holding), the worst PMA's command variation
(MPa/s) and chatter index; the tip's RMS and largest error by the controller's kinematics.
"""

import argparse
from pathlib import Path
import subprocess
import sys
import tempfile

import numpy as np
import yaml

from continuum_ctrl import load_model
from continuum_ctrl.apps.node_pair import node_pair
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.sim.report import command_summary, groups, summary, tip_frame, tip_paths
from continuum_ctrl.params import load_yaml

CONFIG = Path(__file__).resolve().parents[1] / 'config' / 'continuum_3section.yaml'
MISMATCH = {'mismatch.stiffness_scale': 1.2, 'mismatch.damping_scale': 1.25,
            'mismatch.area_scale': 1.1, 'mismatch.deadzone': 15e3}
LENGTHS = {'sensor.velocity': False, 'noise.position': 2e-5, 'noise.seed': 7,
           'sensor.delay': 0.002}
#: the PMAs as they are: the area falls by 15 % over the stroke, and 2 N of friction in one
#: Maxwell-slip element as stiff as the 2 ms step allows against the PMAs' 30 N s/m
AREA_FALL = {'pma.area_slope': [0.15]}
FRICTION = {**AREA_FALL, 'pma.friction.breakaway': [2.0], 'pma.friction.stiffness': [1.5e4]}
#: a bank 4 times stiffer (33 um before break-away), which needs a 0.5 ms plant step
STIFF_FRICTION = {**FRICTION, 'pma.friction.stiffness': [6e4], 'step': 0.0005}
ONE_HZ = {'reference.frequency': [1.0]}
SOFT_CORNER = {'mismatch.stiffness_scale': 0.8, 'mismatch.damping_scale': 0.75,
               'mismatch.area_scale': 0.9, 'mismatch.mass_scale': 1.2, 'mismatch.deadzone': 0.0}
#: a bent pose held: section 1 bends towards PMA 1, 2 and 3 each a third of a turn on, m
HOLD = {'reference.amplitude': [0.0],
        'reference.center': [0.020, 0.008, 0.011, 0.011, 0.020, 0.008, 0.008, 0.011, 0.020]}
#: s: the transport from the controller's command to the valves that ``--valves`` adds to
#: their dead time for ``output.delay`` (docs/valves.md)
TRANSPORT = 0.005
#: N/m: the friction element's stiffness for ``--friction`` (2 ms times it is 20 N s/m)
FRICTION_STIFFNESS = 1e4
#: (simulator overrides, controller overrides) per case
CASES = {
    'exact': ({}, {}),
    'lengths': (LENGTHS, {}),
    'lengths_1hz': (LENGTHS, {'reference.frequency': [1.0]}),
    'end_stops': ({**LENGTHS, 'end_stops': True},
                  {'reference.center': [0.006], 'reference.amplitude': [0.010]}),
    'end_stops_exact': ({'end_stops': True},
                        {'reference.center': [0.006], 'reference.amplitude': [0.010]}),
    'soft_corner': (SOFT_CORNER, {}),
    'exact_1hz': ({}, ONE_HZ),
    'hold': ({}, HOLD),
    'area': (AREA_FALL, {}),
    'area_1hz': (AREA_FALL, ONE_HZ),
    'area_hold': (AREA_FALL, HOLD),
    'friction': (FRICTION, {}),
    'friction_1hz': (FRICTION, ONE_HZ),
    'friction_hold': (FRICTION, HOLD),
    'stiff_friction': (STIFF_FRICTION, {}),
    'stiff_friction_hold': (STIFF_FRICTION, HOLD),
}
#: (label, simulator overrides) per plant
PLANTS = {'mujoco4': {'engine': 'mujoco', 'mujoco.discs': 4},
          'mujoco8': {'engine': 'mujoco', 'mujoco.discs': 8},
          'builtin': {'engine': 'builtin'}}


def figures(names, model, t, q_des, q, command):
    """
    Return the case's figures per section, and the tip's.

    Per section ``(group, rms, late rms, max, late max, peak-to-peak, variation rate Pa/s,
    chatter index)``; the tip ``(rms, max, late rms, late max)``, m; late: the run's second
    half; peak-to-peak: the largest of a PMA's error from 2 s on.
    """
    error = q - q_des
    late = t >= t[0] + 0.5 * (t[-1] - t[0])
    settled = error[t >= t[0] + 2.0]
    swing = np.max(settled, axis=0) - np.min(settled, axis=0)
    rows = [(key, rms, late_rms, worst, late_worst, float(np.max(swing[index])), rate, chatter)
            for (key, rms, worst), (_, late_rms, late_worst), (_, _, rate, chatter), index
            in zip(summary(names, error), summary(names, error[late]),
                   command_summary(names, t, command), groups(names).values())]
    _, _, tip = tip_paths(model, tip_frame(model), q_des, q)
    return rows, tuple(float(f(x)) for x in (tip, tip[late])
                       for f in (lambda e: np.sqrt(np.mean(e ** 2)), np.max))


def in_process(plant_overrides, simulator, controller, duration):
    """Run one case in one process; return what `figures` returns."""
    runtime, plant = node_pair(CONFIG, controller, {**MISMATCH, **plant_overrides, **simulator})
    loop = runtime.loop
    log = simulate_nodes(runtime, plant, duration)
    first = int(np.argmax(log.active))
    order = loop.settings.order
    names = list(loop.settings.joints)
    return figures(names, loop.model, log.t[first:], log.q_des[first:][:, order],
                   log.q[first:][:, order], log.command[first:])


def _nest(tree, dotted, value):
    """Set the dotted key `dotted` of the nested dict `tree` to `value`."""
    *path, last = dotted.split('.')
    for key in path:
        tree = tree.setdefault(key, {})
    tree[last] = value


def through_nodes(plant_overrides, simulator, controller, duration, out):
    """Run one case through the demo's node processes; return what `figures` returns."""
    tree = load_yaml(CONFIG.read_text())
    for key, value in {**MISMATCH, **plant_overrides, **simulator}.items():
        _nest(tree['continuum_simulator']['ros__parameters'], key, value)
    for key, value in controller.items():
        _nest(tree['continuum_controller']['ros__parameters'], key, value)
    params = out / 'params.yaml'
    params.write_text(yaml.safe_dump(tree))
    subprocess.run([sys.executable, '-m', 'continuum_ctrl.apps.cli', 'demo', '--arm', str(params),
                    '--duration', str(duration), '--out', str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    data = np.genfromtxt(out / 'closed_loop.csv', delimiter=',', names=True)
    columns = data.dtype.names
    names = [c[len('q_des_'):] for c in columns if c.startswith('q_des_')]
    picked = [np.column_stack([data[f'{part}_{n}'] for n in names])
              for part in ('q_des', 'q', 'command')]
    keep = np.all(np.isfinite(picked[2]), axis=1)
    model = load_model(CONFIG)
    model_order = [model.joint_names.index(n) for n in names]
    q_des, q = (np.empty_like(x) for x in picked[:2])
    q_des[:, model_order], q[:, model_order] = picked[0], picked[1]
    return figures(names, model, data['t'][keep], q_des[keep], q[keep], picked[2][keep])


def main(argv=None):
    """Print the matrix."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--nodes', action='store_true', help='through the node processes')
    parser.add_argument('--duration', type=float, default=8.0)
    parser.add_argument('--cases', default=','.join(CASES))
    parser.add_argument('--plants', default=','.join(PLANTS))
    parser.add_argument('--set', action='append', default=[], metavar='KEY=YAML',
                        help="a controller parameter for every case, e.g. 'gains.kd=[20]'")
    parser.add_argument('--valves', type=float, nargs=2, metavar=('LAG', 'DEAD'),
                        help="the plant's valves, s, and the controller's compensation for them")
    parser.add_argument('--friction', type=float, default=0.0, metavar='N',
                        help='break-away friction per PMA, N (0: none)')
    args = parser.parse_args(argv)
    chosen = {key: load_yaml(value) for key, value in
              (item.split('=', 1) for item in args.set)}
    added = {}
    if args.valves:
        lag, dead = args.valves
        added = {'actuator.time_constant': lag, 'actuator.delay': dead}
        chosen = {'output.time_constant': lag, 'output.delay': dead + TRANSPORT, **chosen}
    if args.friction:
        added.update({'pma.friction.breakaway': [args.friction],
                      'pma.friction.stiffness': [FRICTION_STIFFNESS]})
    print('case plant: per section RMS (late half) / max (late half) mm, peak-to-peak from 2 s '
          'mm, worst PMA MPa/s, chatter index; the tip RMS (late half) / max (late half)')
    for case in args.cases.split(','):
        simulator, controller = CASES[case]
        simulator, controller = {**simulator, **added}, {**chosen, **controller}
        for label in args.plants.split(','):
            if args.nodes:
                with tempfile.TemporaryDirectory() as out:
                    rows, tip = through_nodes(PLANTS[label], simulator, controller,
                                              args.duration, Path(out))
            else:
                rows, tip = in_process(PLANTS[label], simulator, controller, args.duration)
            sections = ' | '.join(f'{1e3 * rms:.3f} ({1e3 * late:.3f}) / {1e3 * worst:.2f} '
                                  f'({1e3 * late_worst:.2f}) mm pp {1e3 * swing:.3f} mm '
                                  f'{1e-6 * rate:.2f} MPa/s {chatter:.2f}'
                                  for _, rms, late, worst, late_worst, swing, rate, chatter
                                  in rows)
            print(f'{case:<12} {label:<8} {sections} | tip {1e3 * tip[0]:.2f} ({1e3 * tip[2]:.2f})'
                  f' / {1e3 * tip[1]:.2f} ({1e3 * tip[3]:.2f}) mm', flush=True)


if __name__ == '__main__':
    main()
