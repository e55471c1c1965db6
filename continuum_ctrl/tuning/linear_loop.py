"""
The controller's closed loop linearized about one pose: a discrete-time state space.

    pose = Pose.of(model, sample)                       # the reference's (q_d, qd_d, qdd_d)
    control = Controller(model, actuation, gains, compensation, period, age)
    loop = LoopSystem.build(pose, control, PlantError(), LoopOptions(period, valves))
    loop.A, loop.Bv, loop.K    # X' = A X + Bv v, u = K X: the loop broken at the plant input
    loop.poles(k)              # the closed loop's (v = k u), on its FoldedLoop

Everything is a perturbation about the reference's sample frozen in time, in force units (N,
model order): `u` the PMA forces commanded, `v` what the plant's valves are fed (the loop
closes with ``v = u``; a gain ``k`` there, ``v = k u``, is a PMA area error). One state per
control tick of `period` s, taken just before the tick:

- the plant: ``M* e'' + D* e' + K* e = f`` at the sample (the model's M, the Jacobians of its
  passive forces and of the rest of its inverse dynamics, scaled by PlantError); `f` is the
  valves' applied force (a first-order lag behind the command, held from its tick on, after a
  dead time), optionally through an unmodelled mode (`Mode`, per PMA). Exact: the continuous
  part is integrated by matrix exponentials over the tick, split where the delayed command
  switches (the dead time need not be a whole number of ticks);
- the measurement: the plant's ``(e, e')`` `measurement_delay` ticks old; its stamp known
  (`stamped`, as the nodes pass it on: the prediction then runs from it) or not;
- the state estimate (`estimator`): ControlLoop.set_state's velocity path as one linear block
  from ``(q_m, qd_m, f_c)`` (``f_c``: the valve model's force) to ``(q, qd)``. The Kalman
  observer ('kalman', control/observer.py) is linearized with the law instead (`Controller`
  given an Observer): its state (q, qd and the force bias, at the last sample's stamp) is
  predicted with ``f_c`` plus the bias and corrected by ``q_m`` inside the real
  `Compensation.effort`, whose prediction runs on from the corrected estimate; the law and
  the integral read that estimate, the measured velocity nothing;
- the controller (`Controller`): control.compensation's prediction over the dead time and the
  law, one map from ``(q, qd)``, the valve model's force and the commands pending in it to
  the force, linearized by central differences of the real `Compensation.effort` (the lead
  acts on the feed-forward only and drops out); the valve model (actuation.valves, linear
  without a slew limit) advanced by a tick, its weights from unit inputs; the integral
  (control.integral) ``i' = i - Ki period e_m``, added to the next ticks' force (``Ki``
  diag(ki), or ``M(q_d) diag(ki)`` with ``gains.ki_inertial``: `Gains.integral`).

A rigid arm (effort output, no actuation) is the same loop without valves (zero lag and dead
time: the effort held over the tick) and without compensation: per joint a double integrator
``s M e'' = u`` behind the hold, for a mass error `s` (PlantError.mass, every link's mass and
inertia alike, as the simulator's ``mismatch.mass_scale``).

Left out: the clamps (at p_min a PMA vents and its channel's gain drops to 0; p_max), the rate
limit, the dead zone (an offset), a slew limit of the valves, the sensor noise.
"""

import copy
import functools
import math
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
from scipy.linalg import expm

from continuum_ctrl.actuation.valves import Actuator
from continuum_ctrl.control.compensation import Compensation
from continuum_ctrl.control.computed_torque import ComputedTorqueLaw

#: the estimator kinds: the velocities measured, the positions differenced over a period, or
#: the Kalman observer's estimate (a Controller given its Observer)
VELOCITY_PATHS = ('measured', 'differenced', 'kalman')
#: central-difference steps: position (m or rad), velocity (m/s or rad/s), force (N)
STEPS = (1e-6, 1e-5, 1e-3)
#: N; a pose's PMA force below this is linearized as this (a vented PMA has no gain at all)
LEAST_FORCE = 1.0


@dataclass(frozen=True)
class Gains:
    """
    The gains tuned: kp (1/s^2), kd (1/s), ki, per joint (n,); velocity_filter, s.

    `ki` in force units, N/(m s) or N m/(rad s) (``gains.ki``), or with `inertial` in
    acceleration units through the model's M(q), 1/s^3 (``gains.ki_inertial``, rigid arms).
    """

    kp: np.ndarray
    kd: np.ndarray
    ki: np.ndarray
    velocity_filter: float
    inertial: bool = False

    def integral(self, pose):
        """Return the integral's force gain at `pose` (n, n): diag(ki), or M(q_d) diag(ki)."""
        ki = np.diag(np.broadcast_to(self.ki, (pose.mass.shape[0],)))
        return pose.mass @ ki if self.inertial else ki


@dataclass(frozen=True)
class PlantError:
    """
    The true arm against the model: stiffness, damping, PMA area and mass scales (1: none).

    `payload` (kg): a point mass the model lacks (rigid arms; where, the tuner's Setup says).
    """

    stiffness: float = 1.0
    damping: float = 1.0
    area: float = 1.0
    mass: float = 1.0
    payload: float = 0.0


@dataclass(frozen=True)
class Mode:
    """A mode the model lacks, per PMA before the arm: ``w^2 / (s^2 + 2 z w s + w^2)``."""

    frequency: float
    damping: float


@dataclass(frozen=True)
class LoopOptions:
    """
    The loop around the controller.

    `period` (s); the plant's `valves` (time constant, dead time; s); `measurement_delay`
    (ticks), `stamped`; the `velocity` path (VELOCITY_PATHS); an unmodelled `mode` (Mode,
    `frequency` in Hz, `damping` a ratio; None: none).
    """

    period: float
    valves: Tuple[float, float]
    measurement_delay: int = 0
    stamped: bool = True
    velocity: str = 'measured'
    mode: Optional[Mode] = None


def _jacobians(f, q, qd):
    """Return ``(df/dq, df/dqd)`` of ``f(q, qd) -> (n,)`` by central differences."""
    n = q.size
    out = []
    for which, step in ((0, STEPS[0]), (1, STEPS[1])):
        columns = []
        for i in range(n):
            args = [q.copy(), qd.copy()], [q.copy(), qd.copy()]
            args[0][which][i] += step
            args[1][which][i] -= step
            columns.append((f(*args[0]) - f(*args[1])) / (2.0 * step))
        out.append(np.array(columns).T)
    return out


@dataclass(frozen=True)
class Pose:
    """
    The reference's `sample` ``(q_d, qd_d, qdd_d)`` and the model linearized there.

    `mass` M; `passive` (dP/dq, dP/dqd) of the passive forces; `rest` the same of the rest of
    the inverse dynamics at ``qdd_d`` (gravity, inertia, Coriolis: they scale with the mass);
    `force` the inverse dynamics there (N).
    """

    sample: Tuple[np.ndarray, np.ndarray, np.ndarray]
    mass: np.ndarray
    passive: Tuple[np.ndarray, np.ndarray]
    rest: Tuple[np.ndarray, np.ndarray]
    force: np.ndarray

    @classmethod
    def of(cls, model, sample):
        """Linearize `model` (a DynamicsModel) at the reference's `sample`."""
        q, qd, qdd = (np.array(s, dtype=float) for s in sample)

        def rest(x, xd):
            return model.inverse_dynamics(x, xd, qdd) - model.passive_forces(x, xd)
        return cls((q, qd, qdd), np.array(model.mass_matrix(q)),
                   tuple(_jacobians(lambda x, xd: np.array(model.passive_forces(x, xd)),
                                    q, qd)),
                   tuple(_jacobians(rest, q, qd)),
                   np.array(model.inverse_dynamics(q, qd, qdd), dtype=float))


def plant_matrices(pose, error, time_constant, mode):
    """
    Return ``(A, B)`` of the continuous plant: x = (e, e', [p_a], [z, z']), input the valves'.

    `error` (PlantError) scales the model; `time_constant` (s, 0: no lag, no p_a) the valves'
    lag; `mode` (Mode or None) filters the applied force before the arm.
    """
    n = pose.mass.shape[0]
    mass = error.mass * pose.mass
    stiffness = error.stiffness * pose.passive[0] + error.mass * pose.rest[0]
    damping = error.damping * pose.passive[1] + error.mass * pose.rest[1]
    inverse = np.linalg.inv(mass)
    size = 2 * n + (n if time_constant > 0.0 else 0) + (2 * n if mode else 0)
    A, B = np.zeros((size, size)), np.zeros((size, n))
    eye = np.eye(n)
    A[:n, n:2 * n] = eye
    A[n:2 * n, :n] = -inverse @ stiffness
    A[n:2 * n, n:2 * n] = -inverse @ damping
    applied = slice(2 * n, 3 * n)

    def driven(rows, gain):
        """Add `gain` times the applied force (the lag's state, or the input) to `rows`."""
        if time_constant > 0.0:
            A[rows, applied] += gain
        else:
            B[rows] += gain
    if time_constant > 0.0:
        A[applied, applied] = -eye / time_constant
        B[applied] = eye / time_constant
    if mode:
        at = size - 2 * n
        w = 2.0 * math.pi * mode.frequency
        A[at:at + n, at + n:] = eye
        A[at + n:, at:at + n] = -w * w * eye
        A[at + n:, at + n:] = -2.0 * mode.damping * w * eye
        driven(slice(at + n, size), w * w * eye)
        A[n:2 * n, at:at + n] = inverse
    else:
        driven(slice(n, 2 * n), inverse)
    return A, B


def _hold(A, B, span):
    """Return ``(exp(A span), int_0^span exp(A r) dr B)``: `span` s of a held input."""
    n, m = B.shape
    big = np.zeros((n + m, n + m))
    big[:n, :n], big[:n, n:] = A * span, B * span
    exp = expm(big)
    return exp[:n, :n], exp[:n, n:]


def plant_step(A, B, period, delay):
    """
    Return ``(Phi, old, new, lag)``: ``x' = Phi x + old v[k-lag-1] + new v[k-lag]`` over a tick.

    The input is the command held from its tick on, `delay` s late (`lag` whole ticks and a
    fraction, where the older command still acts).
    """
    lag = int(math.floor(delay / period + 1e-9))
    split = min(max(delay - lag * period, 0.0), period)
    first, old = _hold(A, B, split)
    second, new = _hold(A, B, period - split)
    return second @ first, second @ old, new, lag


@dataclass(frozen=True)
class DiscretePlant:
    """
    A plant over one tick: ``x' = Phi x + old v[k-lag-1] + new v[k-lag]`` (`plant_step`).

    Its first 2n states are ``(e, e')``, what the controller measures; `v` the valves' input
    (N, before the area error, which `LoopSystem.build` applies).
    """

    Phi: np.ndarray
    old: np.ndarray
    new: np.ndarray
    lag: int


def toppling_rate(plant, period):
    """
    Return how fast `plant` (a DiscretePlant) leaves its pose with no feedback, 1/s (0: never).

    Its fastest growing mode, ``log |z| / period`` of its transition's largest eigenvalue: the
    model's plant or an engine's linearized, valves and payload included. An upright arm
    stands on its PMAs' stiffness against gravity's, which bends it further the more it
    bends: where gravity wins, the loop itself holds it up, and behind valves of latency `L`
    its margins shrink as ``rate * L`` grows (docs/tuning.md).
    """
    radius = float(np.max(np.abs(np.linalg.eigvals(plant.Phi))))
    return max(0.0, math.log(radius) / period)


def continuous_plant(pose, error, options):
    """Return the model's plant at `pose` under `error` over a tick (DiscretePlant)."""
    A, B = plant_matrices(pose, error, options.valves[0], options.mode)
    return DiscretePlant(*plant_step(A, B, options.period, options.valves[1]))


def valve_weights(time_constant, delay, period, count):
    """
    Return ``(a, w)``: the valve model's pressure a tick on, ``a p + sum_j w[j] u[k-j]``.

    Per PMA, as the controller's `Actuator` has it: `u[k-count]` is the input acting at the
    tick (``count`` >= the dead time in ticks), `u[k-count+1] .. u[k-1]` pending and `u[k]`
    sent at the tick; the model is linear (no slew limit), so unit inputs give the weights.
    """
    def after(pressure, inputs):
        valves = Actuator(time_constant, delay, 0.0, [pressure])
        valves.reset([pressure], 0.0)
        valves.input[:] = inputs[count]
        for j in range(count - 1, -1, -1):
            valves.command([inputs[j]], -j * period)
        return valves.advance(period)[0]
    unit = np.eye(count + 1)
    return after(1.0, np.zeros(count + 1)), np.array([after(0.0, u) for u in unit])


def pending_count(delay, period):
    """Return the commands the valve model holds at a tick: the dead time in ticks, >= 1."""
    return max(math.ceil(delay / period - 1e-9), 1)


class Controller:
    """
    The controller's force at a pose, linearized: the prediction and the law, integral apart.

    ``u = Jq q + Jv qd + Jp f_c + sum_j Ju[j-1] u[k-j]`` (j = 1..`pending`), with ``(q, qd)``
    the state estimate measured `age` s before the tick (the prediction runs from then),
    ``f_c`` the valve model's force at the tick and ``u[k-j]`` the commands it holds.
    Without compensation (`compensation` (0, 0)) the law alone: `Jp`, `Ju` are absent.
    `weights`: the valve model's tick (`valve_weights`).

    With `observer` (control/observer.py's Observer, its gain solved as the loop solves it)
    ``(q, qd)`` are the measured positions and the observer's state ``x`` (2n or 3n, the
    last tick's estimate, a period before the sample): ``u = Jx x + Jq q_m + Jp f_c + ...``
    (`Jv` 0: the observer ignores measured velocities) and `estimate` ``(Ox, Oy, Of, Ou)``
    its next state, ``x' = Ox x + Oy q_m + Of f_c + sum_j Ou[j-1] u[k-j]``.
    """

    def __init__(self, model, actuation, gains, compensation, period, age=0.0,
                 passive='reference', observer=None):
        self.n = n = model.n
        self.period = period
        self.gains = gains
        law = ComputedTorqueLaw(model, gains.kp, gains.kd, passive)
        time_constant, delay = compensation
        self.compensated = bool(time_constant or delay)
        self.pending = pending_count(delay, period) if self.compensated else 0
        self._make = lambda: (Compensation(model, law, actuation, time_constant, delay,
                                           period) if self.compensated else law)
        self._actuation = actuation
        self._age = age
        self.weights = (valve_weights(time_constant, delay, period, self.pending)
                        if self.compensated else (0.0, np.zeros(1)))
        self.Jq = self.Jv = self.Jp = np.zeros((n, n))
        self.Ju = np.zeros((self.pending, n, n))
        self.observer = observer
        if observer is not None and not self.compensated:
            raise ValueError('the Kalman observer is driven by the valve model: needs '
                             'compensation')
        self.Jx = np.zeros((n, 0))
        self.estimate = None

    def at(self, pose):
        """Linearize at `pose` (a Pose); return self."""
        n, pending = self.n, self.pending
        part = self._make()
        actuation = self._actuation
        sample = tuple(np.array(s) for s in pose.sample)
        reference = _Frozen(sample)
        t = 1.0
        base = np.maximum(pose.force, LEAST_FORCE)
        wide = (np.full(n, -1e12), np.full(n, 1e12))

        observer = self.observer
        # the observer's state: (q, qd[, bias]) a period before the sample (module doc)
        held = 0 if observer is None else observer.x.size
        stamp = t - self._age

        def effort(x):
            q, qd = x[held:held + n], x[held + n:held + 2 * n]
            if not self.compensated:
                return np.array(part(q, qd, *sample))
            forces = x[held + 2 * n:].reshape(pending + 1, n)
            pressure = [actuation.pressure(f) for f in forces]
            valves = part.valves
            valves.reset(pressure[0], t)
            valves.input[:] = pressure[pending]
            for j in range(pending - 1, 0, -1):
                valves.command(pressure[j], t - j * self.period)
            if observer is None:
                return np.array(part.effort(q, qd, stamp, reference, t, wide))
            # as ControlLoop.tick runs it: the last estimate, then this tick's sample
            state = x[:held].reshape(-1, n)
            observer.start(state[0], state[1], stamp - self.period)
            observer.x[:] = state
            observer.measure(q, qd, stamp)
            estimate = observer.x
            tau = part.effort(estimate[0], estimate[1], observer.times[0], reference, t,
                              wide, observer)
            return np.concatenate([tau, estimate.ravel()])
        valve_part = [base] * (pending + 1) if self.compensated else []
        last = np.zeros(held)               # the last estimate: the sample, no bias
        last[:min(held, 2 * n)] = np.concatenate(sample[:2])[:held]
        x0 = np.concatenate([last, sample[0], sample[1]] + valve_part)
        steps = np.concatenate([np.repeat(STEPS, n)[:held], np.repeat(STEPS[:2], n),
                                np.full(x0.size - held - 2 * n, STEPS[2])])
        columns = []
        for i in range(x0.size):
            up, down = x0.copy(), x0.copy()
            up[i] += steps[i]
            down[i] -= steps[i]
            columns.append((effort(up) - effort(down)) / (2.0 * steps[i]))
        J = np.array(columns).T
        law, nxt = J[:n], J[n:]

        def force(rows, j):
            """Return the columns of `rows` of the valve model's j-th force input."""
            return rows[:, held + (2 + j) * n:held + (3 + j) * n]
        self.Jx, self.Jq = law[:, :held], law[:, held:held + n]
        self.Jv = law[:, held + n:held + 2 * n]
        if self.compensated:
            self.Jp = force(law, 0)
            self.Ju = np.array([force(law, j) for j in range(1, pending + 1)])
        if held:
            self.estimate = (nxt[:, :held], nxt[:, held:held + n], force(nxt, 0),
                             np.array([force(nxt, j) for j in range(1, pending + 1)]))
        return self


#: the Controller's linearized parts, each affine in kp and kd (`blended`)
PARTS = ('Jq', 'Jv', 'Jp', 'Ju', 'Jx')


#: the uniform (kp, kd) of the three Controllers `blended` combines (kp, kd > 0: the law's)
BASIS = ((1.0, 1.0), (2.0, 1.0), (1.0, 2.0))


def blended(base, more_kp, more_kd, gains):
    """
    Return the Controller of uniform `gains` from three linearized at the same pose.

    The three have the (kp, kd) of BASIS. The law's feedback ``M (kp e + kd e')`` is linear
    in the gains and the prediction and the observer do not read them, so each part of the
    linearization is affine in (kp, kd): three linearizations give every uniform gain's (the
    search.s), equal to a linearization anew up to rounding.
    """
    kp, kd = float(np.mean(gains.kp)) - 1.0, float(np.mean(gains.kd)) - 1.0
    out = copy.copy(base)
    for name in PARTS:
        at = getattr(base, name)
        setattr(out, name, at + kp * (getattr(more_kp, name) - at)
                + kd * (getattr(more_kd, name) - at))
    out.gains = gains
    return out


class _Frozen:
    """A reference held at one sample (the lead's feed-forward then has no slope)."""

    t0 = 0.0

    def __init__(self, sample):
        self._sample = sample

    def sample(self, t):
        """Return the sample, whatever `t`."""
        return self._sample


def estimator(kind, filter_time, period, n):
    """
    Return ``(A, B, C, D)`` of the state estimate: ``s' = A s + B y``, ``(q, qd) = C s + D y``.

    ``y = (q_m, qd_m, f_c)`` (3n): the measurement and the valve model's force. As
    ControlLoop.set_state has it, `kind` 'measured' takes ``qd_m``, 'differenced' the
    positions' difference over `period` (a driver that sends lengths only), and both pass the
    `filter_time` low-pass ``qd += T / (T + filter_time) (qd_m - qd)``.
    """
    alpha = period / (period + filter_time)
    eye, zero = np.eye(n), np.zeros((n, n))
    if kind == 'measured':           # s: the filtered velocity before this state
        return ((1.0 - alpha) * eye, np.hstack([zero, alpha * eye, zero]),
                np.vstack([zero, (1.0 - alpha) * eye]),
                np.block([[eye, zero, zero], [zero, alpha * eye, zero]]))
    if kind != 'differenced':
        raise ValueError(f'unknown velocity path {kind!r}')
    rate = alpha / period            # s: (filtered velocity, last position)
    return (np.block([[(1.0 - alpha) * eye, -rate * eye], [zero, zero]]),
            np.block([[rate * eye, zero, zero], [eye, zero, zero]]),
            np.block([[zero, zero], [(1.0 - alpha) * eye, -rate * eye]]),
            np.block([[eye, zero, zero], [rate * eye, zero, zero]]))


class _Layout:
    """Named slices of one state vector, in the order they are added."""

    def __init__(self):
        self.size = 0
        self.slices = {}

    def add(self, name, size):
        """Append the block `name` of `size` states."""
        self.slices[name] = slice(self.size, self.size + size)
        self.size += size

    def __getitem__(self, name):
        """Return the slice of block `name`."""
        return self.slices[name]


@dataclass
class LoopSystem:
    """
    The loop broken at the plant input: ``X' = A X + Bv v``, ``u = K X`` (closed: v = u).

    `layout` names the state's blocks; `period` s. `closed(k)` is the closed loop's matrix
    with the plant input scaled by `k`; `poles(k)` its poles, from the smaller `folded`.
    """

    A: np.ndarray
    Bv: np.ndarray
    K: np.ndarray
    period: float
    layout: _Layout

    def closed(self, k=1.0):
        """Return ``A + k Bv K``, the closed loop with `k` at the plant input."""
        return self.A + k * self.Bv @ self.K

    def poles(self, k=1.0):
        """Return the poles of `closed(k)`, but for the zeros `folded` leaves out."""
        return np.linalg.eigvals(self.folded.closed(k))

    @functools.cached_property
    def folded(self):
        """
        Return the FoldedLoop: the plant's input chain (``v1`` ..) folded into the commands'.

        The valve compensation keeps the commands of the last ticks (``u1`` ..); closed with
        ``v = k u``, the plant's input chain holds `k` times them (``v_j = k u_j``, an
        invariant subspace), and on the rest the chain's states only shift out: poles at 0.
        """
        lay, n = self.layout, self.K.shape[0]
        folded = 0
        while f'v{folded + 1}' in lay.slices and f'u{folded + 1}' in lay.slices:
            folded += 1
        kept = np.ones(self.A.shape[0], dtype=bool)
        for j in range(1, folded + 1):
            kept[lay[f'v{j}']] = False
        if np.any(self.K[:, ~kept]):
            raise ValueError('the law reads the plant\'s input chain: it cannot be folded')
        at = np.cumsum(kept) - 1                    # a kept state's index in the folded loop
        fixed = self.A[np.ix_(kept, kept)]
        scaled = self.Bv[kept] @ self.K[:, kept]
        ticks, taps, rows = [], [], self.A[kept]
        for j in range(1, folded + 1):
            tap = rows[:, lay[f'v{j}']]
            scaled[:, at[lay[f'u{j}']]] += tap
            if np.any(tap):
                ticks.append(j)
                taps.append(tap)
        return FoldedLoop(fixed, scaled, self.K[:, kept], self.Bv[kept], np.array(ticks, int),
                          np.array(taps).reshape(len(taps), int(kept.sum()), n))

    @classmethod
    def build(cls, pose, control, error, options, plant=None):
        """
        Assemble the loop of `control` (Controller at `pose`) around the plant `error`.

        `plant`: a DiscretePlant in place of the model's (`continuous_plant`); of `error`,
        only the area then applies.
        """
        n, T = control.n, options.period
        plant_tick = plant if plant is not None else continuous_plant(pose, error, options)
        Phi, shift = plant_tick.Phi, plant_tick.lag
        old, new = plant_tick.old * error.area, plant_tick.new * error.area
        kalman = options.velocity == 'kalman'
        if kalman != (control.estimate is not None):
            raise ValueError("velocity 'kalman' needs a Controller given the Observer, and "
                             'only it')
        Ae, Be, Ce, De = (control.estimate[0], None, None, None) if kalman else estimator(
            options.velocity, control.gains.velocity_filter, T, n)
        d, pending = options.measurement_delay, control.pending
        ki = control.gains.integral(pose)
        lay = _state_layout(n, Phi.shape[0], shift, d, Ae.shape[0], control.compensated,
                            pending, bool(np.any(ki)))
        N = lay.size
        A, Bu, Bv, K = np.zeros((N, N)), np.zeros((N, n)), np.zeros((N, n)), np.zeros((n, N))
        plant = lay['plant']
        # the plant over the tick, fed v[k-shift-1] then v[k-shift]
        A[plant, plant] = Phi
        for weight, j in ((old, shift + 1), (new, shift)):
            if j == 0:
                Bv[plant] += weight
            else:
                A[plant, lay[f'v{j}']] += weight
        Bv[lay['v1']] = np.eye(n)
        for j in range(2, shift + 2):
            A[lay[f'v{j}'], lay[f'v{j - 1}']] = np.eye(n)
        # what the controller measures: (e, e') now, or d ticks ago
        measured = np.zeros((2 * n, N))
        measured[:, plant.start:plant.start + 2 * n] = np.eye(2 * n)
        if d:
            A[lay['m1'], plant.start:plant.start + 2 * n] = np.eye(2 * n)
            for j in range(2, d + 1):
                A[lay[f'm{j}'], lay[f'm{j - 1}']] = np.eye(2 * n)
            measured = np.zeros((2 * n, N))
            measured[:, lay[f'm{d}']] = np.eye(2 * n)
        valve_force = np.zeros((n, N))
        if control.compensated:
            valve_force[:, lay['valve model']] = np.eye(n)
        estimate = lay['estimate']
        if kalman:                  # the observer's next state, which the integral reads
            Ox, Oy, Of, Ou = control.estimate
            A[estimate] += Ox @ _select(estimate, N) + Oy @ measured[:n] + Of @ valve_force
            for j in range(1, pending + 1):
                A[estimate, lay[f'u{j}']] += Ou[j - 1]
            K += control.Jx @ _select(estimate, N) + control.Jq @ measured[:n]
            fed_back = A[estimate][:n].copy()
        else:
            inputs = np.vstack([measured, valve_force])
            A[estimate] += Ae @ _select(estimate, N) + Be @ inputs
            state = Ce @ _select(estimate, N) + De @ inputs
            K += control.Jq @ state[:n] + control.Jv @ state[n:]
            fed_back = measured[:n]
        if control.compensated:
            a, w = control.weights
            model_block = lay['valve model']
            K[:, model_block] += control.Jp
            A[model_block, model_block] = a * np.eye(n)
            Bu[model_block] = w[0] * np.eye(n)
            Bu[lay['u1']] = np.eye(n)
            for j in range(1, pending + 1):
                K[:, lay[f'u{j}']] += control.Ju[j - 1]
                A[model_block, lay[f'u{j}']] = w[j] * np.eye(n)
                if j > 1:
                    A[lay[f'u{j}'], lay[f'u{j - 1}']] = np.eye(n)
        if np.any(ki):              # without, the integral holds 0: no state, no pole at 1
            integral = lay['integral']
            K[:, integral] += np.eye(n)
            A[integral, integral] = np.eye(n)
            A[integral] -= T * ki @ fed_back
        return cls(A + Bu @ K, Bv, K, T, lay)


@dataclass(frozen=True)
class FoldedLoop:
    """
    A LoopSystem closed, its plant's input chain folded into its commands' (`LoopSystem.folded`).

    States X, the LoopSystem's less the chain's first ``m`` ticks (behind 76 + 38 ms valves at
    500 Hz: 423 states become 252, a fifth of the eigenvalue problem's cost):
    ``X' = (fixed + k scaled) X`` closed with `k` at the plant input, ``u = K X``. A force `w`
    added at the plant input reaches X as ``(direct + sum_i z^-ticks[i] taps[i]) w``: the
    chain's delays, exact at every frequency (the taps that are not zero: the plant reads
    the chain at its dead time).
    """

    fixed: np.ndarray
    scaled: np.ndarray
    K: np.ndarray
    direct: np.ndarray
    ticks: np.ndarray
    taps: np.ndarray

    def closed(self, k=1.0):
        """Return the folded closed loop's matrix with `k` at the plant input."""
        return self.fixed + k * self.scaled


def _state_layout(n, plant, shift, delay, estimate, compensated, pending, integral=True):
    """
    Return the loop state's `_Layout`.

    The plant (`plant` states), the inputs on their way
    (``v1`` .. ``v{shift + 1}``), the measurements `delay` ticks old (``m1`` ..), the
    estimator's `estimate` states, the valve model and the `pending` commands (``u1`` ..;
    `compensated` only), the `integral`.
    """
    lay = _Layout()
    lay.add('plant', plant)
    for j in range(1, shift + 2):
        lay.add(f'v{j}', n)
    for j in range(1, delay + 1):
        lay.add(f'm{j}', 2 * n)
    lay.add('estimate', estimate)
    if compensated:
        lay.add('valve model', n)
        for j in range(1, pending + 1):
            lay.add(f'u{j}', n)
    if integral:
        lay.add('integral', n)
    return lay


def _select(block, size):
    """Return the matrix picking `block` (a slice) out of a state of `size`."""
    out = np.zeros((block.stop - block.start, size))
    out[:, block] = np.eye(block.stop - block.start)
    return out
