"""
Integral action of the computed-torque law, in generalized-force units, with anti-windup.

    integral = IntegralAction(n)
    integral.configure(ki, limit)      # ki: N/(m s) or N m/(rad s); limit: N or N m, (n,)
    integral.configure(ki, limit, model)   # ki: 1/s^3 through the model's M(q) (rigid arms)
    integral.learn(window, floor)      # optional: the learnt stiffness, see below
    integral.add_learnt(q_des, total)  # the learnt force at the reference, added (N or N m)
    integral.update(q, q_des, dt, effort, low, high, q_low, q_high)    # once per tick
    integral.force                     # added to the law's force (N or N m), model order

The force integrates ``-ki (q - q_des)`` over time and stays within ``[-limit, limit]``, so an
arm held by an obstacle is not pushed without bound. It removes what the model cannot: a
stiffness, area or dead zone a calibration got a few per cent wrong, which with the passive
forces at the reference still leaves millimetres of steady error (docs/law.md).

Anti-windup is conditional integration: a joint is not integrated in a tick when the effort
sent sits at a bound of ``[low, high]`` (pressure or effort limits) and the step would push
further into it, or when its reference is held at a joint limit (``q_low``, ``q_high``: the
reference is clamped there, so equality means held), where the arm
may rest against a stop the error cannot remove. The loop resets the force at activation and
integrates from then on, through the reference's blend: the blend starts at the measured
state, so the error and the force start at zero and nothing jumps, and the force a model
error needs builds up while the reference moves in (held through the blend, it had to catch
up on the whole error after it: 2.3 mm on the arm 20 % stiff with a 15 kPa dead zone,
against 1.3 mm integrated through it; bench/quiet_loop.py).

With a `model` (``gains.ki_inertial``) the gain is in acceleration units, as kp and kd are:
the force integrates ``-M(q) Ki (q - q_des)`` (``M`` on the left, as in ``M (v + z)``), so
with the model right each joint's error obeys ``e''' + kd e'' + kp e' + ki e = 0``, the same
on every joint and every arm, stable for ``ki < kp kd``; the bounds and the anti-windup are
the force's, as above. A `payload` estimate (control/payload_estimate.py) is fed the force
after each step. (``Ki M e`` instead couples a joint's error into another's integral at
that joint's gain: with the wrist's ki four times the elbow's, the Panda 30 % heavier than
its URDF swung at 1 Hz.)

The learnt stiffness (`learn`, ``gains.learn_window``): a stiffness or area error makes the
force the integral must hold follow the reference's position, and against a moving reference
the integral lags it by a quarter period at low frequency. So the force the law adds (the
integral's and the learnt one) is regressed, joint by joint, on the reference position it was
fed at, over an exponential window of `window` s: the slope ``k = cov(x, F) / (var(x) +
floor^2)`` (N/m or N m/rad) times the reference's deviation from its mean there is fed
forward at the reference the command acts at, as the law's passive forces are. The integral
then holds only what does not follow the position. `floor` (m or rad) is the swing below
which the slope shrinks towards zero, so a reference that barely moves learns nothing
(it would divide noise by noise). It reads only the reference and the law's own force, so it
adds no feedback at the loop's frequencies: its slope moves over seconds.
"""

from typing import Optional

import numpy as np

from continuum_ctrl.control.payload_estimate import PayloadEstimate
from continuum_ctrl.numerics.jit import cached_entry_point, compiled


class IntegralAction:
    """The integral force (n,) of one control loop; see the module doc. Not thread-safe."""

    def __init__(self, n: int, force: Optional[np.ndarray] = None) -> None:
        """`force`: the (n,) float64 array to hold the force in (default: a new one)."""
        self.force = np.zeros(n) if force is None else force
        self.ki = np.zeros(n)
        self.limit = np.zeros(n)
        #: joints held (not integrated) by the last update
        self.held = np.zeros(n, dtype=np.bool_)
        #: whether any joint has a positive gain (the law then adds `force`)
        self.engaged = False
        self._update = _updater()
        #: the learnt stiffness's window: weight, sums of x, F, x^2, x F (5, n); see the doc
        self.window = np.zeros((5, n))
        #: the reference position fed to the law last (m or rad), and the learnt force there
        self.fed = np.zeros(n)
        self.learnt = np.zeros(n)
        self.window_time = 0.0
        self.floor = 1.0
        #: the window's weight per tick (1,): 0 while `frozen`; the compiled ticks hold it
        self.rate = np.zeros(1)
        self._free_rate = 0.0
        self._frozen = False
        #: the model whose M(q) weights the error (`ki` in 1/s^3), or None (force units)
        self.inertia = None
        #: the payload estimate the force feeds (control/payload_estimate.py), or None
        self.payload: Optional[PayloadEstimate] = None

    def configure(self, ki: np.ndarray, limit: np.ndarray, inertia=None) -> None:
        """
        Take validated gains (>= 0) and bounds (> 0); the force is clamped to the new bounds.

        `inertia`: the model whose ``M(q)`` weights the error (`ki` then 1/s^3), or None.
        """
        self.inertia = inertia
        self.ki = np.array(ki, dtype=float)
        #: the gain the step multiplies by: `ki`, or 1 where inertial (``M Ki e`` is given)
        self.step_gain = self.ki if inertia is None else (self.ki > 0.0).astype(float)
        self.limit = np.array(limit, dtype=float)
        np.clip(self.force, -self.limit, self.limit, out=self.force)
        self.force[self.ki == 0.0] = 0.0
        self.engaged = bool(np.any(self.ki > 0.0))

    def learn(self, window_time: float, floor: float) -> None:
        """Learn a stiffness over `window_time` s (0: none) with swing floor `floor` m or rad."""
        self.window_time, self.floor = float(window_time), float(floor)
        if self.window_time == 0.0:
            self.window[:] = 0.0
            self.learnt[:] = 0.0
        else:           # compiled or loaded here, not in the first active tick
            _add_learnt_force(), _learn_step(), _stiffness()

    def learning(self, period: float) -> tuple:
        """Return (learning, rate per tick of `period` s (1,), floor^2, window, fed, learnt)."""
        learning = self.window_time > 0.0
        self._free_rate = min(period / self.window_time, 1.0) if learning else 0.0
        self._write_rate()
        return learning, self.rate, self.floor ** 2, self.window, self.fed, self.learnt

    @property
    def frozen(self) -> bool:
        """
        Tell whether the learnt stiffness holds: its window frozen, its force still fed forward.

        The loop sets it while a learnt table feeds the reference's repeating force forward
        (control/ilc.py `feeding`), which learns against a plant that holds still.
        """
        return self._frozen

    @frozen.setter
    def frozen(self, value: bool) -> None:
        self._frozen = bool(value)
        self._write_rate()

    def _write_rate(self):
        self.rate[0] = 0.0 if self._frozen else self._free_rate

    def reset(self) -> None:
        """Zero the force and the learnt stiffness (at activation)."""
        self.force[:] = 0.0
        self.held[:] = False
        self.window[:] = 0.0
        self.learnt[:] = 0.0
        if self.payload is not None:
            self.payload.reset()

    def add_learnt(self, x: np.ndarray, total: np.ndarray) -> None:
        """
        Add the learnt force at reference position `x` to `total` (N or N m); kept in `learnt`.

        `x` (m or rad, model order) is the reference where the command acts; the next
        `update` folds it and the force the law then added into the window.
        """
        if self.payload is not None:
            total += self.payload.fed
        if self.window_time > 0.0:
            _add_learnt_force()(x, self.window, self.floor ** 2, self.limit, self.fed,
                                self.learnt, total)

    def stiffness(self) -> np.ndarray:
        """Return the learnt stiffness per joint (N/m or N m/rad; 0 where none), model order."""
        out = np.zeros(self.force.shape[0])
        if self.window_time > 0.0:
            _stiffness()(self.window, self.floor ** 2, out)
        return out

    def update(self, q: np.ndarray, q_des: np.ndarray, dt: float, effort: np.ndarray,
               low: np.ndarray, high: np.ndarray, q_low: np.ndarray,
               q_high: np.ndarray) -> None:
        """
        Integrate one tick of `dt` s of the error ``q - q_des`` (m or rad), model order.

        `effort` is the force sent this tick, `low`, `high` its bounds (N or N m); `q_low`,
        `q_high` the joint limits the reference is clamped to.
        """
        if self.inertia is not None:
            q = self.weighted(q, q_des)
        self._update(q, q_des, dt, effort, low, high, q_low, q_high, self.step_gain,
                     self.limit, self.force, self.held)
        learning, rate, _, window, fed, learnt = self.learning(dt)
        if learning:
            _learn_step()(fed, self.force, learnt, self.step_gain, rate, window)
        if self.payload is not None:
            self.payload.update(q_des, self.force, dt)

    def weighted(self, q: np.ndarray, q_des: np.ndarray) -> np.ndarray:
        """
        Return ``q_des + M(q) Ki (q - q_des)``: what the step integrates at unit gain.

        The step takes ``q - q_des`` times its gain; with ``gains.ki_inertial`` it is given
        this, and `step_gain` (1 or 0), so it integrates ``M(q) Ki e`` (N m).
        """
        return q_des + self.inertia.mass_matrix(q) @ (self.ki * (q - q_des))


@compiled()
def integral_step(q, q_des, dt, effort, low, high, q_low, q_high, ki, limit, force, held):
    """
    One conditional integration step of `force`; see `IntegralAction.update`.

    It integrates ``ki (q - q_des)``: with ``gains.ki_inertial`` the caller gives
    ``q = IntegralAction.weighted(q, q_des)`` and ``ki`` its `step_gain`.
    """
    for i in range(force.shape[0]):
        step = -ki[i] * (q[i] - q_des[i]) * dt
        hold = (q_des[i] <= q_low[i] or q_des[i] >= q_high[i]
                or (effort[i] >= high[i] and step > 0.0)
                or (effort[i] <= low[i] and step < 0.0) or not step == step)
        held[i] = hold
        if not hold:
            force[i] = min(max(force[i] + step, -limit[i]), limit[i])


@compiled(inline='always')
def _slope(window, floor2, i):
    """Return joint `i`'s learnt stiffness and its window's mean reference position."""
    w = window[0, i]
    if w <= 0.0:
        return 0.0, 0.0
    mean_x, mean_f = window[1, i] / w, window[2, i] / w
    return ((window[4, i] / w - mean_x * mean_f)
            / (window[3, i] / w - mean_x * mean_x + floor2)), mean_x


@compiled()
def add_learnt_force(x, window, floor2, limit, fed, learnt, total):
    """
    Add the learnt force at reference `x` (within ``[-limit, limit]``) to `total`.

    `x` is kept in `fed` and the force in `learnt`, for the next `learn_step`.
    """
    for i in range(x.shape[0]):
        fed[i] = x[i]
        slope, mean_x = _slope(window, floor2, i)
        learnt[i] = min(max(slope * (x[i] - mean_x), -limit[i]), limit[i])
        total[i] += learnt[i]


@compiled()
def learnt_stiffness(window, floor2, out):
    """Write each joint's learnt stiffness into `out` (0 where nothing is learnt)."""
    for i in range(out.shape[0]):
        out[i] = _slope(window, floor2, i)[0]


@compiled()
def learn_step(x, force, learnt, ki, rate, window):
    """Fold a tick into the window: the reference `x` fed and the force ``force + learnt``."""
    weight = rate[0]
    if weight == 0.0:
        return
    keep = 1.0 - weight
    for i in range(x.shape[0]):
        if ki[i] > 0.0:
            f = force[i] + learnt[i]
            window[0, i] = keep * window[0, i] + weight
            window[1, i] = keep * window[1, i] + weight * x[i]
            window[2, i] = keep * window[2, i] + weight * f
            window[3, i] = keep * window[3, i] + weight * x[i] * x[i]
            window[4, i] = keep * window[4, i] + weight * x[i] * f


_updater = cached_entry_point(integral_step, *(np.zeros(1),) * 2, 0.0, *(np.zeros(1),) * 8,
                              np.zeros(1, dtype=np.bool_))
_add_learnt_force = cached_entry_point(add_learnt_force, np.zeros(1), np.zeros((1, 1)), 0.0,
                                       *(np.zeros(1),) * 4)
_learn_step = cached_entry_point(learn_step, *(np.zeros(1),) * 5, np.zeros((1, 1)))
_stiffness = cached_entry_point(learnt_stiffness, np.zeros((1, 1)), 0.0, np.zeros(1))
