"""
The tuner's speed: wall seconds of `tune` on the shipped file behind four valve settings.

    python bench/bench_tune.py [--repeats 3]

Timed: `tune_file` with the command's defaults (4 poses, the 17-case box, the file's
observer), its cases side by side on the machine's cores (tuning/side_by_side.py), then in
one process. Baseline in the same run: one Schur form of the loop the tuner assesses most
behind 76 + 38 ms valves (the folded loop, 252 states), so the ratios hold on a machine
three times slower. Target (issue 48): under 30 s on this 2-core machine.
"""

import argparse
import statistics
import time
from pathlib import Path

from continuum_ctrl.apps import tune     # first: its one BLAS thread precedes NumPy's loading
from continuum_ctrl.tuning import side_by_side
from continuum_ctrl.tuning.linear_loop import LoopSystem
from scipy.linalg import schur

ROOT = Path(__file__).resolve().parents[1]
PARAMS = str(ROOT / 'config' / 'continuum_3section.yaml')
#: s: (lag, dead time) of the valves, the shipped file's first
VALVES = ((0.02, 0.005), (0.06, 0.01), (0.1, 0.01), (0.076, 0.038))


def seconds(function, repeats):
    """Return the median wall time of `repeats` calls, s."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def folded_loop(valves):
    """Return the folded closed loop's matrix of the file's gains behind `valves`, nominal."""
    args = tune._arguments([PARAMS])
    args.valves = list(valves)
    tune._check_arguments(args)
    setup, errors, _, loop = tune._setup(args)
    controller = setup.controllers(tune.file_gains(loop.settings), [0])[0]
    system = LoopSystem.build(setup.poses[0][1], controller, errors[0], setup.options,
                              setup.plant(0, errors[0]))
    return system.folded.closed()


def main():
    """Print the tuner's median times, side by side and in one process, against a Schur form."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--repeats', type=int, default=3)
    repeats = parser.parse_args().repeats
    matrix = folded_loop(VALVES[-1])
    floor = seconds(lambda: schur(matrix), 10 * repeats)
    print(f'tune {Path(PARAMS).name} (defaults), median of {repeats}; baseline: one Schur form '
          f'of the {matrix.shape[0]}-state folded loop, {1e3 * floor:.1f} ms')
    print('  valves (lag + dead)   side by side        one process         ratio')
    workers = side_by_side.pool
    for lag, dead in VALVES:
        def run():
            tune.tune_file([PARAMS], valves=[lag, dead])
        run()                                   # the kernels and plants: not timed
        parallel = seconds(run, repeats)
        side_by_side.pool = lambda: None
        try:
            serial = seconds(run, repeats)
        finally:
            side_by_side.pool = workers
        print(f'  {1e3 * lag:4.0f} + {1e3 * dead:2.0f} ms        {parallel:6.1f} s '
              f'({parallel / floor:5.0f} x)   {serial:6.1f} s ({serial / floor:5.0f} x)'
              f'   {serial / parallel:4.2f}')


if __name__ == '__main__':
    main()
