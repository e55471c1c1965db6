"""
Embedded closed loop without ROS: a plant model driven by a computed-torque law.

    log = simulate(plant, law, reference, q0, qd0, duration=5.0, dt=1e-3, control_period=1e-3)

The law (a ComputedTorqueLaw, possibly on a different model than the plant) runs at control
ticks every `control_period` seconds and its output is held in between (zero-order hold), or,
with ``control_period=None``, inside every integrator stage (continuous-time control).
"""

from dataclasses import dataclass

import numpy as np

from continuum_ctrl.config import ConfigError
from continuum_ctrl.sim.integrators import INTEGRATORS


@dataclass
class ClosedLoopLog:
    """Samples at every integration step: t (N,), q, qd, q_des, qd_des, tau (N, n), SI units."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    q_des: np.ndarray
    qd_des: np.ndarray
    tau: np.ndarray

    @property
    def error(self):
        """Return the tracking error ``q - q_des``, (N, n)."""
        return self.q - self.q_des

    def rms_error(self):
        """Return the root-mean-square tracking error per joint over the run, (n,)."""
        return np.sqrt(np.mean(self.error ** 2, axis=0))

    def max_error(self):
        """Return the largest absolute tracking error per joint over the run, (n,)."""
        return np.max(np.abs(self.error), axis=0)


class SimulationDiverged(RuntimeError):
    """The closed loop left the model's valid states; `log` holds the samples up to then."""

    def __init__(self, t, problem, log):
        self.t = t
        self.log = log
        super().__init__(f'closed loop diverged at t = {t:.4f} s: {problem}')


def _ticks(period, dt, key):
    ratio = period / dt
    ticks = int(round(ratio))
    if ticks < 1 or abs(ratio - ticks) > 1e-9 * ratio:
        raise ConfigError(key, f'must be a positive whole multiple of the step {dt} s, '
                               f'got {period} s')
    return ticks


def simulate(plant, law, reference, q0, qd0, duration, dt, control_period=None,
             integrator='rk4'):
    """
    Run the closed loop from ``(q0, qd0)`` at t = 0 for `duration` seconds; return a log.

    `plant`: the DynamicsModel integrated; `law`: ``law(q, qd, q_des, qd_des, qdd_des) -> tau``;
    `reference`: ``reference.sample(t) -> (q_des, qd_des, qdd_des)``; `dt`: integration step
    (s); `control_period`: a whole multiple of `dt` (s), or None for continuous control;
    `integrator`: a name in INTEGRATORS. The log's tau is the force applied from each sample on.
    Raises SimulationDiverged when the state turns non-finite or the model rejects it.
    """
    if integrator not in INTEGRATORS:
        raise ConfigError('sim.integrator', f'must be one of {sorted(INTEGRATORS)}, '
                                            f'got {integrator!r}')
    if not dt > 0.0:
        raise ConfigError('sim.dt', f'must be > 0, got {dt}')
    step = INTEGRATORS[integrator]
    steps = _ticks(duration, dt, 'sim.duration')
    ticks = None if control_period is None else _ticks(control_period, dt, 'control.period')
    n = plant.n
    log = ClosedLoopLog(dt * np.arange(steps + 1), *(np.zeros((steps + 1, n)) for _ in range(5)))
    q = np.array(q0, dtype=float)
    qd = np.array(qd0, dtype=float)

    def control(t, q, qd):
        return law(q, qd, *reference.sample(t))

    logged = 0
    for k, t in enumerate(log.t):
        q_des, qd_des, qdd_des = reference.sample(t)
        try:
            if ticks is None or k % ticks == 0:
                tau = np.array(law(q, qd, q_des, qd_des, qdd_des))
                if not np.all(np.isfinite(tau)):
                    raise FloatingPointError('the control law gave a non-finite force')
            log.q[k], log.qd[k], log.q_des[k], log.qd_des[k] = q, qd, q_des, qd_des
            log.tau[k] = tau
            logged = k + 1
            if k < steps:
                q, qd = step(plant, q, qd, control if ticks is None else tau, dt, t)
                if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
                    raise FloatingPointError('the state is not finite')
        except (ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
            part = ClosedLoopLog(*(array[:logged] for array in (
                log.t, log.q, log.qd, log.q_des, log.qd_des, log.tau)))
            raise SimulationDiverged(t, exc, part) from exc
    return log


def run_loop(plant, loop, duration):
    """
    Run the controller's and the simulator's parts in one process on one clock, without ROS.

    `plant`: a sim.plant.Plant; `loop`: a control.loop.ControlLoop. Every control period the
    loop takes the plant's measurement and its command goes to the plant at once, which then
    integrates up to the next tick: the node closed loop without transport latency. Returns
    ``(t, q, q_des, command)``: tick times (s) and, per tick, the measured and desired
    positions (model order) and the command sent (joints order).
    """
    period = loop.settings.period
    ticks = int(round(duration / period))
    t = period * np.arange(ticks)
    q, q_des = np.zeros((ticks, plant.model.n)), np.zeros((ticks, plant.model.n))
    command = np.zeros((ticks, plant.model.n))
    plant.advance(0.0)
    for k, now in enumerate(t):
        loop.set_state(*plant.measure(), now)
        command[k] = loop.tick(now)
        q[k], q_des[k] = loop.q, loop.q_des
        plant.command(command[k], now)
        plant.advance(now + period + 1e-9)
    return t, q, q_des, command
