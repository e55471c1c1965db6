"""
The simulator's engine as the tuner's plant: its step linearized by central differences.

    tick = engine_plant(plant, period)      # DiscretePlant of a sim.plant.Plant at rest

The model's plant (linear_loop.continuous_plant) has the model's states only. A MuJoCo disc
stack has every disc's, and modes the model lacks: it chatters at 25 Hz where the model's
loop is quiet. This plant is the engine as the simulator runs it (sim/plant.py): the valves
(the exact lag after the dead time), whose applied force at the middle of each step is held
over it (`Plant._valve_force`), then one engine step, linearized about the state the plant
rests in (the caller holds it at the pose with the controller) under its applied force. The
engine's full state (MuJoCo's qpos and qvel, the builtin's q and qd) is kept; ``(q, qd)``
are its outputs, carried as the first states. The mismatch is the plant's (`mismatch.*`):
one plant per error.
"""

import math

import numpy as np

from continuum_ctrl.params import ConfigError
from continuum_ctrl.tuning.linear_loop import DiscretePlant, STEPS


def _full_state(engine):
    """Return the engine's full state: MuJoCo's (qpos, qvel), else (q, qd)."""
    data = getattr(engine, 'data', None)
    if data is None:
        return np.concatenate([engine.q, engine.qd])
    return np.concatenate([data.qpos, data.qvel])


def _place(engine, x):
    """Put the engine in the full state `x`; return its ``(q, qd)`` there."""
    data = getattr(engine, 'data', None)
    if data is None:
        n = engine.q.size
        engine.q, engine.qd = x[:n].copy(), x[n:].copy()
        return np.concatenate([engine.q, engine.qd])
    import mujoco
    nq = engine.model.nq
    data.qpos[:], data.qvel[:] = x[:nq], x[nq:]
    data.qacc_warmstart[:] = 0.0
    mujoco.mj_step1(engine.model, data)
    return np.concatenate(engine.state())


def _lag_at(time_constant, split, at):
    """
    Return ``(a, old, new)``: the applied force at `at` s into a tick, ``a p + old u + new w``.

    From `p` at the tick, under input `u` until `split` s, then `w`.
    """
    def decay(span):
        return math.exp(-span / time_constant) if time_constant > 0.0 else 0.0
    if at <= split:
        return decay(at), 1.0 - decay(at), 0.0
    return decay(at), decay(at - split) * (1.0 - decay(split)), 1.0 - decay(at - split)


def engine_plant(plant, period):
    """
    Return the DiscretePlant of `plant`'s engine (a sim.plant.Plant) where it rests now.

    The plant rests at the pose under its valves' applied force (an upright arm topples
    without feedback: the caller holds it there with the controller first); its engine
    steps by `period` s, which must be the simulator's `step`.
    """
    settings, engine = plant.settings, plant.engine
    if abs(settings.step - period) > 1e-12:
        raise ConfigError('step', f"the tuner's engine plant steps by the control period "
                                  f'{period:g} s, got {settings.step:g} s')
    if getattr(engine, 'data', None) is not None and engine.model.nq != engine.model.nv:
        raise ConfigError('engine', 'the tuner linearizes engines without free or ball joints')
    force = np.array(plant.effort(plant.t), dtype=float)
    x0, n = _full_state(engine), force.size

    def step(x, f):
        _place(engine, x)
        engine.step(f, period)
        return _full_state(engine)
    eye_x, eye_f = np.eye(x0.size), np.eye(n)
    h, g = STEPS[0] * 0.1, STEPS[2]
    Phi = np.array([(step(x0 + h * e, force) - step(x0 - h * e, force)) / (2 * h)
                    for e in eye_x]).T
    Gamma = np.array([(step(x0, force + g * e) - step(x0, force - g * e)) / (2 * g)
                      for e in eye_f]).T
    C = np.array([(_place(engine, x0 + h * e) - _place(engine, x0 - h * e)) / (2 * h)
                  for e in eye_x]).T
    time_constant, delay = settings.actuator[:2]
    lag = int(math.floor(delay / period + 1e-9))
    split = min(max(delay - lag * period, 0.0), period)
    a, w_old, w_new = _lag_at(time_constant, split, period)
    middle = _lag_at(time_constant, split, 0.5 * period)
    # states: (q, qd) outputs, the engine's full state, the applied force
    size = 2 * n + x0.size + n
    out, full, applied = slice(0, 2 * n), slice(2 * n, 2 * n + x0.size), slice(size - n, size)
    P, old, new = np.zeros((size, size)), np.zeros((size, n)), np.zeros((size, n))
    P[applied, applied] = a * eye_f
    old[applied], new[applied] = w_old * eye_f, w_new * eye_f
    P[full, full] = Phi
    P[full, applied] = middle[0] * Gamma
    old[full], new[full] = middle[1] * Gamma, middle[2] * Gamma
    P[out], old[out], new[out] = C @ P[full], C @ old[full], C @ new[full]
    return DiscretePlant(P, old, new, lag)
