"""
Embedded closed loop without ROS: a plant model driven by a computed-torque law.

    log = simulate(plant, law, reference, q0, qd0, duration=5.0, dt=1e-3, control_period=1e-3)

The law (a ComputedTorqueLaw, possibly on a different model than the plant) runs at control
ticks every `control_period` seconds and its output is held in between (zero-order hold), or,
with ``control_period=None``, inside every integrator stage (continuous-time control).
"""

from dataclasses import dataclass
from typing import Optional

import numpy as np

from continuum_ctrl.control.loop import ACTIVE
from continuum_ctrl.models.integrators import INTEGRATORS
from continuum_ctrl.params import ConfigError
from continuum_ctrl.runtime.controller_runtime import ControllerRuntime
from continuum_ctrl.sim.tip_capture import TipCapture


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
    `integrator`: a name in INTEGRATORS, or a step function of their signature (another
    engine's, such as a MuJoCo arm's). The log's tau is the force applied from each sample on.
    Raises SimulationDiverged when the state turns non-finite or the model rejects it.
    """
    if not callable(integrator) and integrator not in INTEGRATORS:
        raise ConfigError('sim.integrator', f'must be one of {sorted(INTEGRATORS)}, '
                                            f'got {integrator!r}')
    if not dt > 0.0:
        raise ConfigError('sim.dt', f'must be > 0, got {dt}')
    step = integrator if callable(integrator) else INTEGRATORS[integrator]
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


@dataclass
class NodeLoopLog:
    """
    One row per control tick of `simulate_nodes`, SI units.

    t (N,); q (the plant's true state), measured (what the loop got: noise and delay
    included), q_des, effort (N, n) in model order; command (N, n) in joints order; active (N,)
    True where the loop controlled.
    """

    t: np.ndarray
    q: np.ndarray
    measured: np.ndarray
    q_des: np.ndarray
    effort: np.ndarray
    command: np.ndarray
    active: np.ndarray
    tip: Optional[np.ndarray] = None


def simulate_nodes(runtime, plant, duration, after_tick=None, deaf=()):
    """
    Run the controller's runtime against the simulator's plant tick by tick, as the nodes do.

    `runtime`: a runtime.ControllerRuntime, the node's (or a control.loop.ControlLoop, run in
    one with the default options); `plant`: a sim.plant.Plant (it rests until the first
    command, then integrates in fixed steps). Its sensor publishes every
    ``1 / publish_rate_hz`` s, as the simulator node does (sim/sensor.py: noise, quantisation,
    delay, stamps, lost samples and jitter): the plant is advanced to each publication, and the
    loop receives each sample at its publication time (`Sample.published`, due time plus its
    jitter hold) with its header stamp, in order, all those that arrived by a tick before it
    (``runtime.post_state(q, qd, published, stamp)``; `qd` None without `sensor.velocity`).
    At each tick ``t_k = k * period`` its command drives the plant until the next tick; a
    plan the loop asked for (a tip reference's IK) is made after the tick, as the node's
    worker would between ticks, and the next tick installs it. With `mocap.rate_hz` the
    plant's tip is captured (sim/tip_capture.py) and each sample reaches the loop at its
    publication (``runtime.post_tip``), as the simulator node publishes it. Returns a
    NodeLoopLog of `duration` seconds; `measured` holds the last sample the loop received by
    each tick, `tip` (with a capture) the true tip at each tick. `after_tick(k, t)`: called
    after each tick (and its plan), before the plant moves on: a scenario's inputs (a tip
    target at a time) and what it logs. `deaf`: windows ``(start, end)`` s of a command topic
    not yet matched or stalled: the commands of the ticks in ``[start, end)`` never reach the
    plant (it rests until the first command, holds the last one, and vents after
    `command_timeout`, as the simulator node does).
    """
    if not isinstance(runtime, ControllerRuntime):
        runtime = ControllerRuntime(runtime)
    loop = runtime.loop
    period = loop.period
    ticks = int(round(duration / period))
    n = plant.model.n
    log = NodeLoopLog(period * np.arange(ticks), *(np.zeros((ticks, n)) for _ in range(5)),
                      np.zeros(ticks, dtype=bool))
    half_step = 0.5 * plant.settings.step          # no step lost to rounding
    every = 1.0 / plant.settings.publish_rate_hz
    sent = []                                       # samples on their way, in arrival order
    count = 0                                       # publications so far
    capture = TipCapture(plant.settings.mocap, plant) if plant.settings.mocap.rate_hz else None
    if capture is not None:
        log.tip = np.zeros((ticks, 3))

    def publish_until(end):
        nonlocal count
        while count * every <= end + half_step:
            due = count * every
            plant.advance(due + half_step if count else due)    # the clock starts at 0
            if capture is not None:
                capture.take()
            sample = plant.publish(due)
            if sample is not None:
                sent.append(sample)
            count += 1

    publish_until(0.0)
    received = plant.q
    for k, t in enumerate(log.t):
        while sent and sent[0].published <= t:
            sample = sent.pop(0)
            runtime.post_state(sample.q, sample.qd, sample.published, sample.stamp)
            received = sample.q
        if capture is not None:
            for tip in capture.due(t):
                runtime.post_tip(tip.pose[:3, 3], tip.stamp, tip.published)
            log.tip[k] = capture.measure()[:3, 3]
        log.measured[k] = received
        log.command[k] = runtime.tick(t)
        if not any(start <= t < end for start, end in deaf):
            plant.command(log.command[k], t)
        runtime.step()
        log.q[k], log.q_des[k], log.effort[k] = plant.q, loop.q_des, loop.effort
        log.active[k] = loop.status == ACTIVE
        if after_tick is not None:
            after_tick(k, t)
        publish_until(t + period)
        plant.advance(t + period + half_step)
    return log
