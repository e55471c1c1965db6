"""
The task-space correction: the model's tip kinematics corrected on a measured tip.

The controller's tip is the model's: its kinematics at the measured joints. A real arm's tip
is elsewhere (a continuum arm sags under gravity and does not bend at constant curvature:
10-25 mm at poses 250-450 mm off the axis). Motion capture measures the true tip `y`,
stamped at the measurement; the model's tip at the joints measured then (the loop's joints
whose own stamp is nearest, `record`) gives the kinematic gap

    g = FK(q(t_m)) - y                                          [m, base frame]

which the correction `c` follows, every control tick while samples are fresh, as a
first-order lag of bandwidth `w` (`task.correction.bandwidth`, rad/s):

    c <- c + (1 - exp(-w T)) (g - c)                            (T: the loop's period)

and every tip reference feeds ``x_d + c`` to the IK (`TaskSpace.offset`). With the joints
tracking, the model's tip is ``x_d + c`` and the true tip ``x_d + c - g``: the true tip's
error ``c - g`` decays at `w`, to zero for a steady gap (integral action on the true tip's
error). The joint loop's own tracking error is not fed back (the gap is taken at the
measured joints), so this loop closes only through the gap's change with the pose it moves
the tip to: ``dg/dc``, about the gap over the tip's offset from the axis (a few per cent on
the reference arm). Its loop gain ``|dg/dc| |L(jw)|`` (`L`: the joint loop's closed-loop
response, at most ~1.5) stays far below 1 at every frequency, so it is stable whatever the
phase of the joint loop and of the capture's latency (small-gain margin over 20 dB); `w` is
kept an order below the joint loop's bandwidth (~20 rad/s: Kp 500 1/s^2) so that the
correction moves the IK target slowly: 2 rad/s by default, which takes a 20 mm gap to
1 mm in 1.5 s.

The capture's samples: one older than `max_age` on arrival, or not newer than the last
accepted, is stale; one whose gap is beyond `max_offset`, or moves more than `outlier` from
the last accepted gap (while that one is younger than `timeout`), is an outlier; both are
rejected and counted. A jump that OUTLIER_STREAK samples in a row repeat (each within
`outlier` of the one before) is the gap's own and is taken: after a fast move the arm's gap
can stand 10-30 mm from the one taken during it, and every sample was refused until the
timeout (through the nodes: the true tip 30 mm off for 3 s).

Between `max_age` and `timeout` after the last accepted sample (a dropout) the correction is
held: as the gap map of the last FIT_SECONDS of samples, an
affine fit of the gap against the model's tip (``g = a + B (x - x_mean)``, ridge-regularized
so that samples at one pose give ``B = 0``, the last gap held), evaluated where the model's
tip is now; a tip that moves during the dropout (a circle) keeps the gap it had there.
After `timeout` it falls back to the model alone: `c` decays to zero at `w` (no step in the
IK target), said once in the log (`events`), `fallen_back` true until a sample is accepted
again.

A kinematic calibration (`task.calibration.*`, control/kinematic_calibration.py: the gap
fitted to a recorded run, ``g_cal(q)`` at the joints `q`) is the correction's part that needs
no capture: the offset is ``g_cal(q) + c``, `q` the joints of the last tick (with the joints
tracking, the IK's solution for the path point plus the offset: a fixed point the ticks
reach, the gap changing a few per cent of the tip's move), and `c` follows the measured gap
less ``g_cal`` at the sample's joints: with a capture the live part corrects what the
calibration missed, without one (never, or after the timeout) `c` is zero and the calibrated
model alone moves the tip references. `max_offset` and `outlier` then apply to that rest.

Threads: `measure` runs on the input thread (the FK of the model copy given, a few us);
`record` and `advance` on the loop's, a few float operations per tick. They share no lock:
each hand-off is one attribute store of a new object.
"""

import collections
from dataclasses import dataclass
import math
from typing import Optional, Tuple

import numpy as np

from continuum_ctrl.control.kinematic_calibration import KinematicCalibration

#: ticks of joints kept to find those at a sample's stamp (at 500 Hz: 0.26 s)
HISTORY = 128
#: seconds of accepted samples the dropout's gap map is fitted to (a 0.2 Hz circle's turn),
#: samples kept at most for it, and the fewest it is fitted from
FIT_SECONDS, FIT_SAMPLES, FIT_LEAST = 5.0, 2048, 10
#: the ridge of the gap map's slope, m: the tip's spread below which the slope is shrunk
FIT_RIDGE = 2e-3
#: jumped samples in a row, each within `outlier` of the one before, that are taken as the
#: gap's move (42 ms at 120 Hz); a spike, or a marker swapped for a few frames, is shorter
OUTLIER_STREAK = 5
#: seconds between evaluations of the calibration's gap (a few hundred us each): at the
#: fastest tip move (0.25 m/s) the gap, a few per cent of the move, changes 0.2 mm meanwhile
CALIBRATION_PERIOD = 0.02


@dataclass(frozen=True)
class CorrectionSettings:
    """
    The `task.correction.*` settings (module doc): `bandwidth` rad/s (0: no correction).

    `timeout`, `max_age` s; `outlier`, `max_offset` m; `calibration`: the model's
    calibrated gap (`task.calibration.*`; None: none).
    """

    bandwidth: float = 2.0
    timeout: float = 3.0
    max_age: float = 0.1
    outlier: float = 0.005
    max_offset: float = 0.05
    calibration: Optional[KinematicCalibration] = None


class TipCorrection:
    """
    The correction of one task frame (module doc) for a loop of `period` s.

    `model`: a model object of the measuring thread's own (`for_thread`); `frame`: the task
    frame. Public: `offset` (3,) the correction in force (m), `accepted`, `rejected` (counts
    by reason), `fallen_back`, `events` (``(level, text)`` log lines, either thread appends,
    the loop's drains).
    """

    def __init__(self, settings: CorrectionSettings, period: float, model,
                 frame: Optional[str]):
        self.settings = settings
        self.model, self.frame = model, frame
        self.gain = 1.0 - math.exp(-settings.bandwidth * period)
        self.offset = np.zeros(3)
        self._live = np.zeros(3)            # the part measured: on top of the calibration
        self._calibrated = np.zeros(3)      # the calibration's gap at the last joints
        self._calibrated_at = -math.inf     # when it was evaluated, s
        #: the loop thread's model copy: the calibration's gap at the last joints
        self._tick_model = model.for_thread() if settings.calibration is not None else None
        self._times = np.full(HISTORY, -np.inf)
        self._joints = np.zeros((HISTORY, model.n))
        self._ticks = 0
        self._latest: Optional[Tuple[float, float, np.ndarray]] = None   # stamp, arrival, gap
        self._samples = np.full((FIT_SAMPLES, 7), np.nan)   # arrival, model's tip, gap
        self._count = 0
        self._map: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None
        self._jumped: Optional[np.ndarray] = None   # the last jumped gap refused, m
        self._streak = 0                            # jumped samples in a row that agree
        self.accepted = 0
        self.rejected = {'stale': 0, 'outlier': 0}
        self.fallen_back = False
        self.events: collections.deque = collections.deque()

    # -- the loop's thread -----------------------------------------------------------------

    def record(self, t: float, q: np.ndarray) -> None:
        """
        Keep the loop's joints `q` (model order), measured at `t` (s), for `measure`.

        `t` is the state's own stamp, not the tick's: a capture sample pairs with the joints
        measured nearest its stamp, however late either reached the loop.
        """
        slot = self._ticks % HISTORY
        self._joints[slot] = q
        self._times[slot] = t
        self._ticks += 1

    def wants_tip(self, t: float) -> bool:
        """Return whether `advance` at `t` (s) wants the model's tip: in a dropout."""
        latest = self._latest
        return latest is not None and self.settings.max_age < t - latest[1] <= \
            self.settings.timeout

    def advance(self, t: float, offset: np.ndarray, tip: Optional[np.ndarray] = None) -> None:
        """
        Move the correction one tick at `t` (s); write it into `offset` (the task's).

        `tip`: where `wants_tip`, the model's tip now (m), as the IK's target: the gap map's
        point (None: no tip reference; the gap map is held). The correction is the
        calibration's gap at the last joints recorded plus the measured part, which follows
        the measured gaps less the calibration's.
        """
        calibration = self.settings.calibration
        if calibration is not None and self._ticks and t >= self._calibrated_at + \
                CALIBRATION_PERIOD:
            self._calibrated = calibration(self._tick_model,
                                           self._joints[(self._ticks - 1) % HISTORY].copy())
            self._calibrated_at = t
        target = self._target(t, tip)
        if target is not None:
            self._live += self.gain * (target - self._live)
        if target is not None or calibration is not None:
            self.offset = self._calibrated + self._live
            offset[:] = self.offset

    def _target(self, t, tip):
        """Return what the measured part follows at `t` (None: held as it is; module doc)."""
        latest = self._latest
        if latest is None:
            return None
        age = t - latest[1]
        if age <= self.settings.max_age:
            return latest[2]
        if age <= self.settings.timeout:
            fitted = self._map
            if tip is None or fitted is None:
                return None
            center, mean, slope = fitted
            return mean + slope @ (tip - center)
        if not self.fallen_back:
            self.fallen_back = True
            alone = 'calibrated kinematics' if self.settings.calibration else 'kinematics'
            self.events.append(('warn', f'no tip measurement for {age:.3g} s (timeout '
                                        f'{self.settings.timeout:g} s): back to the '
                                        f"model's {alone} alone"))
        return np.zeros(3)

    # -- the input thread ------------------------------------------------------------------

    def measure(self, position: np.ndarray, stamp: float, now: float) -> Optional[str]:
        """
        Take a measured tip `position` (m, base frame) stamped `stamp`, arriving at `now` (s).

        Return None when accepted, else why it was rejected (counted in `rejected`).
        """
        latest = self._latest
        age = now - stamp
        if age > self.settings.max_age or (latest is not None and stamp <= latest[0]):
            return self._reject('stale', f'stamped {age:.3g} s ago (max_age '
                                         f'{self.settings.max_age:g} s) or not after the last')
        slot = int(np.argmin(np.abs(self._times - stamp)))
        if abs(self._times[slot] - stamp) > self.settings.max_age:
            return self._reject('stale', 'no joints recorded near its stamp')
        tip = self.model.frame_pose(self._joints[slot].copy(), self.frame)[:3, 3]
        gap = tip - position
        if self.settings.calibration is not None:       # the part the calibration missed
            gap -= self.settings.calibration(self.model, self._joints[slot].copy(), tip)
        size = float(np.linalg.norm(gap))
        jump = (math.inf if latest is None or now - latest[1] > self.settings.timeout
                else float(np.linalg.norm(gap - latest[2])))
        if size > self.settings.max_offset or (math.isfinite(jump) and
                                               jump > self.settings.outlier and
                                               not self._moved(gap)):
            return self._reject('outlier', f'{size * 1e3:.1f} mm from the model\'s tip, '
                                           f'{jump * 1e3:.1f} mm from the last')
        self._latest = (stamp, now, gap)
        self._jumped, self._streak = None, 0
        self._keep(now, tip, gap)
        self.accepted += 1
        if self.fallen_back:
            self.fallen_back = False
            self.events.append(('info', 'tip measurements again: correcting the kinematics'))
        return None

    def _moved(self, gap):
        """Return whether the jumped `gap` is the OUTLIER_STREAK-th in a row that agree."""
        last = self._jumped
        agrees = last is not None and float(np.linalg.norm(gap - last)) <= self.settings.outlier
        self._jumped, self._streak = gap, (self._streak + 1 if agrees else 1)
        return self._streak >= OUTLIER_STREAK

    def _keep(self, now, tip, gap):
        """Keep an accepted sample and fit the gap map to the last FIT_SECONDS (module doc)."""
        self._samples[self._count % FIT_SAMPLES] = now, *tip, *gap
        self._count += 1
        recent = self._samples[self._samples[:, 0] >= now - FIT_SECONDS]
        if len(recent) < FIT_LEAST:
            self._map = None
            return
        tips, gaps = recent[:, 1:4], recent[:, 4:7]
        center, mean = tips.mean(axis=0), gaps.mean(axis=0)
        spread = tips - center
        normal = spread.T @ spread + len(recent) * FIT_RIDGE ** 2 * np.eye(3)
        self._map = (center, mean, np.linalg.solve(normal, spread.T @ (gaps - mean)).T)

    def _reject(self, kind, reason):
        self.rejected[kind] += 1
        return f'{kind}: {reason}'

    def figures(self):
        """Return the /diagnostics figures: (key, value) pairs."""
        return [('tip_correction_mm', float(np.linalg.norm(self.offset)) * 1e3),
                ('tip_correction_fallback', int(self.fallen_back)),
                ('tip_measurements', self.accepted)] + [
            (f'rejected_tip_{kind}', count) for kind, count in self.rejected.items()]
