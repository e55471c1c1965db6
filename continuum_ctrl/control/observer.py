"""
The state fed back, estimated: a steady-state Kalman filter driven by the forces applied.

    observer = Observer(model, settings.observer, period, pose)   # the gain, solved once
    observer.start(q, qd, stamp)        # at (re)activation: the measured state
    observer.measure(q, qd, stamp)      # a sample (model order), measured at `stamp` (s)
    at = observer.step_at(start, h, steps)   # the prediction step that takes the sample

The estimate `x` = (q, qd) (and the force bias, `bias`) holds at ``times[0]``; a pending
sample `y` at ``times[1]`` (NaN: none). The loop's prediction over the valves' dead time
(control/compensation.py; in one compiled call, control/fused_tick.py) starts from the
estimate, is corrected at the step nearest the sample's stamp (within half a step, a
millisecond at 500 Hz), writes the corrected estimate back into `x` and runs on to the
horizon: one prediction through the correction, with one model evaluation held over it.
The loop feeds back the corrected estimate (its `q`, `qd`), so the law, the integral and
``~/state`` see it.

The model: the arm linearized at rest at `pose` and stepped over the period `h` as the
prediction steps it (implicit damping Euler; `linearized`):

    (M + h D)(v' - v) = h (u + w - K q - D v),    q' = q + h v'

with ``K`` the stiffness of the passive forces and gravity, ``D`` the damping, ``u`` the
applied force (taken out of the error dynamics: the prediction applies it) and ``w`` a
generalized-force disturbance, independent from one period to the next, of standard deviation
`force_noise` (N or N m) on every coordinate: what the model misses (parameter error, the
valves' error). With `bias_noise` > 0 the state holds a third part, a force bias ``b``
the model misses, acting as ``w`` does and drifting as a random walk whose change over a
second has that standard deviation (N/s^0.5): the prediction adds it to the applied forces,
so a steady model error (stiffness, area, dead zone) leaves no steady error in the estimate.
Without it, the arm 20 % off its model tracked 0.79 mm RMS in section 1, with it 0.04 mm.
The measurement is the positions, ``y = q + e`` with ``e`` of standard deviation
`position_noise` (m or rad). `kalman_gain` solves the discrete Riccati equation for the a
priori error covariance ``P``; the gain is ``L = P H^T (H P H^T + R)^-1`` (2n or 3n, n), the
correction ``x += L (y - q)``.

Samples arrive as they may: a late one (older than the tick, newer than the estimate) is
taken at its stamp; missing ones mean a longer prediction; a reordered one (its stamp not
after the last sample's) is dropped and counted (`dropped`). A sample more than MAX_AGE after
the estimate restarts it from the sample: so long a prediction would only cost the tick.
Measured velocities are ignored (the gain is a position-only sensor's): a driver's velocity
is a difference of its positions, noisier than the model's.

A PMA on its end stop (its rest length, a joint limit) is held there by a reaction the model
lacks. Learnt as a force bias, it pushes the prediction off the arm the moment the PMA leaves
the stop (on the built-in plant with `end_stops`, against a reference that reaches them: 3 mm
RMS and 2.8 MPa/s); so a sample within STOP_MARGIN noise deviations of a limit (`free`)
corrects the estimate but not the bias.

A push or a dropped load moves the arm by millimetres within a few samples, hundreds of the
innovation's standard deviations ``sqrt(H P H^T + R)``; learnt as a bias at the gain's rate it
reached 100 N in 0.1 s under a 20 N push on the tip of the MuJoCo arm, outlasted the push by
a second and swung the pressures between their bounds. The bias learns from the innovation
clipped to `innovation_gate` of those deviations (`gate`), so an event moves it by at most
``L_b gate`` per sample; the estimate of ``(q, qd)`` takes the whole innovation (it follows
the arm through the event), and once the arm is back the bias learns as before.
"""

import math

import numpy as np
from scipy.linalg import solve_discrete_are

from continuum_ctrl.control.compensation import MAX_AGE
from continuum_ctrl.numerics.jit import compiled

#: how many position noise deviations inside a joint limit a sample still rests on its stop
STOP_MARGIN = 3.0
#: relative step of the central differences that give the stiffness and damping matrices
RELATIVE_STEP = 1e-6


def linearized(model, pose, period):
    """
    Return ``(F, G)``: ``x' = F x + G w`` of the arm at rest at `pose` over `period` s.

    ``x = (q, qd)`` (2n,), ``w`` a generalized force (n,); the step is the prediction's
    (module doc), ``K`` and ``D`` the central differences of the passive forces and gravity.
    """
    n = model.n
    pose = np.asarray(pose, dtype=float)
    rest = np.zeros(n)
    step = RELATIVE_STEP * max(float(np.max(np.abs(pose))), 1.0)
    K, D = np.zeros((n, n)), np.zeros((n, n))
    for j in range(n):
        dq = np.zeros(n)
        dq[j] = step
        K[:, j] = (model.passive_forces(pose + dq, rest) + model.gravity_vector(pose + dq)
                   - model.passive_forces(pose - dq, rest)
                   - model.gravity_vector(pose - dq)) / (2.0 * step)
        D[:, j] = (model.passive_forces(pose, dq) - model.passive_forces(pose, -dq)) / (
            2.0 * step)
    h = period
    inverse = np.linalg.inv(model.mass_matrix(pose) + h * D)
    velocity = np.hstack((-h * inverse @ K, np.eye(n) - h * inverse @ D))
    F = np.vstack((np.hstack((np.eye(n), np.zeros((n, n)))) + h * velocity, velocity))
    G = np.vstack((h * h * inverse, h * inverse))
    return F, G


def kalman_gain(F, G, force_noise, position_noise, bias_step=0.0):
    """
    Return ``(L, P)``: the steady-state gain (2n or 3n, n) and a priori error covariance.

    For ``x' = F x + G w``, ``y = q + e`` (the first n entries of x), w and e white with
    standard deviations `force_noise` and `position_noise`. `bias_step` > 0: x is augmented
    by a force bias ``b`` acting as w does, ``x' = F x + G (w + b)``, a random walk
    ``b' = b + c`` with c of that standard deviation (N), estimated too. Solved in units of
    `position_noise` (the covariances are ~1e-10 m^2 otherwise), which leaves the gain as it
    is.
    """
    n = G.shape[1]
    Q = force_noise * force_noise * G @ G.T
    if bias_step > 0.0:
        F = np.block([[F, G], [np.zeros((n, 2 * n)), np.eye(n)]])
        Q = np.block([[Q, np.zeros((2 * n, n))],
                      [np.zeros((n, 2 * n)), bias_step * bias_step * np.eye(n)]])
    H = np.eye(n, len(F))
    scale = position_noise * position_noise
    P = solve_discrete_are(F.T, H.T, Q / scale, np.eye(n))
    L = P @ H.T @ np.linalg.inv(H @ P @ H.T + np.eye(n))
    return L, P * scale


class Observer:
    """The steady-state Kalman filter of the module doc, for `model` at `period` s."""

    @classmethod
    def at_middle(cls, model, settings, period) -> 'Observer':
        """
        Return the observer whose gain is solved at the middle of the joint limits.

        Where the loop solves it (0 where a joint is unbounded): the reference's centre gave
        the same figures to 0.001 mm on the MuJoCo arm, and a reference changed at run time
        then costs the loop thread no new solution (2-20 ms).
        """
        low, high = (np.asarray(b, dtype=float) for b in model.joint_limits())
        middle = 0.5 * (low + high)
        return cls(model, settings, period, np.where(np.isfinite(middle), middle, 0.0))

    def __init__(self, model, settings, period, pose):
        F, G = linearized(model, pose, period)
        gain, self.covariance = kalman_gain(F, G, settings.force_noise,
                                            settings.position_noise,
                                            settings.bias_noise * math.sqrt(period))
        self.gain = np.ascontiguousarray(gain)
        self.settings, self.period = settings, period
        low, high = (np.array(b, dtype=float) for b in model.joint_limits())
        margin = STOP_MARGIN * settings.position_noise
        #: where a sample is off the end stops (m or rad): the joint limits, inside by
        #: STOP_MARGIN noise deviations; a sample outside teaches the force bias nothing
        self.free = (low + margin, high - margin)
        gate = settings.innovation_gate * np.sqrt(np.diag(self.covariance)[:model.n]
                                                  + settings.position_noise ** 2)
        #: the largest innovation the force bias learns from (m or rad; inf: no bound)
        self.gate = gate if settings.innovation_gate > 0.0 else np.full(model.n, np.inf)
        n = model.n
        self.x = np.zeros((len(gain) // n, n))
        self.y = np.zeros(n)
        self.times = np.array([-np.inf, np.nan])
        self._stamp = -np.inf           # the last sample's (taken or pending)
        self.dropped = 0

    @property
    def bias(self):
        """Return the force the model misses, as estimated (N or N m, (n,); None: not)."""
        return self.x[2] if len(self.x) > 2 else None

    def start(self, q, qd, stamp):
        """
        Take the measured state `q`, `qd` at `stamp` (s) as the estimate; none pending.

        The force bias is kept: what the model misses changes slowly.
        """
        self.x[0], self.x[1] = q, qd
        self.times[:] = (stamp, np.nan)
        self._stamp = stamp

    def measure(self, q, qd, stamp):
        """
        Take positions `q` measured at `stamp` (s) for the next prediction to correct with.

        A stamp not after the last sample's is dropped (counted); one more than MAX_AGE after
        the estimate restarts it at `q` and `qd` (the loop's velocity of the sample).
        """
        if not stamp > self._stamp:
            self.dropped += 1
            return
        if stamp - self.times[0] > MAX_AGE:
            self.start(q, qd, stamp)
            return
        self.y[:] = q
        self.times[1] = stamp
        self._stamp = stamp

    def step_at(self, start, h, steps):
        """Return `correction_step` of the pending sample (-1: none)."""
        return correction_step(self.times[1], start, h, steps)


@compiled(inline='always')
def correction_step(stamp, start, h, steps):
    """
    Return the step nearest `stamp` (s; NaN: none, -1) of a prediction from `start`.

    The prediction runs `steps` steps of `h` s from `start` (s); the result is clamped to 0
    to `steps` - 1.
    """
    if stamp != stamp:
        return -1
    return min(max(math.floor((stamp - start) / h + 0.5), 0), steps - 1)
