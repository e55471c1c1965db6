"""
Fixed-step integrators of ``M(q) qdd + C qd + passive + g = tau`` for any DynamicsModel.

Each step function is ``step(model, q, qd, tau, dt, t=0.0) -> (q_next, qd_next)``. `tau` is an
(n,) generalized force held over the step (a zero-order hold), or a callable ``tau(t, q, qd)``
evaluated wherever the method evaluates the dynamics (continuous-time control).

- `rk4_step`: classical Runge-Kutta, global error O(dt^4), four forward-dynamics calls.
- `semi_implicit_euler_step`: symplectic (semi-implicit) Euler, velocity first, then position
  with the new velocity; global error O(dt), one forward-dynamics call. For a conservative
  system it is symplectic: energy errors stay bounded instead of drifting.
- `implicit_damping_euler_step`: first order, linearly implicit in the damping; stable at any
  step for the stiff damping of PMA arms, where RK4 needs steps below about 0.3 ms.
"""

import numpy as np


def _force(tau, t, q, qd):
    return tau(t, q, qd) if callable(tau) else tau


def rk4_step(model, q, qd, tau, dt, t=0.0):
    """Advance ``(q, qd)`` by `dt` seconds with classical fourth-order Runge-Kutta."""
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    half = 0.5 * dt
    a1 = model.forward_dynamics(q, qd, _force(tau, t, q, qd))
    q2, qd2 = q + half * qd, qd + half * a1
    a2 = model.forward_dynamics(q2, qd2, _force(tau, t + half, q2, qd2))
    q3, qd3 = q + half * qd2, qd + half * a2
    a3 = model.forward_dynamics(q3, qd3, _force(tau, t + half, q3, qd3))
    q4, qd4 = q + dt * qd3, qd + dt * a3
    a4 = model.forward_dynamics(q4, qd4, _force(tau, t + dt, q4, qd4))
    sixth = dt / 6.0
    return (q + sixth * (qd + 2.0 * (qd2 + qd3) + qd4),
            qd + sixth * (a1 + 2.0 * (a2 + a3) + a4))


def semi_implicit_euler_step(model, q, qd, tau, dt, t=0.0):
    """Advance ``(q, qd)`` by `dt`: ``qd += dt * qdd(q, qd)``, then ``q += dt * qd`` (new qd)."""
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    qd_next = qd + dt * model.forward_dynamics(q, qd, _force(tau, t, q, qd))
    return q + dt * qd_next, qd_next


def implicit_damping_euler_step(model, q, qd, tau, dt, t=0.0):
    """
    Advance ``(q, qd)`` by `dt` with the damping taken implicitly, the rest explicitly.

    ``(M + dt D)(qd' - qd) = dt (tau - C qd - passive - g)``, then ``q' = q + dt qd'``
    (linearly implicit Euler on ``D qd``; first order). PMA arms are stiff through their
    damping: with 30 N s/m on a few grams of generalized inertia, ``M^-1 D`` reaches ~9e3 1/s,
    so RK4 would need steps below 0.3 ms; this step is stable for any damping. One model
    evaluation (``model.dynamics``) per step.
    """
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    M, _, bias = model.dynamics(q, qd)
    M += dt * model.damping_matrix(q)
    force = np.asarray(_force(tau, t, q, qd), dtype=float)     # held over the step
    qd_next = qd + np.linalg.solve(M, dt * (force - bias))
    return q + dt * qd_next, qd_next


def implicit_damping_euler_stepper(model):
    """
    Return ``steps(q, qd, forces, dt, hold=1, correction=None) -> (q, qd)``.

    Implicit damping Euler steps, one of `dt` s per row of `forces` (k, n), each held over
    its step. ``M``, ``g`` and ``C qd`` are evaluated every `hold` steps and held in between;
    the passive forces, the fast part of a PMA arm, every step. ``hold=1``:
    `implicit_damping_euler_step`s in a row. `correction` ``(at, gain, y, kept, low, high,
    gate)``:
    before step `at` (-1: none) the state takes ``(q, qd) += gain (y - q)`` (gain (k n, n),
    positions y) and is copied into the first rows of `kept` (k, n), whose further rows take
    the further rows of the gain's correction from the coordinates whose `y` lies within
    ``(low, high)`` only, clipped to ``[-gate, gate]``, as an observer's update
    (control/observer.py; the compiled
    `correct` of models/continuum/cog.py says why). One
    compiled call where the model offers `compiled_damped_steps`, else a Python loop.
    """
    compiled = model.compiled_damped_steps()
    if compiled is None:
        def steps(q, qd, forces, dt, hold=1, correction=None):
            q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
            at, gain, y, kept, low, high, gate = correction or NO_CORRECTION
            for k, force in enumerate(forces):
                if k == at:
                    n = len(q)
                    update = gain[:2 * n] @ (y - q)
                    off_stops = np.where((low < y) & (y < high), np.clip(y - q, -gate, gate),
                                         0.0)
                    kept[2:] += (gain[2 * n:] @ off_stops).reshape(-1, n)
                    q, qd = q + update[:n], qd + update[n:]
                    kept[:2] = q, qd
                if k % hold == 0:
                    M, _, bias = model.dynamics(q, qd)
                    M += dt * model.damping_matrix(q)
                    bias = bias - model.passive_forces(q, qd)          # C qd + g
                rest = force - bias - model.passive_forces(q, qd)
                qd = qd + np.linalg.solve(M, dt * rest)
                q = q + dt * qd
            return q, qd
        return steps
    out = np.zeros((2, model.n))
    none = (-1, np.zeros((2 * model.n, model.n)), np.zeros(model.n), np.zeros((2, model.n)),
            np.full(model.n, -np.inf), np.full(model.n, np.inf), np.full(model.n, np.inf))

    def compiled_steps(q, qd, forces, dt, hold=1, correction=None):
        compiled(np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(qd, dtype=float),
                 np.ascontiguousarray(forces, dtype=float), float(dt), int(hold), out,
                 *(correction or none))
        return out[0].copy(), out[1].copy()
    return compiled_steps


#: `correction` of no step (the stepper's default)
NO_CORRECTION = (-1, None, None, None, None, None, None)


#: integrator name (as in parameters) -> step function
INTEGRATORS = {
    'rk4': rk4_step,
    'semi_implicit_euler': semi_implicit_euler_step,
    'implicit_damping_euler': implicit_damping_euler_step,
}
