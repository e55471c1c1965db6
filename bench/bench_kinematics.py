"""
Kinematics cost: microseconds per call (median and best of many repeats).

    python bench/bench_kinematics.py

The tip frame of the three-section reference arm (compiled continuum kernels) and the Panda's
hand (Pinocchio): pose, Jacobian, both from one evaluation, and FK plus one IK step from the
previous solution towards a target 1 mm away, the per-tick work of a task-space controller
(ik.step is compiled for continuum models; ik.numpy_step is the same step in NumPy), and for
the continuum arm the whole task-space sample of a tick (`TaskReference.sample` on a tip
circle: path point, FK, Newton IK from the previous solution, qd_d, qdd_d with the exact Jdot,
one compiled call). Target: FK + IK <= 20 us median for the three-section arm.
"""

from pathlib import Path

from bench_continuum import microseconds
import numpy as np

from continuum_ctrl import load_model
from continuum_ctrl.control.ik import InverseKinematics
from continuum_ctrl.control.task_space import TaskSettings, TaskSpace

CONFIG = Path(__file__).resolve().parents[1] / 'config'


def bench(title, model, frame, number=2000):
    """Print the kinematics costs of `frame` of `model` at a fixed random pose."""
    ik = InverseKinematics(model, frame)
    rng = np.random.default_rng(0)
    q = rng.uniform(np.maximum(ik.lower, -2.0), np.minimum(ik.upper, 2.0))
    target = model.frame_pose(q, frame)[:3, 3] + 1e-3

    def tick():
        model.frame_pose(q, frame)
        ik.step(q, target)

    rows = [('frame_pose(q, frame)', microseconds(lambda: model.frame_pose(q, frame), number)),
            ('frame_jacobian(q, frame)', microseconds(
                lambda: model.frame_jacobian(q, frame), number)),
            ('frame_kinematics(q, frame): both', microseconds(
                lambda: model.frame_kinematics(q, frame), number)),
            ('IK step (ik.step)', microseconds(lambda: ik.step(q, target), number)),
            ('IK step in NumPy (ik.numpy_step)', microseconds(
                lambda: ik.numpy_step(q, target), number)),
            ('FK + IK step, one tick', microseconds(tick, number))]
    task = TaskSpace(model, TaskSettings(frame=frame))
    if task.compiled_step is not None:
        reference = task.circle(np.clip(q, ik.lower, ik.upper), 0.01, [0.0, 0.0, 1.0], 0.2)
        clock = [0.0]

        def sample():
            clock[0] += 0.002
            reference.sample(clock[0])

        rows.append(('task sample: path + FK + IK + qd, qdd', microseconds(sample, number)))
    print(f'\n{title}, frame {frame}  (us, median and best)')
    for label, (median, best) in rows:
        print(f'  {label:<36} {median:8.2f}   (best {best:8.2f})')


def main():
    """Run the kinematics benchmarks."""
    bench('Continuum reference arm, 3 sections', load_model(CONFIG / 'continuum_3section.yaml'),
          'section3_tip')
    bench('Panda (Pinocchio)', load_model(CONFIG / 'panda.yaml'), 'panda_hand')
    print('\ntarget: FK + IK step <= 20 us median for the three-section arm')


if __name__ == '__main__':
    main()
