"""
The shipped rigid arm file against model error, in one process or through the nodes.

Links heavier or lighter than the URDF, or a payload at the hand the controller does not know.

    python bench/rigid_payload.py [--arm panda] [--engine mujoco] [--duration 8]
        [--case nominal|heavy|light|payload ...] [--set KEY=VALUE ...] [--plant KEY=VALUE ...]
        [--ki-fractions F ...] [--identify SECONDS] [--nodes [--out DIR]]

Per case: the RMS error per joint over 2 s to the end after activation (rad, the plant's true
joints against the reference), the worst joint's command variation (N m/s) and the largest
error. `--set` overrides controller keys, `--plant` the simulator's (a state whose age varies
from tick to tick, as through the nodes: ``--plant publish_rate_hz=700 sensor.jitter=0.001``;
sensor noise: ``noise.position=2.0e-5 noise.velocity=2.0e-3``). `--ki-fractions`: each case
at each `gains.ki_inertial` = F kp kd (its range is 0 to 1/4). `--identify`: first a run of
that many seconds with the payload under a slow multisine, `identify --fit payload` on it
(docs/rigid-payload.md), then the cases with the fitted payload given to the controller.
`--nodes`: every run through the demo's two node processes (`continuum-ctrl demo`, the
cases' keys in an overlay file after the arm's), the errors from its CSV (the measured state
against the reference at the tick, from 2 s after activation), and `--identify` fits the
demo's CSV with `continuum-ctrl identify --fit payload --out`, the written file given to the
cases as a second parameter file, as a user would (the runs' directories under `--out`).
"""

import argparse
from pathlib import Path
import subprocess
import sys
import tempfile

import numpy as np

from continuum_ctrl.apps.node_pair import (controller_loop, controller_runtime, overrides_file,
                                           plant_of)
from continuum_ctrl.control.command_quality import variation_rate
from continuum_ctrl.identify.data import Run
from continuum_ctrl.identify.rigid import identify_payload
from continuum_ctrl.identify.setup import read_setup
from continuum_ctrl.params import load_yaml
from continuum_ctrl.params.launch_description import arm_config
from continuum_ctrl.runtime.controller_runtime import CONTROLLING
from continuum_ctrl.sim.closed_loop import simulate_nodes

#: the simulator's overrides of each case
CASES = {
    'nominal': {},
    'heavy': {'mismatch.mass_scale': 1.3},
    'light': {'mismatch.mass_scale': 0.75},
    'payload': {'payload.mass': 3.0, 'payload.frame': 'panda_hand',
                'payload.offset': [0.0, 0.0, 0.1]},
}
#: the excitation `identify --fit payload` wants of a loaded arm (docs/rigid-payload.md)
SLOW = {'reference.type': 'multisine', 'reference.amplitude': [0.3],
        'reference.band': [0.1, 0.5], 'reference.components': 4}


def measure(path, engine, duration, case, controller, simulator=None):
    """Return ``(rms per joint, variation per joint, largest error)`` from 2 s after activation."""
    runtime = controller_runtime(path, controller)
    plant = plant_of(path, {'engine': engine, **CASES[case], **(simulator or {})})
    loop = runtime.loop
    log = simulate_nodes(runtime, plant, duration)
    first = int(np.argmax(log.active))
    start = first + int(round(2.0 / loop.period))
    order = loop.settings.order
    error = (log.q - log.q_des)[start:][:, order]
    rms = np.sqrt(np.mean(error ** 2, axis=0))
    rate = variation_rate(log.t[start:], log.command[start:])
    return rms, rate, float(np.max(np.abs(error)))


def demo(paths, engine, duration, controller, simulator, out):
    """
    Run the demo's node processes on `paths` with the overrides; return its CSV's columns.

    ``(t from activation, s; q_des; q; command)``, joints in the CSV's order.
    """
    out.mkdir(parents=True, exist_ok=True)
    overlay = overrides_file(out / 'case.yaml', controller, simulator)
    subprocess.run([sys.executable, '-m', 'continuum_ctrl.apps.cli', 'demo', '--arm',
                    *map(str, paths), str(overlay), '--engine', engine, '--duration',
                    str(duration), '--out', str(out)], check=True, stdout=subprocess.DEVNULL)
    data = np.genfromtxt(out / 'closed_loop.csv', delimiter=',', names=True)
    names = [c[len('q_des_'):] for c in data.dtype.names if c.startswith('q_des_')]
    return (data['t'], *(np.column_stack([data[f'{part}_{n}'] for n in names])
                         for part in ('q_des', 'q', 'command')))


def measure_nodes(paths, engine, duration, case, controller, simulator, out):
    """
    Return what `measure` does, through the node processes, and the RMS at the stamps.

    The CSV's error is the measured state against the reference at the tick that read it,
    so a state some ms old adds its age times the reference's speed (a loaded machine's).
    The last item is the error at each joint state's own stamp, the reference interpolated
    there between the ticks (`stamped_rms`).
    """
    t, q_des, q, command = demo(paths, engine, duration, controller,
                                {**CASES[case], **simulator}, out / case)
    late = t >= 2.0
    error = (q - q_des)[late]
    return (np.sqrt(np.mean(error ** 2, axis=0)), variation_rate(t[late], command[late]),
            float(np.max(np.abs(error))), stamped_rms(out / case / 'closed_loop.mcap'))


def stamped_rms(bag):
    """
    Return the RMS per joint (rad) of the bag's joint states against the reference at their stamps.

    The reference: the controller's ``~/state``, interpolated between its active ticks;
    from 2 s after the first. Joints are paired by name, in the ``~/state`` order.
    """
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    ticks, states, names = [], [], {}
    with open(bag, 'rb') as handle:
        reader = make_reader(handle, decoder_factories=[DecoderFactory()])
        for _, channel, _, msg in reader.iter_decoded_messages(
                topics=['/joint_states', '/continuum_controller/state']):
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            if channel.topic == '/joint_states':
                names.setdefault('sensor', list(msg.name))
                states.append((stamp, msg.position))
            elif msg.header.frame_id in CONTROLLING:
                names.setdefault('reference', list(msg.joint_names))
                ticks.append((stamp, msg.points[0].positions))
    tick_t, q_des = (np.array(x) for x in zip(*sorted(ticks)))
    state_t, q = (np.array(x) for x in zip(*sorted(states)))
    q = q[:, [names['sensor'].index(name) for name in names['reference']]]
    inside = (state_t >= tick_t[0] + 2.0) & (state_t <= tick_t[-1])
    error = q[inside] - np.column_stack([np.interp(state_t[inside], tick_t, q_des[:, j])
                                         for j in range(q_des.shape[1])])
    return np.sqrt(np.mean(error ** 2, axis=0))


def identified_nodes(path, engine, duration, controller, simulator, out):
    """Return the payload file `identify` writes from a `duration` s demo run with it."""
    run = out / 'identify_run'
    demo([path], engine, duration, {**controller, **SLOW}, {**CASES['payload'], **simulator},
         run)
    written = out / 'payload.yaml'
    if subprocess.run([sys.executable, '-m', 'continuum_ctrl.apps.cli', 'identify', str(path),
                       str(run / 'closed_loop.csv'), '--fit', 'payload', '--payload-frame',
                       'panda_hand', '--out', str(written)]).returncode:
        raise SystemExit(f'identify refused the run in {run} (its logs say whether the loop '
                         f'was starved)')
    print(f'identified over {duration:g} s through the nodes: {written.read_text().strip()}')
    return written


def identified(path, engine, duration, controller, simulator):
    """Return the controller's ``model.payload.*`` fitted to a `duration` s run with it."""
    loop = controller_loop(path, {**controller, **SLOW})
    plant = plant_of(path, {'engine': engine, **CASES['payload'], **simulator})
    log = simulate_nodes(loop, plant, duration)
    command = np.empty_like(log.command)
    command[:, loop.settings.order] = log.command
    run = Run('payload', log.t, log.measured, log.t.copy(), command)
    result, payload, refused = identify_payload([run], read_setup(path), 'panda_hand')
    print(f"identified over {duration:g} s: {payload['mass']:.4f} kg at "
          f"{np.round(payload['offset'], 4).tolist()} m, held-out R^2 "
          f"{result.r2_test_all:.4f}{'; REFUSED: ' + '; '.join(refused) if refused else ''}")
    return {f'model.payload.{key}': value for key, value in payload.items()}


def _values(items):
    """Return the ``KEY=VALUE`` items as a dict, each value YAML (a list where it has commas)."""
    values = {}
    for item in items:
        key, _, value = item.partition('=')
        values[key] = load_yaml(f'[{value}]' if ',' in value else value)
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--arm', default='panda')
    parser.add_argument('--engine', default='mujoco')
    parser.add_argument('--duration', type=float, default=8.0)
    parser.add_argument('--case', nargs='+', default=list(CASES), choices=list(CASES))
    parser.add_argument('--set', nargs='*', default=[], help='controller KEY=VALUE')
    parser.add_argument('--plant', nargs='*', default=[], help='simulator KEY=VALUE')
    parser.add_argument('--ki-fractions', nargs='+', type=float, default=[None],
                        help='gains.ki_inertial as these fractions of kp kd')
    parser.add_argument('--identify', type=float, default=0.0, metavar='SECONDS')
    parser.add_argument('--nodes', action='store_true', help='through the node processes')
    parser.add_argument('--out', help='--nodes: the runs\' directory (default: a temporary one)')
    args = parser.parse_args()
    controller, simulator = _values(args.set), _values(args.plant)
    path = arm_config(args.arm)
    with tempfile.TemporaryDirectory() as scratch:
        cases(args, path, controller, simulator, Path(args.out or scratch))


def cases(args, path, controller, simulator, out):
    """Print each case's figures (at each ki fraction), after the identification if any."""
    paths = [path]
    if args.identify and args.nodes:
        paths.append(identified_nodes(path, args.engine, args.identify, controller, simulator,
                                      out))
    elif args.identify:
        controller.update(identified(path, args.engine, args.identify, controller, simulator))
    gains = controller_loop(path, controller).settings        # per-joint gains, model order
    kp_kd = (gains.kp * gains.kd)[gains.order]
    for fraction in args.ki_fractions:
        if fraction is not None:
            controller['gains.ki_inertial'] = (fraction * kp_kd).tolist()
            if fraction == 0.0:                 # the payload estimate learns from the integral
                controller['adapt.time_constant'] = 0.0
            else:
                controller.pop('adapt.time_constant', None)
        label = '' if fraction is None else f'ki {fraction:.4g} kp kd  '
        for case in args.case:
            stamped = ''
            if args.nodes:
                rms, rate, worst, at_stamps = measure_nodes(
                    paths, args.engine, args.duration, case, controller, simulator,
                    out / label.strip().replace(' ', '_'))
                stamped = (f'  at the states\' stamps {np.max(at_stamps):.2e} rad (joint '
                           f'{np.argmax(at_stamps) + 1})')
            else:
                rms, rate, worst = measure(path, args.engine, args.duration, case, controller,
                                           simulator)
            per_joint = ' '.join(f'{r:.1e}' for r in rms)
            print(f'{label}{case:<8} worst RMS {np.max(rms):.2e} rad (joint '
                  f'{np.argmax(rms) + 1}){stamped}  max {worst:.4f} rad  variation worst '
                  f'{np.max(rate):.1f} N m/s  RMS per joint {per_joint}')


if __name__ == '__main__':
    main()
