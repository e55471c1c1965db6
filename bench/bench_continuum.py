"""
Continuum-model cost: microseconds per call, median of many repeats, with ratios.

    python bench/bench_continuum.py

One evaluation (``dynamics(q, qd)``) fills M, C, g and the passive forces in one compiled call.
It is timed for the CoG and the integral model of the reference arm (three sections), as are
the single calls. Then the CoG model's cost for 1 to 8 sections, with the exponent p of a
least-squares fit ``t = c n^p``, and the step rate of the simulator's RK4 on the three-section
CoG model, beside the paper's 9.5 kHz (Matlab/Simulink). The speed ratio is the median of
ratios timed in interleaved rounds. Targets: CoG evaluation
<= 20 us, >= 10x faster than the integral model, p <= 2.2, RK4 > 10 kHz.
"""

from pathlib import Path
import statistics
import timeit

from bench_models import REPEATS
import numpy as np

from continuum_ctrl import load_model
from continuum_ctrl.models.integrators import rk4_step

CONFIG = Path(__file__).resolve().parents[1] / 'config' / 'continuum_3section.yaml'
SECTION = {'length': 0.2, 'radius': 0.013, 'mass': 0.1, 'max_extension': 0.04,
           'stiffness': 2200.0, 'damping': 30.0}


def microseconds(function, number):
    """Return (median, best) over `REPEATS` runs of the time per call of `function`, in us."""
    function()
    runs = timeit.Timer(function).repeat(repeat=REPEATS, number=number)
    return statistics.median(runs) / number * 1e6, min(runs) / number * 1e6


def report(title, rows, baseline):
    """Print `rows` (label, (median, best)) with the ratio of medians to `baseline`."""
    reference = dict(rows)[baseline][0]
    print(f'\n{title}  (median and best of {REPEATS} runs; ratio of medians to {baseline})')
    for label, (median, best) in rows:
        print(f'  {label:<44} {median:8.2f} us  (best {best:8.2f})   x{median / reference:5.2f}')


def arm(kind, sections):
    """Return the spec of an arm of `sections` reference sections."""
    return {'type': kind, 'sections': {k: [v] * sections for k, v in SECTION.items()}}


def state(n, seed=0):
    """Return a fixed random state of n PMAs: positions, rates, accelerations."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.0, 0.04, n), rng.normal(size=n) * 0.04, rng.normal(size=n)


def bench_models():
    """Time the CoG and integral models of the three-section reference arm."""
    cog = load_model(CONFIG)
    integral = load_model(dict(arm('continuum_integral', 3)))
    q, qd, qdd = state(cog.n)
    tau = cog.inverse_dynamics(q, qd, qdd)
    rows = []
    for name, model, number in (('CoG', cog, 2000), ('integral', integral, 200)):
        rows += [
            (f'{name}: dynamics(q, qd): M, C, g, passive', microseconds(
                lambda: model.dynamics(q, qd), number)),
            (f'{name}: mass_matrix(q)', microseconds(lambda: model.mass_matrix(q), number)),
            (f'{name}: coriolis_matrix(q, qd)', microseconds(
                lambda: model.coriolis_matrix(q, qd), number)),
            (f'{name}: inverse_dynamics(q, qd, qdd)', microseconds(
                lambda: model.inverse_dynamics(q, qd, qdd), number)),
            (f'{name}: forward_dynamics(q, qd, tau)', microseconds(
                lambda: model.forward_dynamics(q, qd, tau), number)),
        ]
    baseline = 'integral: dynamics(q, qd): M, C, g, passive'
    report('Reference arm, 3 sections (9 PMAs)', rows, baseline)
    fast = dict(rows)['CoG: dynamics(q, qd): M, C, g, passive']
    ratios = interleaved_ratios(lambda: integral.dynamics(q, qd), 200,
                                lambda: cog.dynamics(q, qd), 2000)
    print(f'  CoG evaluation {fast[0]:.2f} us (best {fast[1]:.2f}); integral/CoG speed ratio '
          f'{np.median(ratios):.1f} (median of {len(ratios)} interleaved pairs; quartiles '
          f'{np.percentile(ratios, 25):.1f} to {np.percentile(ratios, 75):.1f}); targets: '
          f'<= 20 us, >= 10')
    return cog


def interleaved_ratios(slow, slow_number, fast, fast_number):
    """
    Return per-round ratios of the time per call of `slow` to that of `fast`.

    Each round times both back to back, so load that comes and goes during the run falls on
    both sides of a ratio instead of on one model's whole series.
    """
    ratios = []
    for _ in range(REPEATS):
        slow_time = timeit.Timer(slow).timeit(slow_number) / slow_number
        fast_time = timeit.Timer(fast).timeit(fast_number) / fast_number
        ratios.append(slow_time / fast_time)
    return np.array(ratios)


def bench_growth():
    """Time the CoG evaluation for 1..8 sections and fit the growth exponent."""
    sections = np.arange(1, 9)
    times = []
    for n in sections:
        model = load_model(arm('continuum_cog', n))
        q, qd, _ = state(model.n)
        times.append(microseconds(lambda: model.dynamics(q, qd), 1000))
    print('\nCoG dynamics(q, qd) against the number of sections n  (us)')
    for n, (median, best) in zip(sections, times):
        print(f'  n = {n}: median {median:8.2f}   best {best:8.2f}')
    for k, name in enumerate(('median', 'best')):
        t = np.log([row[k] for row in times])
        p = np.polyfit(np.log(sections), t, 1)[0]
        tail = np.polyfit(np.log(sections[3:]), t[3:], 1)[0]
        print(f'  growth exponent of the {name} times: p = {p:.2f} over n = 1..8 '
              f'(n = 4..8 alone: {tail:.2f}); target <= 2.2, paper O(n^2)')


def bench_rk4(model):
    """Step the three-section CoG model with the simulator's RK4 and report the rate."""
    q, qd, _ = state(model.n)
    tau = model.gravity_vector(q)
    dt = 1e-4
    median, best = microseconds(lambda: rk4_step(model, q, qd, tau, dt), 1000)
    print(f'\nRK4 step of the 3-section CoG model (models.integrators.rk4_step, 4 forward '
          f'dynamics): median {median:.1f} us = {1e3 / median:.1f} kHz (best {best:.1f} us = '
          f'{1e3 / best:.1f} kHz); paper 9.5 kHz; target > 10 kHz')


def main():
    """Run the continuum benchmarks."""
    cog = bench_models()
    bench_growth()
    bench_rk4(cog)


if __name__ == '__main__':
    main()
