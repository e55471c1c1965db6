"""
The shipped rigid arm file against model error, in one process.

Links heavier or lighter than the URDF, or a payload at the hand the controller does not know.

    python bench/rigid_payload.py [--arm panda] [--engine mujoco] [--duration 8]
        [--case nominal|heavy|light|payload ...] [--set KEY=VALUE ...] [--plant KEY=VALUE ...]

Per case: the RMS error per joint over 2 s to the end after activation (rad), the worst
joint's command variation (N m/s) and the largest error. `--set` overrides controller keys,
`--plant` the simulator's (a state whose age varies from tick to tick, as through the nodes:
``--plant publish_rate_hz=700 sensor.jitter=0.001``).
"""

import argparse

import yaml

import numpy as np

from continuum_ctrl.apps.node_pair import controller_runtime, plant_of
from continuum_ctrl.params.launch_description import arm_config
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.control.command_quality import variation_rate

#: the simulator's overrides of each case
CASES = {
    'nominal': {},
    'heavy': {'mismatch.mass_scale': 1.3},
    'light': {'mismatch.mass_scale': 0.75},
    'payload': {'payload.mass': 3.0, 'payload.frame': 'panda_hand',
                'payload.offset': [0.0, 0.0, 0.1]},
}


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


def _values(items):
    """Return the ``KEY=VALUE`` items as a dict, each value YAML (a list where it has commas)."""
    values = {}
    for item in items:
        key, _, value = item.partition('=')
        values[key] = yaml.safe_load(f'[{value}]' if ',' in value else value)
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--arm', default='panda')
    parser.add_argument('--engine', default='mujoco')
    parser.add_argument('--duration', type=float, default=8.0)
    parser.add_argument('--case', nargs='+', default=list(CASES), choices=list(CASES))
    parser.add_argument('--set', nargs='*', default=[], help='controller KEY=VALUE')
    parser.add_argument('--plant', nargs='*', default=[], help='simulator KEY=VALUE')
    args = parser.parse_args()
    controller, simulator = _values(args.set), _values(args.plant)
    path = arm_config(args.arm)
    for case in args.case:
        rms, rate, worst = measure(path, args.engine, args.duration, case, controller,
                                   simulator)
        print(f'{case:<8} RMS rad {np.array2string(rms, precision=4)}  max {worst:.4f} rad  '
              f'variation worst {np.max(rate):.1f} N m/s')


if __name__ == '__main__':
    main()
