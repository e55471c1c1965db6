"""
Control-cycle pieces: microseconds per call, median of many repeats, ratio to ``pin.rnea``.

    python bench/bench_control.py

One controller cycle samples a reference, runs the computed-torque law and, in pressure mode,
maps forces to pressures; one simulator step integrates the plant. Each is timed on the Panda
(7 joints) against Pinocchio's own `rnea` called from Python, measured in the same run.
"""

from pathlib import Path

from bench_models import microseconds, report, state
import numpy as np
import pinocchio as pin

from continuum_ctrl import load_model
from continuum_ctrl.control import ComputedTorqueLaw
from continuum_ctrl.actuation.pressure_map import ActuationMap
from continuum_ctrl.control.references import Hold, MinimumJerk, Sinusoid, Waypoints
from continuum_ctrl.models.integrators import rk4_step, semi_implicit_euler_step

CONFIG = Path(__file__).resolve().parents[1] / 'config'


def main():
    """Time each piece of a control cycle and of a simulator step."""
    model = load_model(CONFIG / 'panda.yaml')
    n = model.n
    q, qd, qdd, q_des, qd_des, qdd_des = state(n)
    rng = np.random.default_rng(1)
    coupling = rng.normal(size=(n, n))
    diagonal = ComputedTorqueLaw(model, np.full(n, 100.0), np.full(n, 20.0))
    matrix = ComputedTorqueLaw(model, coupling @ coupling.T + n * np.eye(n), np.full(n, 20.0))
    times = np.arange(10.0)
    cubic = Waypoints(times, rng.uniform(-1.0, 1.0, (10, n)))
    quintic = Waypoints(times, *rng.uniform(-1.0, 1.0, (3, 10, n)))
    references = [('Hold', Hold(q_des)), ('Sinusoid', Sinusoid(q_des, 0.3, 0.5)),
                  ('MinimumJerk', MinimumJerk(q_des, q, 0.0, 2.0)),
                  ('Waypoints, cubic spline', cubic), ('Waypoints, quintic Hermite', quintic)]
    pmas = ActuationMap(n, 9.5e-5, 90e3, 0.0, 500e3)
    tau = model.inverse_dynamics(q, qd, qdd)
    rows = [
        ('pin.rnea(q, qd, qdd) (baseline)',
         microseconds(lambda: pin.rnea(model.model, model.data, q, qd, qdd))),
        ('law(...), diagonal gains', microseconds(
            lambda: diagonal(q, qd, q_des, qd_des, qdd_des))),
        ('law(...), matrix Kp', microseconds(lambda: matrix(q, qd, q_des, qd_des, qdd_des))),
        ('law.acceleration(...) alone', microseconds(
            lambda: diagonal.acceleration(q, qd, q_des, qd_des, qdd_des))),
    ]
    rows += [(f'{name}.sample(t)', microseconds(lambda r=reference: r.sample(4.3)))
             for name, reference in references]
    rows += [
        ('ActuationMap.pressure(tau)', microseconds(lambda: pmas.pressure(tau))),
        ('ActuationMap.clamp_effort(tau, 30)', microseconds(
            lambda: pmas.clamp_effort(tau, 30.0))),
        ('rk4_step (4 x aba)', microseconds(lambda: rk4_step(model, q, qd, tau, 1e-3), 500)),
        ('semi_implicit_euler_step (1 x aba)', microseconds(
            lambda: semi_implicit_euler_step(model, q, qd, tau, 1e-3), 500)),
    ]
    report('Panda, 7 joints: one control cycle and one simulator step', rows,
           'pin.rnea(q, qd, qdd) (baseline)')


if __name__ == '__main__':
    main()
