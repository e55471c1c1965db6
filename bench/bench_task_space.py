"""
Task-space tick against joint-space tick, in-process (us, median of interleaved rounds).

    python bench/bench_task_space.py

The three-section reference arm under `ControlLoop`, back to back, measured in one run, with
the controller settings of config/continuum_3section.yaml:
- joint space: `loop.tick` with its sinusoid reference;
- task space: the same settings with the `task` and the tip circle `reference` of
  config/continuum_task.yaml (path point, FK, IK from the previous solution, qd_d, qdd_d,
  then the same law);
each with the valve compensation of continuum_3section.yaml (which samples the reference
three times per tick) and without it; and the tip reference's
`sample` alone (one compiled call per tick on continuum arms).
Target: FK + IK <= 20 us median per tick (compiled kernels); the task tick close to
the joint tick.
"""

from pathlib import Path

from bench_continuum import microseconds
import numpy as np

from continuum_ctrl import load_model
from continuum_ctrl.control.loop import ControlLoop
from continuum_ctrl.control.settings import ControllerSettings
from continuum_ctrl.params import file_parameters
from continuum_ctrl.runtime.node_settings import ControllerNodeSettings

CONFIG = Path(__file__).resolve().parents[1] / 'config'
ROUNDS, CALLS, PERIOD = 5, 1000, 0.002


def active_loop(task, compensated):
    """Return a ControlLoop of continuum_3section.yaml, active at the mid-stroke pose."""
    tree, spec = file_parameters(CONFIG / 'continuum_3section.yaml', 'continuum_controller')
    _, tree = ControllerNodeSettings.split(tree)
    if task:
        tip, _ = file_parameters(CONFIG / 'continuum_task.yaml', 'continuum_controller')
        tree['task'], tree['reference'] = tip['task'], tip['reference']
    if not compensated:
        del tree['output']['time_constant'], tree['output']['delay']
    model = load_model(spec)
    loop = ControlLoop(model, ControllerSettings.parse(tree, model), PERIOD)
    loop.warm_up()
    q = np.full(model.n, 0.013)
    for _ in range(loop.settings.resume_count):
        loop.set_state(q, np.zeros(model.n), 0.0)
    loop.planner.step()                 # the tip circle's plan, installed by the next tick
    loop.tick(0.0)
    return loop


def ticker(loop):
    """Return a function that ticks `loop` at successive times (state kept fresh)."""
    clock = [0.0]
    q, qd = loop.q.copy(), np.zeros(loop.model.n)

    def tick():
        clock[0] += PERIOD
        loop.set_state(q, qd, clock[0])
        loop.tick(clock[0])
    return tick


def main():
    """Print the medians and the ratios task/joint."""
    functions = {}
    for compensated in (True, False):
        label = 'with' if compensated else 'without'
        joint, task = active_loop(False, compensated), active_loop(True, compensated)
        functions[f'joint-space tick, {label} valve compensation'] = ticker(joint)
        functions[f'task-space tick, {label} valve compensation'] = ticker(task)
    reference = task.reference.reference
    clock = [0.0]

    def sample():
        clock[0] += PERIOD
        reference.sample(clock[0])

    functions['tip reference sample (path, FK, IK, qd, qdd)'] = sample
    rounds = {name: [] for name in functions}
    for _ in range(ROUNDS):
        for name, function in functions.items():
            rounds[name].append(microseconds(function, CALLS)[0])
    print('\nContinuum reference arm, 3 sections, set_state + tick (us, median of round medians)')
    for name, values in rounds.items():
        print(f'  {name:<48} {np.median(values):8.1f}')
    for label in ('with', 'without'):
        ratio = (np.median(rounds[f'task-space tick, {label} valve compensation'])
                 / np.median(rounds[f'joint-space tick, {label} valve compensation']))
        print(f'  task / joint tick, {label} valve compensation: {ratio:.2f} x')


if __name__ == '__main__':
    main()
