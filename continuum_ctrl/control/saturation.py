"""
What the loop learns while its effort sits at a bound, and just after: nothing.

    guard = SaturationGuard(loop)
    guard.configure(hold, error, gain)  # s (0: off), m or rad, the gains' factor (1: kept);
                                        # before the integral and observer change
    guard.watch(t)               # each active tick, after the effort is limited

A push or a dropped load larger than the arm can hold drives the effort to its bounds; the
error is then the event's, not a model error. Learnt from, it outlasts the event: the
integral winds to its limit within 0.1 s of a push's release and the observer's force bias
follows it (docs/safety.md), and the two hand the disturbance back and forth for seconds.
From a tick in which a joint's effort sits at a bound while its error ``|q - q_des|``
exceeds `error` and its reference is inside the joint limits (at a limit the arm may rest
on its stop, which the integral's own anti-windup handles), until `hold` s after the last
such tick, the integral's gain and the observer's innovation gate are zero: the integral
force, the learnt stiffness's window (it folds only joints with gain) and the force bias
stay as they were, while the law, the learnt force and the observer's state estimate run as
ever. The arrays are zeroed in place, so the compiled ticks (control/fused_tick.py,
rigid_tick.py) read the same values as the Python one.

The error matters: tracking touches a bound too, as a PMA vented at activation with the arm
at rest, and there the integral must learn (its own anti-windup holds it at the bound). Held
there, lengths-only tracking on bench/quiet_loop.py's arm 20 % off peaked at 0.51-1.01 mm
rather than 0.37-0.40 mm, and with an `error` of 2 mm its `end_stops` case (errors up to
2.4 mm) tracked 27 % worse in section 1; with 3 mm it is unchanged.

Through the same episode the law's gains are softened: `gains.kp` times `gain`, `gains.kd`
times its square root (the error's damping ratio kept), scaled in place likewise. Section 1's
PMAs carry 55 kg of generalized inertia, so ``M Kp`` at the file's gains spends the whole
effort range on 2.4 mm of error: a push's release met at full gain is braked at the opposite
bound. Softened to 0.1, the 20 N push on the MuJoCo arm settled in 1.81 s holding and 1.86 s
during the sinusoid, not 2.03 and 2.41 s (docs/safety.md). Not to zero: the arm's pressures
alone do not hold a bent pose under gravity on the disc stack (held at the loop's pressures it
wandered by 9 mm), so some feedback must stay.
"""

import numpy as np

from continuum_ctrl.numerics.jit import cached_entry_point, compiled


@compiled()
def saturated_beyond(effort, low, high, q, q_des, q_low, q_high, error):
    """
    Tell whether a joint's effort is at a bound with its error beyond `error`.

    The effort against `low` and `high`, the error ``|q - q_des|`` (m or rad), and only where
    the reference is inside the joint limits (`q_low`, `q_high`). Compiled: the common tick
    runs it whole (ten NumPy operations cost 10 us).
    """
    for k in range(effort.shape[0]):
        if ((effort[k] <= low[k] or effort[k] >= high[k]) and q_low[k] < q_des[k] < q_high[k]
                and abs(q[k] - q_des[k]) > error):
            return True
    return False


_saturated_beyond = cached_entry_point(saturated_beyond, *(np.zeros(1),) * 7, 0.0)


class SaturationGuard:
    """The loop's learning held through saturation episodes (module doc). Not thread-safe."""

    def __init__(self, loop) -> None:
        self._loop = loop
        self.hold = 0.0
        self.error = 0.0
        self.gain = 1.0
        #: the end of the current episode's hold (s; -inf: none)
        self.until = -np.inf
        #: episodes begun since the loop was built
        self.episodes = 0
        self._kept = None           # (ki, gate, kp, kd) as configured, while held

    def configure(self, hold: float, error: float, gain: float = 1.0) -> None:
        """
        Take `hold` (s, >= 0), `error` (m or rad) and the law's `gain` factor, releasing all.

        Called before the loop replaces its integral's gains and (maybe) its observer: the
        gains and gate held are given back to the arrays that had them (the law's, unless
        `ComputedTorqueLaw.set_gains` has replaced them).
        """
        if self._kept is not None:
            self._release()
        self.hold, self.error, self.gain = float(hold), float(error), float(gain)
        self.until = -np.inf
        if self.hold > 0.0:         # compiled or loaded here, not at the first active tick
            self._saturated_beyond = _saturated_beyond()

    def watch(self, t: float) -> None:
        """Hold or release the learning after the active tick at `t` (s)."""
        if self.hold <= 0.0:
            return
        if self._saturated():
            if self._kept is None:
                self._freeze()
            self.until = t + self.hold
        elif self._kept is not None and t >= self.until:
            self._release()

    def calm_error(self, t: float) -> float:
        """
        Return the largest error (m or rad) at `t` (s) that is not a disturbance's.

        `error` outside an episode, 0 through one (and its hold), infinite with the guard off.
        """
        if self.hold <= 0.0:
            return np.inf
        return 0.0 if t < self.until else self.error

    def _saturated(self):
        """Tell whether a joint's effort is at a bound with its error beyond `error`."""
        loop = self._loop
        low, high = loop._effort_range
        return self._saturated_beyond(loop.effort, low, high, loop.q, loop.q_des, loop.low,
                                      loop.high, self.error)

    def _freeze(self):
        loop = self._loop
        ki, observer, law = loop.integral.ki, loop.observer, loop.law
        gate = observer.gate if observer is not None else np.zeros(0)
        self._kept = (ki.copy(), gate.copy(), (law.kp, law.kp.copy()), (law.kd, law.kd.copy()))
        ki[:] = 0.0
        gate[:] = 0.0
        law.kp[:] *= self.gain
        law.kd[:] *= np.sqrt(self.gain)
        self.episodes += 1

    def _release(self):
        loop = self._loop
        ki, gate, *gains = self._kept
        for (softened, kept), now in zip(gains, (loop.law.kp, loop.law.kd)):
            if softened is now:
                softened[:] = kept
        loop.integral.ki[:] = ki
        if loop.observer is not None:
            loop.observer.gate[:] = gate
        self._kept = None
