"""
`continuum-ctrl warm`: compile the continuum models' Numba kernels into their on-disk cache.

Run once after installing (a colcon workspace, a pip install): node processes then load the
kernels in about a second instead of compiling them for 40 s or more at their first start.
The cache sits next to the installed sources (``__pycache__``) when that is writable, else
in ``NUMBA_CACHE_DIR`` or the user's cache directory (see `numerics.jit`).
"""

import argparse
import time

import numpy as np

from continuum_ctrl.actuation.valves import Actuator
from continuum_ctrl.numerics.jit import on_compile
from continuum_ctrl.params import model_spec
from continuum_ctrl.launch_description import arm_config
from continuum_ctrl.models import load_model
from continuum_ctrl.node_pair import node_pair
from continuum_ctrl.sim.closed_loop import simulate_nodes

#: the model kinds whose kernels are compiled, with the plant's stiffening outside the limits
KINDS = ('continuum_cog', 'continuum_integral')
#: the controller's own kernels (law, valve lead, integral, limits, pressure map) are compiled
#: by running the nodes' loop and plant of this file for WARM_RUN s
WARM_RUN = 0.05


def warm(params='continuum'):
    """Evaluate every compiled entry point of the continuum models, valves and loop; return s."""
    start = time.perf_counter()
    spec = model_spec(arm_config(params))
    for kind in KINDS:
        model = load_model({**spec, 'type': kind, 'limit_stiffness': 1.0})
        q, qd = np.full(model.n, 0.01), np.full(model.n, 0.1)
        model.dynamics(q, qd)
        model.inverse_dynamics(q, qd, qd)
        model.forward_dynamics(q, qd, qd)
        model.kinetic_energy(q, qd), model.potential_energy(q), model.coriolis_matrix(q, qd)
        tip = model.frame_names()[-1]
        model.frame_jacobian_derivative(q, qd, tip), model.compiled_ik_step(tip), model.backbone(q)
        model.compiled_task_step(tip), model.compiled_damped_steps()
    Actuator(0.01, 0.0, 0.0, np.zeros(1))           # compiles the valves' walk
    simulate_nodes(*node_pair(arm_config(params)), WARM_RUN)
    return time.perf_counter() - start


def main(argv=None):
    """Compile (or load) the kernels and say how long it took."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl warm', description=__doc__.split(
        '\n\n')[0].strip())
    parser.add_argument('--arm', default='continuum',
                        help='a continuum parameter file or arm name (default: continuum)')
    args = parser.parse_args(argv)
    print('compiling the continuum kernels into their cache (loading them, if there): one to '
          'three minutes the first time on a 2-core machine', flush=True)
    on_compile(lambda text: None)       # said above
    print(f'continuum kernels ready in {warm(args.arm):.1f} s')
    return 0
