"""
Model evaluation cost: microseconds per call, median of many repeats, with ratios.

    python bench/bench_models.py

Panda (Pinocchio): M, C, g separately, inverse dynamics and the computed-torque law against
Pinocchio's own `rnea` called from Python (the baseline). Planar 2R (symbolic): the compiled
functions against a naive `sympy.lambdify` of the unsimplified M, C and g.
"""

from pathlib import Path
import statistics
import timeit

import numpy as np
import pinocchio as pin
import sympy as sp

from continuum_ctrl import load_model
from continuum_ctrl.control import ComputedTorqueLaw, computed_torque

CONFIG = Path(__file__).resolve().parents[1] / 'config'
REPEATS = 25


def microseconds(function, number=2000):
    """Return the median over `REPEATS` runs of the time per call of `function`, in us."""
    function()
    runs = timeit.Timer(function).repeat(repeat=REPEATS, number=number)
    return statistics.median(runs) / number * 1e6


def report(title, rows, baseline):
    """Print `rows` (label, us) with their ratio to the row labelled `baseline`."""
    reference = dict(rows)[baseline]
    print(f'\n{title}  (median of {REPEATS} runs; ratio to {baseline})')
    for label, us in rows:
        print(f'  {label:<44} {us:8.2f} us   x{us / reference:5.2f}')


def state(n, seed=0):
    """Return a fixed random state and reference of size n."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, n) for _ in range(6)]


def bench_panda():
    """Time the Panda's quantities against a bare `pin.rnea`."""
    model = load_model(CONFIG / 'panda.yaml')
    q, qd, qdd, q_des, qd_des, qdd_des = state(model.n)
    kp, kd = np.full(model.n, 100.0), np.full(model.n, 20.0)
    law = ComputedTorqueLaw(model, kp, kd)
    pmodel, pdata = model.model, model.data
    rows = [
        ('pin.rnea(q, qd, qdd) (baseline)', microseconds(
            lambda: pin.rnea(pmodel, pdata, q, qd, qdd))),
        ('mass_matrix(q)', microseconds(lambda: model.mass_matrix(q))),
        ('coriolis_matrix(q, qd)', microseconds(lambda: model.coriolis_matrix(q, qd))),
        ('gravity_vector(q)', microseconds(lambda: model.gravity_vector(q))),
        ('bias_forces(q, qd)', microseconds(lambda: model.bias_forces(q, qd))),
        ('inverse_dynamics(q, qd, qdd)', microseconds(
            lambda: model.inverse_dynamics(q, qd, qdd))),
        ('forward_dynamics(q, qd, tau)', microseconds(
            lambda: model.forward_dynamics(q, qd, qdd))),
        ('M v + C qd + g from the three matrices', microseconds(
            lambda: model.mass_matrix(q) @ qdd + model.coriolis_matrix(q, qd) @ qd
            + model.gravity_vector(q))),
        ('ComputedTorqueLaw(...)(q, qd, refs)', microseconds(
            lambda: law(q, qd, q_des, qd_des, qdd_des))),
        ('computed_torque(model, ..., kp, kd)', microseconds(
            lambda: computed_torque(model, q, qd, q_des, qd_des, qdd_des, kp, kd), 500)),
    ]
    report('Panda, 7 joints, Pinocchio', rows, 'pin.rnea(q, qd, qdd) (baseline)')


def bench_planar():
    """Time the compiled 2R symbolic model against naive lambdify of M, C, g."""
    model = load_model(CONFIG / 'planar_2r.yaml')
    d = model.derivation
    naive_M = sp.lambdify([d.coordinates], d.numeric(d.M), 'numpy')
    naive_C = sp.lambdify([d.coordinates, d.velocities], d.numeric(d.C), 'numpy')
    naive_g = sp.lambdify([d.coordinates], d.numeric(d.g), 'numpy')

    def naive_inverse_dynamics(q, qd, qdd):
        return naive_M(q) @ qdd + naive_C(q, qd) @ qd + naive_g(q).ravel()

    q, qd, qdd, q_des, qd_des, qdd_des = state(2, seed=1)
    assert np.allclose(naive_inverse_dynamics(q, qd, qdd), model.inverse_dynamics(q, qd, qdd))
    law = ComputedTorqueLaw(model, [50.0, 50.0], [10.0, 10.0])

    def naive_law(q, qd, q_des, qd_des, qdd_des):
        v = qdd_des - 10.0 * (qd - qd_des) - 50.0 * (q - q_des)
        return naive_inverse_dynamics(q, qd, v)

    pairs = [
        ('M(q)', lambda: model.mass_matrix(q), lambda: naive_M(q)),
        ('C(q, qd)', lambda: model.coriolis_matrix(q, qd), lambda: naive_C(q, qd)),
        ('g(q)', lambda: model.gravity_vector(q), lambda: naive_g(q)),
        ('inverse dynamics M qdd + C qd + g', lambda: model.inverse_dynamics(q, qd, qdd),
         lambda: naive_inverse_dynamics(q, qd, qdd)),
        ('computed-torque law', lambda: law(q, qd, q_des, qd_des, qdd_des),
         lambda: naive_law(q, qd, q_des, qd_des, qdd_des)),
    ]
    print(f'\nPlanar 2R, symbolic: compiled (CSE, math) vs naive lambdify '
          f'(median of {REPEATS} runs)')
    print(f'  {"quantity":<36} {"compiled":>10} {"naive":>10}   speed-up')
    for label, compiled, naive in pairs:
        fast, slow = microseconds(compiled), microseconds(naive)
        print(f'  {label:<36} {fast:7.2f} us {slow:7.2f} us   x{slow / fast:5.2f}')


if __name__ == '__main__':
    bench_panda()
    bench_planar()
