"""
Task-space tick against joint-space tick, in-process (us, median of interleaved rounds).

    python bench/bench_task_space.py

The three-section reference arm under `ControlLoop`, back to back, measured in one run:
- joint space: `loop.tick` with the shipped sinusoid reference (config/continuum_3section.yaml);
- task space: `loop.tick` with the tip circle of config/continuum_task.yaml (FK, IK from the
  previous solution, qd_d, qdd_d, then the same law);
- the tip reference's `sample` alone (FK + IK + velocity + acceleration per tick).
Target (issue 12): FK + IK <= 20 us median per tick (compiled kernels).
"""

from pathlib import Path

from bench_continuum import microseconds
import numpy as np

from continuum_ctrl import load_model
from continuum_ctrl.control.loop import ControlLoop
from continuum_ctrl.control.settings import ControllerSettings
from continuum_ctrl.params import file_parameters
from continuum_ctrl.ros.node_settings import ControllerNodeSettings

CONFIG = Path(__file__).resolve().parents[1] / 'config'
ROUNDS, CALLS, PERIOD = 5, 1000, 0.002


def active_loop(name):
    """Return a ControlLoop of the config `name`, active at the mid-stroke pose."""
    tree, spec = file_parameters(CONFIG / name, 'continuum_controller')
    _, tree = ControllerNodeSettings.split(tree)
    model = load_model(spec)
    loop = ControlLoop(model, ControllerSettings.parse(tree, model), PERIOD)
    loop.warm_up()
    q = np.full(model.n, 0.013)
    for _ in range(loop.settings.resume_count):
        loop.set_state(q, np.zeros(model.n), 0.0)
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
    """Print the medians and the ratio task/joint."""
    joint, task = active_loop('continuum_3section.yaml'), active_loop('continuum_task.yaml')
    reference = task.reference.reference
    clock = [0.0]

    def sample():
        clock[0] += PERIOD
        reference.sample(clock[0])

    functions = {'joint-space tick (set_state + tick)': ticker(joint),
                 'task-space tick (set_state + tick)': ticker(task),
                 'tip reference sample (FK + IK + qd, qdd)': sample}
    rounds = {name: [] for name in functions}
    for _ in range(ROUNDS):
        for name, function in functions.items():
            rounds[name].append(microseconds(function, CALLS)[0])
    print('\nContinuum reference arm, 3 sections (us, median of round medians)')
    for name, values in rounds.items():
        print(f'  {name:<44} {np.median(values):8.1f}')
    ratio = np.median(rounds['task-space tick (set_state + tick)']) / np.median(
        rounds['joint-space tick (set_state + tick)'])
    print(f'  task / joint tick: {ratio:.2f} x')


if __name__ == '__main__':
    main()
