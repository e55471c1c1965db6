"""
Identification speed: seconds to identify 60 s of a 500 Hz run of the three-section arm.

    python bench/bench_identify.py

Made before timing: a synthetic run (the controller's model following a multisine with known
PMA parameters) for the default fit, and 60 s of the excitation through the embedded loop on
the mismatched plant behind valves with a 30 ms lag and a 5 ms dead time (1 ms plant step) for
the lag search, with the nominal file's gains (NOMINAL_GAINS). Timed: `identify` from the
recorded arrays (grid, differentiation, one compiled inverse dynamics per sample, the fit
with its dead-zone refits, the held-out judgement), and the same with the actuator lag and
delay searched. Baseline in the same run: the bare per-sample inverse-dynamics calls alone.
Target: under 15 s. Also timed: a rigid arm, 60 s of the Panda's exact efforts at 500 Hz
(base inertial parameters and friction), against its per-sample regressor calls.
"""

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'test'))

from support.identify_plant import (closed_loop, MISMATCH, NOISE, NOMINAL_GAINS,  # noqa: E402
                                    PARAMS, RIGID_PARAMS, synthetic_rigid_run, synthetic_run)

from continuum_ctrl.identify.fit import DEFAULT_FIT, identify, Options  # noqa: E402
from continuum_ctrl.identify.rigid import identify_rigid, RigidArm  # noqa: E402
from continuum_ctrl.identify.setup import read_setup  # noqa: E402

REPEATS = 3


def seconds(function):
    """Return the median wall time of REPEATS calls, s."""
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main():
    """Time the identification of 60 s at 500 Hz against its model-evaluation floor."""
    setup = read_setup(ROOT / 'config' / 'continuum_3section.yaml')
    run = synthetic_run(setup, duration=60.0, rate=500.0, noise=1e-5)
    samples = len(run.t)
    floor = seconds(lambda: [setup.rigid.inverse_dynamics(q, q, q) for q in run.q])
    default = seconds(lambda: identify([run], setup))
    lagged, *_ = closed_loop([PARAMS, 'config/identify_excitation.yaml'], {**MISMATCH, **NOISE},
                             60.0, controller_overrides=NOMINAL_GAINS, time_constant=0.03,
                             delay=0.005, step=0.001)
    searched = Options(DEFAULT_FIT + ('time_constant', 'delay'))
    lag = seconds(lambda: identify([lagged], setup, searched))
    found = {e.key: e for e in identify([lagged], setup, searched).estimates}
    print(f'identify 60 s at 500 Hz ({samples} samples, 9 PMAs), median of {REPEATS}:')
    print(f'  inverse dynamics alone (floor)       {floor:7.2f} s')
    print(f'  default fit                          {default:7.2f} s  ({default / floor:.1f} x '
          f'floor; target < 15 s)')
    print(f'  with time_constant and delay search  {lag:7.2f} s  ({lag / floor:.1f} x floor; '
          f'target < 15 s)')
    print(f'  valves 30 ms lag, 5 ms delay: found {found["output.time_constant"].value * 1e3:.2f}'
          f' ms, {found["output.delay"].value * 1e3:.2f} ms')
    rigid = read_setup(ROOT / RIGID_PARAMS)
    arm = RigidArm(rigid.model)
    panda = synthetic_rigid_run(arm, arm.theta, duration=60.0, friction=np.full(7, 0.5))
    regressor = seconds(lambda: [arm.regressor(q, q, q) for q in panda.q])
    fitted = seconds(lambda: identify_rigid([panda], rigid, ('inertia', 'friction')))
    print(f'Panda, 60 s at 500 Hz, base inertial parameters and friction: {fitted:.2f} s '
          f'({fitted / regressor:.1f} x its regressor calls, {regressor:.2f} s)')


if __name__ == '__main__':
    main()
