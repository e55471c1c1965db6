"""
`continuum-ctrl warm`: compile the continuum models' Numba kernels into their on-disk cache.

Run once after installing (a colcon workspace, a pip install): node processes then load the
kernels in about a second instead of compiling them for 40 s or more at their first start.
The cache sits next to the installed sources (``__pycache__``) when that is writable, else
in ``NUMBA_CACHE_DIR`` or the user's cache directory (see `numerics.jit`).

Each kernel compiles on one core. On a cold cache two worker processes share the work: first
`cog_kernels` and `other_kernels` side by side, then the fused tick, which calls the kernels
of both shares. The command then runs `warm` itself, which loads them all and compiles
whatever the workers left out.
"""

import argparse
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
import multiprocessing
import os
import sys
import tempfile
import time
import traceback

import numpy as np

from continuum_ctrl.actuation.valves import Actuator
from continuum_ctrl.control.fused_tick import fused_tick, FusedTick
from continuum_ctrl.control.rigid_tick import finish_entry
from continuum_ctrl.control.samplers import warm_samplers
from continuum_ctrl.control.state_age import carry_entry
from continuum_ctrl.params.launch_description import arm_files
from continuum_ctrl.models import load_model
from continuum_ctrl.models.continuum.cog import cog_damped_steps, cog_run
from continuum_ctrl.models.continuum.integral import integral_evaluate
from continuum_ctrl.apps.node_pair import controller_loop, node_pair
from continuum_ctrl.numerics.jit import cached, CACHE_LOCKS, lock_cache, on_compile
from continuum_ctrl.params import model_spec
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.actuation.maxwell_slip import MaxwellSlip

#: the controller's own kernels (law, valve lead, integral, limits, pressure map) are compiled
#: by running the nodes' loop and plant of this file for WARM_RUN s
WARM_RUN = 0.05
#: worker processes on a cold cache
WORKERS = 2
#: a kernel of each part: the workers start when one of them is not in the cache
LANDMARKS = (cog_run, integral_evaluate, cog_damped_steps, fused_tick)


def _model(params, kind):
    """Return the `kind` model of `params` with the plant's stiffening outside the limits."""
    return load_model({**model_spec(arm_files(params)), 'type': kind, 'limit_stiffness': 1.0})


def _evaluate(model):
    """Run `model`'s dynamics calls (its kernel); return a state (q [m], qd [m/s]) and its tip."""
    q, qd = np.full(model.n, 0.01), np.full(model.n, 0.1)
    model.dynamics(q, qd)
    model.inverse_dynamics(q, qd, qd)
    model.forward_dynamics(q, qd, qd)
    model.kinetic_energy(q, qd), model.potential_energy(q), model.coriolis_matrix(q, qd)
    return q, qd, model.frame_names()[-1]


def cog_kernels(params):
    """Compile the CoG model's kernel and damped steps (one worker's share, half the work)."""
    model = _model(params, 'continuum_cog')
    _evaluate(model)
    model.compiled_damped_steps()


def other_kernels(params):
    """
    Compile the integral model's kernel and the rest ahead of the fused tick: the other share.

    The frame, IK, task-space and backbone kernels take either continuum model (the same
    arrays); the samplers and valves are the controller loop's, the friction bank the
    simulator's (actuation/maxwell_slip.py), the last calls the Pinocchio arms' tick
    (control/rigid_tick.py, control/state_age.py), so that a rigid arm's first start compiles
    nothing.
    """
    model = _model(params, 'continuum_integral')
    q, qd, tip = _evaluate(model)
    model.frame_jacobian_derivative(q, qd, tip), model.compiled_ik_step(tip)
    model.backbone(q), model.compiled_task_step(tip)
    warm_samplers()
    Actuator(0.01, 0.0, 0.0, np.zeros(1))           # the valves' walk
    MaxwellSlip(np.ones((1, 1)), np.ones((1, 1)))    # the simulator's PMA friction
    finish_entry(), carry_entry()


def fused_kernel(params):
    """Compile the fused tick of the controller node's loop of `params` (a worker's share)."""
    FusedTick(controller_loop(arm_files(params), fused=False))


def warm(params='continuum'):
    """Evaluate every compiled entry point of the continuum models, valves and loop; return s."""
    start = time.perf_counter()
    cog_kernels(params)
    other_kernels(params)
    simulate_nodes(*node_pair(arm_files(params)), WARM_RUN)   # the fused tick too
    return time.perf_counter() - start


def _worker(lock):
    """Start a worker: no compile notice (the command said it), cache index behind `lock`."""
    on_compile(lambda text: None)
    lock_cache(lock)


class WorkerFailed(Exception):
    """A worker's call raised; the message is its traceback (what it raised may not pickle)."""


def _call(function, *args):
    """Run ``function(*args)`` in a worker; raise WorkerFailed if it raises."""
    try:
        function(*args)
    except Exception:
        raise WorkerFailed(traceback.format_exc().strip()) from None


def _wait_all(futures):
    """Wait for `futures`; raise the first failure's exception, the calls not started cancelled."""
    done, _ = wait(futures, return_when=FIRST_EXCEPTION)
    failed = [future for future in done if future.exception() is not None]
    if failed:
        for future in futures:
            future.cancel()
        raise failed[0].exception()


def compile_in_workers(params):
    """Compile the kernels of `params` in WORKERS processes (see the module); return s."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        pool = ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context('spawn'),
                                   initializer=_worker,
                                   initargs=(os.path.join(folder, 'cache.lock'),))
        try:
            _wait_all([pool.submit(_call, cog_kernels, params),
                       pool.submit(_call, other_kernels, params)])
            pool.submit(_call, fused_kernel, params).result()
        except BaseException:
            # end the other worker's compile too (Python < 3.14 has no public call for it)
            for process in list((getattr(pool, '_processes', None) or {}).values()):
                process.terminate()
            raise
        finally:
            pool.shutdown(cancel_futures=True)
    return time.perf_counter() - start


def _cold():
    """Tell whether the workers pay: 2 cores or more, a cache missing one of LANDMARKS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:              # not Linux
        cores = os.cpu_count() or 1
    states = [cached(kernel) for kernel in LANDMARKS]
    return CACHE_LOCKS and cores >= WORKERS and False in states and None not in states


def main(argv=None):
    """Compile (or load) the kernels and say how long it took; 1 if a worker failed."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl warm', description=__doc__.split(
        '\n\n')[0].strip())
    parser.add_argument('--arm', default='continuum',
                        help='a continuum parameter file or arm name (default: continuum)')
    args = parser.parse_args(argv)
    params = args.arm
    model_spec(arm_files(params))       # a bad name or file fails here, not in a worker
    print('compiling the continuum kernels into their cache (loading them, if there): one to '
          'three minutes the first time on a 2-core machine', flush=True)
    on_compile(lambda text: None)       # said above
    workers = 0.0
    if _cold():
        try:
            workers = compile_in_workers(params)
        except Exception as exc:
            # a worker's traceback ends in what it raised; a worker that died says so
            text = str(exc) if isinstance(exc, WorkerFailed) else f'{type(exc).__name__}: {exc}'
            print(text, file=sys.stderr)
            print(f'continuum-ctrl warm: error in a worker process: {text.splitlines()[-1]}',
                  file=sys.stderr)
            return 1
    print(f'continuum kernels ready in {workers + warm(params):.1f} s')
    return 0
