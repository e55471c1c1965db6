"""
Kinematics cost: microseconds per call (median and best of many repeats).

    python bench/bench_kinematics.py

The tip frame of the three-section reference arm (compiled continuum kernels) and the Panda's
hand (Pinocchio): pose, Jacobian, both from one evaluation, and FK plus one IK step from the
previous solution towards a target 1 mm away, the per-tick work of a task-space controller
(ik.step is compiled for continuum models; ik.numpy_step is the same step in NumPy).
Target (issue 12): FK + IK step <= 20 us median for the three-section arm.
"""

from pathlib import Path

from bench_continuum import microseconds
import numpy as np

from continuum_ctrl import load_model
from continuum_ctrl.control.ik import InverseKinematics

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
