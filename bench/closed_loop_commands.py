"""
The closed-loop commands of the shipped configs, recorded, and two recordings compared.

A refactoring that should not change behaviour is checked with it: record before, record
after, compare. For each case, the controller's runtime and the simulator's plant of a file
(`apps.node_pair`) run `sim.closed_loop.simulate_nodes` for DURATION s, and the commands,
efforts and desired positions of every tick are kept:
- each config in config/ that has a simulator (and the excitation overlay), as shipped;
- the continuum file through the Python tick (``fused=False``), with a minimum-jerk
  reference, with the falling area and friction feed-forward, without the observer, and on
  the MuJoCo engine (when mujoco is installed), each fused and in Python.

    python bench/closed_loop_commands.py record before.npz [CASE ...]
    python bench/closed_loop_commands.py compare before.npz after.npz

`compare` prints, per case and quantity, the largest difference over the largest magnitude
(the scale) and exits 1 where one exceeds TOLERANCE or a case is missing.
"""

import importlib.util
import sys

import numpy as np

from continuum_ctrl.apps.node_pair import controller_runtime, plant_of
from continuum_ctrl.sim.closed_loop import simulate_nodes

#: s of closed loop per case
DURATION = 2.0
#: the largest difference allowed, relative to the quantity's scale
TOLERANCE = 1e-12
CONTINUUM = ['continuum_3section.yaml']
MIN_JERK = {'reference.type': 'min_jerk', 'reference.goal': [0.015],
            'reference.duration': 0.8}
PMA = {'output.friction': [2.0], 'output.area_slope': [0.15]}
#: name -> (files, controller overrides, simulator overrides, fused)
CASES = {
    'continuum_3section': (CONTINUUM, {}, {}, True),
    'continuum_3section python': (CONTINUUM, {}, {}, False),
    'continuum_task': (CONTINUUM + ['continuum_task.yaml'], {}, {}, True),
    'identify_excitation': (CONTINUUM + ['identify_excitation.yaml'], {}, {}, True),
    'my_arm': (['my_arm.yaml'], {}, {}, True),
    'panda': (['panda.yaml'], {}, {}, True),
    'panda python': (['panda.yaml'], {}, {}, False),
    'planar_2r': (['planar_2r.yaml'], {}, {}, True),
    'min_jerk': (CONTINUUM, MIN_JERK, {}, True),
    'min_jerk python': (CONTINUUM, MIN_JERK, {}, False),
    'area and friction': (CONTINUUM, PMA, {}, True),
    'area and friction python': (CONTINUUM, PMA, {}, False),
    'no observer': (CONTINUUM, {'observer.type': 'none'}, {}, True),
    'no observer python': (CONTINUUM, {'observer.type': 'none'}, {}, False),
    'mujoco': (CONTINUUM, {}, {'engine': 'mujoco'}, True),
    'mujoco python': (CONTINUUM, {}, {'engine': 'mujoco'}, False),
}
#: the NodeLoopLog fields kept
FIELDS = ('command', 'effort', 'q_des')


def run(name):
    """Return the kept fields of case `name`'s closed loop, ``{field: (ticks, n)}``."""
    paths, controller, simulator, fused = CASES[name]
    runtime = controller_runtime(paths, controller, fused)
    log = simulate_nodes(runtime, plant_of(paths, simulator), DURATION)
    return {field: np.array(getattr(log, field)) for field in FIELDS}


def record(path, names):
    """Run the cases `names` (all: empty) and save their fields to `path` (.npz)."""
    arrays = {}
    for name in names or CASES:
        if CASES[name][2].get('engine') == 'mujoco' and not importlib.util.find_spec('mujoco'):
            print(f'{name}: skipped, no mujoco')
            continue
        for field, values in run(name).items():
            arrays[f'{name}/{field}'] = values
        print(f'{name}: {arrays[f"{name}/command"].shape[0]} ticks', flush=True)
    np.savez(path, **arrays)


def compare(before, after):
    """Print the relative differences of two recordings; return whether all are within."""
    a, b = np.load(before), np.load(after)
    good = True
    for key in sorted(set(a.files) | set(b.files)):
        if key not in a.files or key not in b.files:
            print(f'{key}: in one recording only')
            good = False
            continue
        x, y = a[key], b[key]
        scale = max(float(np.max(np.abs(x))), 1e-300)
        difference = float(np.max(np.abs(x - y))) / scale if x.shape == y.shape else np.inf
        within = difference <= TOLERANCE
        good &= within
        print(f'{key:40s} scale {scale:10.4g}  max |diff| / scale {difference:.3g}'
              f'{"" if within else "  EXCEEDS"}')
    return good


if __name__ == '__main__':
    if len(sys.argv) >= 3 and sys.argv[1] == 'record':
        record(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == 'compare':
        sys.exit(0 if compare(sys.argv[2], sys.argv[3]) else 1)
    else:
        sys.exit(__doc__)
