"""
Tracking of the continuum demo behind lagging PMA valves, compensated or not.

The figures of docs/benchmarks.md (valves).

    ./run shell python bench/actuator_lag.py [--nodes] [--free] [--rows LAG,DELAY,T,D ...]

Each row runs config/continuum_3section.yaml with the simulator's valves at `actuator.
time_constant` LAG and `actuator.delay` DELAY (s), and the controller's `output.
time_constant` T and `output.delay` D (s). `--free`: the controller's and the simulator's
parts in one process on one clock (sim.closed_loop.simulate_nodes: no transport latency, no noise);
`--nodes`: the two node processes over DDS. Prints the largest and RMS tracking error from 2 s
after activation (after the 1 s blend) over 6 s, and the total variation of the commands per
second (chatter).
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

from continuum_ctrl.params.launch_description import config_path, simulation
from continuum_ctrl.apps.launch import start, stop
from continuum_ctrl.params import read_yaml
from continuum_ctrl.ros.recorder import Recorder
from continuum_ctrl.sim.closed_loop import simulate_nodes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'test'))
from continuum_ctrl.apps.node_pair import controller_loop, plant_of  # noqa: E402

CONFIG = 'continuum_3section.yaml'
#: the table's rows: valve lag and delay, compensation time constant and delay (s)
ROWS = [(0.0, 0.0, 0.0, 0.0), (0.01, 0.0, 0.0, 0.0), (0.03, 0.0, 0.0, 0.0),
        (0.05, 0.0, 0.0, 0.0), (0.03, 0.0, 0.03, 0.0), (0.01, 0.0, 0.01, 0.0),
        (0.03, 0.0, 0.025, 0.0), (0.03, 0.005, 0.0, 0.0), (0.03, 0.005, 0.03, 0.005),
        (0.03, 0.005, 0.024, 0.005), (0.03, 0.005, 0.036, 0.005)]
SETTLE, DURATION = 2.0, 6.0


def overrides(lag, delay, time_constant, predicted):
    """Return the (simulator, controller) parameter updates of one row."""
    return ({'actuator': {'time_constant': lag, 'delay': delay}},
            {'output': {'time_constant': time_constant, 'delay': predicted}})


def figures(t, q, q_des, command):
    """Return (max error m, RMS error m, total variation of the commands per second, Pa/s)."""
    late = t >= t[0] + SETTLE
    error = (q - q_des)[late]
    variation = np.sum(np.abs(np.diff(command[late], axis=0))) / (t[late][-1] - t[late][0])
    return np.max(np.abs(error)), np.sqrt(np.mean(error ** 2)), variation


def free(row):
    """Run one row without ROS; return its figures."""
    simulator, controller = overrides(*row)
    plant = plant_of(CONFIG, {f'actuator.{k}': v for k, v in simulator['actuator'].items()})
    loop = controller_loop(CONFIG, {f'output.{k}': v for k, v in controller['output'].items()})
    log = simulate_nodes(loop, plant, SETTLE + DURATION)
    return figures(log.t, log.q, log.q_des, log.command)


def nodes(row, directory):
    """Run one row with the two node processes; return its figures."""
    simulator, controller = overrides(*row)
    data = read_yaml(config_path(CONFIG))
    for name, update in (('continuum_simulator', simulator),
                         ('continuum_controller', controller)):
        section = data[name]['ros__parameters']
        for key, values in update.items():
            section[key] = dict(section.get(key, {}), **values)
    path = Path(directory) / 'params.yaml'
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    specs = simulation(path)
    logs = [open(Path(directory) / f'{spec.name}.log', 'w') for spec in specs]
    processes = start(specs, outputs=logs)
    try:
        with Recorder() as rec:
            if not rec.wait(lambda: rec.active_since is not None, 90.0, processes):
                raise RuntimeError(f'nodes did not start; logs in {directory}')
            rec.run(SETTLE + DURATION)
            t, q_des, q, _ = rec.arrays(since=rec.active_since)
            stamps = np.array([c[0] for c in rec.commands])
            values = np.array([c[1] for c in rec.commands])
    finally:
        stop(processes)
        for log in logs:
            log.close()
    mine = stamps >= t[0]
    t_c, command = stamps[mine], values[mine]
    late = t_c >= t_c[0] + SETTLE
    maximum, rms, _ = figures(t, q, q_des, np.zeros_like(q))
    span = t_c[late][-1] - t_c[late][0]
    variation = np.sum(np.abs(np.diff(command[late], axis=0))) / span
    return maximum, rms, variation


def main():
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--nodes', action='store_true', help='through the node processes')
    parser.add_argument('--free', action='store_true', help='in one process without ROS')
    parser.add_argument('--rows', nargs='*', help='LAG,DELAY,T,D in seconds')
    args = parser.parse_args()
    rows = [tuple(float(v) for v in r.split(',')) for r in args.rows] if args.rows else ROWS
    kinds = [k for k in ('free', 'nodes') if getattr(args, k)] or ['free', 'nodes']
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    print('| valves: lag, delay | compensation: T, delay | run | max error | RMS | '
          'command TV |')
    print('|---|---|---|---|---|---|')
    for row in rows:
        for kind in kinds:
            with tempfile.TemporaryDirectory() as directory:
                result = free(row) if kind == 'free' else nodes(row, directory)
            maximum, rms, variation = result
            print(f'| {row[0] * 1e3:g} ms, {row[1] * 1e3:g} ms | {row[2] * 1e3:g} ms, '
                  f'{row[3] * 1e3:g} ms | {kind} | {maximum * 1e3:.2f} mm | {rms * 1e3:.2f} mm '
                  f'| {variation:.3g} Pa/s |', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
