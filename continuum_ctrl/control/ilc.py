"""
Learning from repetition: a feed-forward force per joint indexed by the time in the trial.

    learning = IterativeLearning(model, period)     # period: the loop's tick, s
    learning.configure(settings.ilc, kp, kd, ki, limit, lag, delay)
    learning.follow(anchored)            # each new reference (the loop's `reference` setter)
    learning.now = t; law adds learning.add(total)     # the Python tick; the compiled
    learning.record(t, at, q, q_des, qd_des)     # the compiled ticks: `ilc_force`, `ilc_record`
    learning.fade(t, until)              # each tick, after the loop's saturation guard
    learning.step()                      # off the loop thread: learn a finished trial

A reference that repeats (control/repetition.py) is learnt per period (a sinusoid, a
multisine) or per trial (waypoints sent again with the same points and times). The ticks
add ``u(t)``, the table at the time in the trial interpolated between its bins (one bin per
tick period), and record the error ``e = q_des - q`` into the trial's buffer (two buffers,
the loop writes one while the learner reads the other). After each trial, off the loop
thread, the table is updated in the frequency domain:

    U_{k+1}(w) = Q(w) (U_k(w) + gain Z(w) (1 + j w lag) e^{j w lead} E_k(w))

``Z(w) = -w^2 M + j w (D + M Kd) + K + M Kp + Ki / (j w)`` is the inverse of the closed
loop from a force to the position (the law with the passive forces at the reference,
docs/law.md), with ``M``, ``K``, ``D`` the model's at the reference's mean position:
``(1 + j w lag) e^{j w lead}`` undoes the valves' lag and the time the force takes to act,
`lead` = ``output.delay`` + ``ilc.lead`` (s). The error is that of the measured sample,
at the time it was measured, against the reference then: the observer's estimate lagged it
by 0.03 mm at 1 Hz on the MuJoCo arm, which the learning took for tracking; the sample's
noise does not repeat and is not learnt. With the model exact
the error falls by ``1 - gain`` per trial in Q's pass band; a model off by a factor ``r``
(per frequency) makes it ``|1 - gain r|`` (the lifted system, which the DFT diagonalises for
a periodic reference, test/control/test_ilc.py). Once every joint's error has stopped
falling the gain is ``ilc.settled_gain`` (`_settle`): what does not repeat is played back
less. `Q` is zero-phase: for a periodic
reference it passes the period's harmonics up to `cutoff` and blocks the rest, and the
mean where the integral holds it (``gains.ki`` > 0: two integrators of one mean would split
it arbitrarily); the DFT of
one period holds only its harmonics, so this is exact and circular (a Butterworth's leak at
the harmonics it passes, ``1 - Q``, left an error floor: 0.05 mm on the arm at 1 Hz with a
second-order one at 2.5 Hz). For a trial, padded with zeros to twice its length so the
filters act over its ends as over an open record, ``Q = 1 / (1 + (f / cutoff)^8)``, a
fourth-order Butterworth run forwards and backwards (`scipy.signal.sosfiltfilt`'s
response). What does not repeat, noise and what lies beyond `cutoff`, is not learnt. The
table is clipped to ``[-limit, limit]`` per joint.

Safe: it acts only on a repeating reference; a new one resets it (the same one, anchored
again, keeps it); the trials that overlap the reference's blend (or a tip circle's move
and ramp) are not learnt. While the loop's saturation guard holds (a push: the effort at a
bound far from the reference) the table is faded out, and comes back after (`fade`). A
disturbed trial (faded, or its RMS above ``ilc.growth`` times the best) is skipped and
pauses the learning; two disturbed running put back the best trial's table; a trial back
near the best, or two clean ones running that agree (the plant may have drifted from the
best table), resume it; growing again soon after a resume freezes it (`_clean`). Each
decision is said (the loop's log) and shown (`ilc_state`).
`ilc.file` (optional) keeps the table between runs, keyed to the reference
(`Repetition.key`): loaded when the key matches, refused with one line otherwise (that file
is then left as it is), written after each learnt trial.
"""

from dataclasses import dataclass
import os
import threading
from typing import List, Optional, Tuple

import numpy as np

from continuum_ctrl.control.repetition import Repetition, repetition
from continuum_ctrl.numerics.jit import cached_entry_point, compiled

#: `timing` entries: origin (s), period (s), bin width (s), acting (0/1), bins, periodic (0/1),
#: the share of the table added (0-1: faded while the loop's effort saturates)
ORIGIN, PERIOD, WIDTH, ACTING, BINS, PERIODIC, SHARE = range(7)
#: ilc states, as /diagnostics gives them: paused (disturbed trials skipped, resumes when a
#: trial is back near the learnt error or the error holds steady) and frozen (until the
#: reference changes)
OFF, WAITING, LEARNING, PAUSED, FROZEN = 'off', 'waiting', 'learning', 'paused', 'frozen'
#: s: the table comes back linearly over this after the loop's saturation hold ends (`fade`;
#: over 1 s, the period after a push on the MuJoCo arm was 1.5 x that with 0.5 s)
RECOVERY = 0.5
#: learnt trials after a resume within which a pause is the learning's own growth: frozen
RELAPSE = 3
#: s: the longest run of a trial's times without a recorded error that it is learnt over
#: (interpolated). Through the nodes a tick now and then takes no new state (two arrived
#: between two ticks): single bins stay empty, and the Panda lost 2 trials in 10 to a share
#: rule (90 % recorded); a starved loop leaves a hole of tens of ms, not learnt from
HOLE = 0.02
#: learnt trials per window: a joint whose in-band error over the last window is not
#: `SETTLED` times that of the window before has settled (`_settle`)
WINDOW = 5
SETTLED = 0.95


@compiled()
def ilc_force(t, timing, tables, select, total):
    """Add the table's force at `t` (s) in the trial, interpolated, times its share, to `total`."""
    elapsed = t - timing[ORIGIN]
    if timing[ACTING] == 0.0 or elapsed < 0.0 or timing[SHARE] == 0.0:
        return
    bins = int(timing[BINS])
    if timing[PERIODIC] != 0.0:
        elapsed = elapsed % timing[PERIOD]
    x = elapsed / timing[WIDTH]
    if x >= bins - 1 and timing[PERIODIC] == 0.0:
        j, k, share = bins - 1, bins - 1, 0.0
    else:
        j = int(x)
        share = x - j
        j = j % bins
        k = (j + 1) % bins
    table, part = tables[select[0]], timing[SHARE]
    for i in range(total.shape[0]):
        total[i] += part * (table[j, i] + share * (table[k, i] - table[j, i]))


@compiled()
def ilc_record(t, at, timing, q, q_des, qd_des, records, counts, trials):
    """
    Add the error of the sample `q` measured at `at` (s) to that time's bin of the record.

    The reference `q_des`, `qd_des` is the tick's, at `t`; taken back to `at` (``q_des -
    qd_des (t - at)``, m or rad): a state 2 ms old at 44 mm/s (the 1 Hz sinusoid) would
    otherwise be 0.09 mm behind, learnt away as if it were an error.

    `trials`: (the trial recorded, the last trial finished; -1: none); the first tick of a
    new trial finishes the one before and clears its buffer (trial parity).
    """
    age = t - at if 0.0 <= t - at < timing[PERIOD] else 0.0
    elapsed = t - age - timing[ORIGIN]
    if timing[ACTING] == 0.0 or elapsed < 0.0:
        return
    period, bins = timing[PERIOD], int(timing[BINS])
    if timing[PERIODIC] != 0.0:
        trial = int(elapsed // period)
        elapsed -= trial * period
    elif elapsed > period:
        if trials[0] == 0:
            trials[0], trials[1] = 1, 0
        return
    else:
        trial = 0
    buffer = trial % 2
    if trial != trials[0]:
        trials[1], trials[0] = trials[0], trial
        records[buffer, :bins, :] = 0.0
        counts[buffer, :bins] = 0.0
    j = int(elapsed / timing[WIDTH] + 0.5) % bins
    counts[buffer, j] += 1.0
    for i in range(q.shape[0]):
        records[buffer, j, i] += q_des[i] - qd_des[i] * age - q[i]


_force = cached_entry_point(ilc_force, 0.0, np.zeros(7), np.zeros((2, 1, 1)),
                            np.zeros(1, dtype=np.int64), np.zeros(1))
_record = cached_entry_point(ilc_record, 0.0, 0.0, np.zeros(7), *(np.zeros(1),) * 3,
                             np.zeros((2, 1, 1)), np.zeros((2, 1)),
                             np.zeros(2, dtype=np.int64))


@dataclass(frozen=True)
class IlcSettings:
    """`ilc.*` (control/settings.py's table): see the module; `limit` (n,) N or N m, or None."""

    enable: bool = False
    gain: float = 0.5
    settled_gain: float = 0.3
    cutoff: float = 2.5
    lead: float = 0.0
    growth: float = 1.5
    longest_period: float = 10.0
    file: str = ''
    limit: Optional[np.ndarray] = None

    @classmethod
    def of(cls, values, limit) -> 'IlcSettings':
        """Return the `ilc.*` settings of the parsed `values`; `limit`: model order or None."""
        return cls(*(values['ilc.' + name] for name in (
            'enable', 'gain', 'settled_gain', 'cutoff', 'lead', 'growth', 'longest_period',
            'file')), limit)


class IterativeLearning:
    """
    The learnt feed-forward of one control loop (see the module); arrays in model order.

    `timing`, `tables` (2, bins, n; N or N m), `select` (the table the ticks read),
    `records` (2, bins, n; the errors' sums, m or rad), `counts` (2, bins) and `trials` are
    the compiled ticks' arguments. `history`: each learnt trial's RMS error (m or rad).
    `events` collects the lines to log (the loop's supervisor's list, when given).
    """

    def __init__(self, model, period: float, events: Optional[list] = None,
                 threaded: bool = False) -> None:
        self.model, self.period, self.n = model, float(period), model.n
        self.events: list = [] if events is None else events
        self.settings = None
        self.timing = np.zeros(7)
        self.timing[SHARE] = 1.0
        self.select = np.zeros(1, dtype=np.int64)
        self.trials = np.full(2, -1, dtype=np.int64)
        self._allocate(1)
        self.repeats: Optional[Repetition] = None
        self._reset()
        self.state = OFF
        self.now = 0.0
        self._first = 0                 # the first trial past the blend
        self._inverse = None            # (M, D + M Kd, K + M Kp, Ki) at the reference
        self._inertial = False          # the integral gain is gains.ki_inertial (configure)
        self._anchored = None
        self._generation = 0
        self._load = False
        self._saving = True
        self.threaded = threaded
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self._force, self._record = _force(), _record()

    def _allocate(self, bins):
        n = self.n
        self.tables = np.zeros((2, bins, n))
        self.records = np.zeros((2, bins, n))
        self.counts = np.zeros((2, bins))

    def configure(self, settings, kp, kd, ki, limit, lag: float, delay: float,
                  inertial: bool = False) -> None:
        """
        Take the `ilc.*` settings (`IlcSettings`) and the law's diagonal gains, model order.

        `limit` (n,): the table's bound, N or N m; `lag`, `delay`: the valves' (s, 0: none);
        `inertial`: `ki` is `gains.ki_inertial` (1/s^3, the integral's force M Ki e).
        A change of table size starts the learning over.
        """
        kp, kd = (np.diag(k) if np.ndim(k) == 2 else np.asarray(k, dtype=float)
                  for k in (kp, kd))
        self._gains = (kp, kd, np.asarray(ki, dtype=float))
        self._inertial = inertial
        self.limit = np.asarray(limit, dtype=float)
        self.lag, self.delay = float(lag), float(delay)
        old, self.settings = self.settings, settings
        bins = int(np.ceil(settings.longest_period / self.period)) + 2
        if old is None or self.tables.shape[1] != bins:
            self._allocate(bins)
            self._reset()
        self._inverse = None
        if not settings.enable:
            self.timing[ACTING] = 0.0
            self.state = OFF
        elif self._anchored is not None:
            self.follow(self._anchored)
        if settings.enable and self.threaded and self._thread is None:
            self._thread = threading.Thread(target=self._work, name='ilc', daemon=True)
            self._thread.start()

    def _reset(self):
        self.tables[:] = 0.0
        self.trials[:] = -1
        self.history: List[float] = []
        self._learnt = -1               # the last trial learnt (or skipped)
        self._best: Tuple[float, Optional[np.ndarray]] = (np.inf, None)
        self._rising = 0                # disturbed trials running
        self._rising_saturated = False  # the run of disturbed trials had a faded one
        self._restored = False          # the best table was put back since the reset
        self._steady = np.inf           # paused: the last clean trial's RMS under this table
        self._since_resume = 0          # trials learnt since the last resume
        self._saturated: set = set()    # the trials `fade` faded, not yet stepped
        self._bounded = False           # the table has reached its bound (said once)
        self._bands: List[np.ndarray] = []     # the last learnt trials' in-band RMS (n,)
        self._settled = np.zeros(self.n, dtype=bool)   # joints whose error stopped falling
        self._fed = False               # a table was written since the reset (`feeding`)

    def arrays(self) -> tuple:
        """Return (timing, tables, select, records, counts, trials): the compiled ticks'."""
        return self.timing, self.tables, self.select, self.records, self.counts, self.trials

    @property
    def feeding(self) -> bool:
        """
        Tell whether a learnt (or loaded) table is fed forward: the loop's learnt stiffness holds.

        Both learn a feed-forward of the reference's repeating force; the stiffness, adapting
        over its window, moved the plant the table was learnt on. Through the nodes on the
        MuJoCo arm at 1 Hz a 1 Hz error of about 0.012 mm in sections 2 and 3 then still
        repeated in periods 8-12 (0.0013 mm by period 200); held, the 10th period's section 2
        was 0.009-0.013 mm against 0.018-0.021 (docs/ilc.md).
        """
        return self._fed and self.timing[ACTING] != 0.0

    @property
    def acting(self) -> bool:
        """Tell whether the ticks add the table and record the error."""
        return self.timing[ACTING] != 0.0

    def follow(self, anchored) -> None:
        """
        Take the loop's new reference (an `Anchored`): keep, reset or stop the learning.

        On the loop's thread: no file is read and nothing is solved here (`step` does).
        """
        self._anchored = anchored
        self._generation += 1           # a table being learnt for the last one is dropped
        settings = self.settings
        if settings is None or not settings.enable:
            return
        repeats = repetition(anchored.reference, settings.longest_period)
        timing = self.timing
        timing[ACTING] = 0.0
        self.trials[:] = -1
        self._learnt = -1
        self._saturated.clear()
        if repeats is None:
            if self.repeats is not None:
                self.events.append(('info', 'ilc: the reference does not repeat: not learning'))
            self.repeats, self.state = None, WAITING
            return
        if self.repeats is None or repeats.key != self.repeats.key:
            self._reset()
            self._inverse = None
            self._load = bool(settings.file)
            self.events.append(('info', f'ilc: learning a reference that repeats every '
                                        f'{repeats.period:.6g} s'
                                        + ('' if repeats.periodic else ' (a trial)')))
        self.repeats = repeats
        bins = int(round(repeats.period / self.period)) if repeats.periodic else \
            int(np.floor(repeats.period / self.period)) + 1
        width = repeats.period / bins if repeats.periodic else self.period
        self._first = int(np.ceil((max(anchored.blend_time - repeats.start, 0.0)
                                   + repeats.settle) / repeats.period - 1e-9))
        timing[:SHARE] = (anchored.t0 + repeats.start, repeats.period, width, 1.0, bins,
                          float(repeats.periodic))
        if self.state not in (PAUSED, FROZEN) or self._best[1] is None:
            self.state = LEARNING

    def add(self, total: np.ndarray) -> None:
        """Add the table's force at `now` (s) to `total` (N or N m): the Python tick's."""
        self._force(self.now, self.timing, self.tables, self.select, total)

    def record(self, t: float, at: float, q: np.ndarray, q_des: np.ndarray,
               qd_des: np.ndarray) -> None:
        """Record the error of `q` measured at `at` against the tick's reference at `t` (s)."""
        self._record(t, at, self.timing, q, q_des, qd_des, self.records, self.counts,
                     self.trials)

    # -- off the loop thread --------------------------------------------------------------

    def step(self) -> bool:
        """Learn the last finished trial if not yet learnt; return whether the table changed."""
        if self._load:
            self._load = False
            self._read()
        finished = int(self.trials[1])
        if not self.acting or finished < 0 or finished == self._learnt:
            return False
        self._learnt = finished
        if finished < self._first:
            return False
        error, hole = self._error(finished % 2)
        if error is None:       # ticks missed (a starved loop, states lost): said, not learnt
            self._steady = np.inf
            self.events.append(('info', f'ilc: trial {finished} not learnt from: '
                                        f'{hole * 1e3:.0f} ms of it not recorded (ticks or '
                                        'states missed)'))
            return False
        rms = float(np.sqrt(np.mean(error ** 2)))
        self.history.append(rms)
        saturated = finished in self._saturated
        self._saturated.difference_update(range(finished + 1))
        if self.state == FROZEN or self.repeats is None:
            return False
        if not self._clean(rms, saturated):
            return False
        generation = self._generation
        table = self._learnt_table(error)
        if generation != self._generation:     # the loop took a new reference meanwhile
            return False
        self._write(table)
        self._since_resume += 1
        return True

    def _error(self, buffer):
        """
        Return the finished trial's mean error per bin (bins, n) and its longest hole (s).

        The error is None where the hole (times without a recorded error, in a row) is
        longer than `HOLE`; shorter ones are interpolated over.
        """
        bins = int(self.timing[BINS])
        counts = self.counts[buffer, :bins].copy()
        sums = self.records[buffer, :bins].copy()
        filled = counts > 0.0
        empty = ~filled
        if self.timing[PERIODIC]:           # a hole may run over the period's end
            empty = np.roll(empty, -int(np.argmax(filled)))
        edges = np.diff(np.concatenate(([0], empty.astype(np.int8), [0])))
        hole = float(np.max(np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1),
                            initial=0)) * self.timing[WIDTH]
        if hole > HOLE or not np.any(filled):
            return None, hole
        index = np.arange(bins)
        error = np.empty((bins, self.n))
        period = bins if self.timing[PERIODIC] else None
        for i in range(self.n):
            error[:, i] = np.interp(index, index[filled], sums[filled, i] / counts[filled],
                                    period=period)
        return error, hole

    def fade(self, t: float, until: float) -> None:
        """
        Set the table's share at `t` (s): none until `until` (s), back over `RECOVERY` s.

        `until`: the end of the loop's saturation hold (control/saturation.py; -inf: none).
        An arm thrown far off by a push recovers under saturated effort; the learnt force,
        added there, changed its recovery (the MuJoCo arm 0.39 mm in section 3 in the period
        after, against 0.037 mm without learning). The trials it fades are not learnt from.
        Called by the loop's tick after its saturation guard: cheap when nothing is held.
        """
        share = (t - until) / RECOVERY
        if share >= 1.0:
            if self.timing[SHARE] != 1.0:
                self.timing[SHARE] = 1.0
            return
        self.timing[SHARE] = max(share, 0.0)
        self._saturated.add(int(self.trials[0]))

    def _clean(self, rms, saturated):
        """
        Tell whether to learn from a finished trial of `rms` (`saturated`: faded by `fade`).

        A disturbed trial, faded or above ``growth`` times the best, is skipped: a push's or a
        noise burst's error does not repeat, and learnt, made the next periods worse than
        without learning (1.4 mm against 0.03 mm on the MuJoCo arm). The first pauses the
        learning; two running, neither faded, also put back the best trial's table, which a
        table learnt just before the error grew may have spoilt. A clean trial (at most
        ``growth`` times the best) resumes it; so do two running, neither faded, under one
        table, whose RMS agree within ``growth`` (`_steady`): the disturbance has passed, and
        the plant has drifted from the best table (through the nodes, after a noise burst,
        the trials held at 1.8 x the best for good). Their RMS is then the best. A pause
        within `RELAPSE` learnt trials of a resume after a table was put back is the
        learning's own growth: frozen at the best table until the reference changes.
        """
        best, _ = self._best
        growth = self.settings.growth
        held = (not saturated and self.state == PAUSED and rms > growth * best
                and max(rms, self._steady) <= growth * min(rms, self._steady))
        if not saturated and (rms <= growth * best or held):
            if rms < best or held:
                self._best = (rms, self.tables[self.select[0], :int(self.timing[BINS])].copy())
            if self.state == PAUSED:
                self.state, self._since_resume = LEARNING, 0
                if held:                # the plant drifted: learnt again at the full gain
                    self._bands, self._settled[:] = [], False
                self.events.append(('info', f'ilc: the trial error holds at {rms:.3g} (the '
                                            f'trial before {self._steady:.3g}, learnt '
                                            f'{best:.3g}): learning resumed from there'
                                    if held else
                                    f'ilc: the trial error is back at {rms:.3g} '
                                    f'(learnt {best:.3g}): learning resumed'))
            self._rising, self._steady = 0, np.inf
            return True
        self._rising += 1
        self._rising_saturated = saturated or (self._rising > 1 and self._rising_saturated)
        self._steady = np.inf if saturated else rms
        if self.state == LEARNING:      # under a table that may be spoilt: not yet steady
            self.state, self._steady = PAUSED, np.inf
            why = 'the effort saturated' if saturated else f'{rms:.3g} against {best:.3g}'
            self.events.append(('info', f'ilc: a disturbed trial ({why}): not learnt from, '
                                        'learning paused'))
        if self._rising == 2 and not self._rising_saturated and self._best[1] is not None:
            relapse = self._restored and self._since_resume <= RELAPSE
            self._write(self._best[1])
            self._restored, self._since_resume, self._steady = True, 0, np.inf
            if relapse:
                self.state = FROZEN
                self.events.append(('warn', f'ilc: the trial error grew again under learning '
                                            f'to {rms:.3g} from {best:.3g}: frozen at the '
                                            "best trial's table"))
            else:
                self.events.append(('warn', f'ilc: the trial error stays at {rms:.3g} from '
                                            f"{best:.3g}: back to the best trial's table, "
                                            'learning paused'))
        return False

    def _learnt_table(self, error):
        """Return the next table (bins, n) from the trial's `error` (bins, n), m or rad."""
        settings = self.settings
        bins = int(self.timing[BINS])
        periodic = self.timing[PERIODIC] != 0.0
        size = bins if periodic else 2 * bins
        width = self.timing[WIDTH]
        table = self.tables[self.select[0], :bins]
        spectrum_u = np.fft.rfft(table, n=size, axis=0)
        spectrum_e = np.fft.rfft(error, n=size, axis=0)
        frequency = np.fft.rfftfreq(size, width)
        q_filter = np.repeat(((frequency <= settings.cutoff) if periodic else
                              1.0 / (1.0 + (frequency / settings.cutoff) ** 8))[:, None],
                             self.n, axis=1)
        if periodic:
            q_filter[0, self._gains[2] > 0.0] = 0.0     # the mean is the integral's
        inverse = self._closed_loop_inverse(frequency)
        lead = self.delay + settings.lead
        w = 2.0 * np.pi * frequency
        shift = (1.0 + 1j * w * self.lag) * np.exp(1j * w * lead)
        self._settle(np.sqrt(np.mean(np.fft.irfft(q_filter * spectrum_e, n=size,
                                                  axis=0)[:bins] ** 2, axis=0)))
        step = np.einsum('fij,fj->fi', inverse, spectrum_e) * (self.gain * shift)[:, None]
        new = np.fft.irfft(q_filter * (spectrum_u + step), n=size, axis=0)[:bins]
        self._tell_bound(np.any(np.abs(new) > self.limit, axis=0))
        return np.clip(new, -self.limit, self.limit)

    @property
    def gain(self) -> float:
        """Return the learning gain now: `ilc.gain`, or once settled the smaller `settled_gain`."""
        settings = self.settings
        return min(settings.gain, settings.settled_gain) if self._settled.all() else settings.gain

    def _settle(self, learnable):
        """
        Lower the gain to `ilc.settled_gain` once every joint's in-band error stops falling.

        `learnable` (n,): the trial's error within Q's pass band per joint, RMS (m or rad).
        What stays there once the repeating error is learnt does not repeat (the ticks'
        jitter, the sensor's noise in band): learnt at gain g it is played back the next trial,
        against a new one, and its variance grows by 2 / (2 - g) (x 1.8 at 0.9, x 1.18 at
        0.3). A joint whose mean over the last `WINDOW` learnt trials is not `SETTLED` times
        that of the window before has settled; once all have, until the reference changes or
        the learning resumes on a drifted plant (`_clean`), the gain is lower. Per joint:
        through the nodes, the MuJoCo arm's section 1 settled 8 periods before section 3.
        One gain for all: the update's error passes through Z's coupling, so unequal gains
        do not contract each joint by its own.
        """
        settings = self.settings
        if settings.settled_gain >= settings.gain or self._settled.all():
            return
        self._bands = self._bands[1 - 2 * WINDOW:] + [learnable]
        if len(self._bands) < 2 * WINDOW:
            return
        bands = np.array(self._bands)
        self._settled |= bands[WINDOW:].mean(axis=0) > SETTLED * bands[:WINDOW].mean(axis=0)
        if self._settled.all():
            self.events.append(('info', 'ilc: the learnt error has settled on every joint: '
                                        f'learning on at gain {self.gain:.3g}'))

    def _tell_bound(self, clipped):
        """
        Say once per reference that the table reached its bound at the `clipped` joints (n,).

        A clipped table has harmonics the learning did not ask for: on the MuJoCo arm at
        1 Hz, learnt up to 3.5 Hz, section 1's table met `limits.integral`'s 16.6 N and its
        error grew over 3 periods at every harmonic to 5 Hz (docs/ilc.md).
        """
        if np.any(clipped) and not self._bounded:
            self._bounded = True
            self.events.append(('warn', 'ilc: the learnt force reached ilc.limit on joints '
                                        f'{np.flatnonzero(clipped).tolist()} (model order): '
                                        'clipped there, the learning may not converge'))

    def _closed_loop_inverse(self, frequency):
        """Return Z(w) (f, n, n): the force per position of the closed loop (module doc)."""
        if self._inverse is None:
            self._inverse = self._loop_matrices()
        mass, damping, stiffness, ki = self._inverse
        w = 2.0 * np.pi * frequency
        with np.errstate(divide='ignore', invalid='ignore'):
            integral = np.where(w > 0.0, 1.0 / np.where(w > 0.0, w, 1.0), 0.0)
        return (-(w ** 2)[:, None, None] * mass + 1j * w[:, None, None] * damping + stiffness
                - 1j * integral[:, None, None] * ki)

    def _loop_matrices(self):
        """
        Return M, D + M Kd, K + M Kp and the integral's force per position at the mean pose.

        The integral's is Ki, or M Ki with `gains.ki_inertial`; the mean pose is the
        reference's mean position. A reference without a compiled sampler (a tip path,
        sampled by IK, whose state the loop's thread owns) is not sampled here: its start
        stands for its mean.
        """
        kp, kd, ki = self._gains
        model, repeats, anchored = self.model, self.repeats, self._anchored
        reference = anchored.reference
        if reference.layout() is None:
            q = anchored.q_start
        else:
            times = repeats.start + np.linspace(0.0, repeats.period, 64, endpoint=False)
            q = np.mean([reference.sample(s)[0] for s in times], axis=0)
        mass = np.asarray(model.mass_matrix(q), dtype=float)
        stiffness, damping = np.zeros((self.n, self.n)), np.zeros((self.n, self.n))
        if getattr(model, 'has_passive_forces', False):
            zero = np.zeros(self.n)
            h = 1e-6            # m or rad: the passive forces' central differences
            for j in range(self.n):
                step = np.zeros(self.n)
                step[j] = h
                stiffness[:, j] = (np.asarray(model.passive_forces(q + step, zero))
                                   - np.asarray(model.passive_forces(q - step, zero))) / (2 * h)
                damping[:, j] = (np.asarray(model.passive_forces(q, step))
                                 - np.asarray(model.passive_forces(q, -step))) / (2 * h)
        integral = mass * ki if self._inertial else np.diag(ki)
        return mass, damping + mass * kd, stiffness + mass * kp, integral

    def _write(self, table):
        """Write `table` into the table the ticks do not read, then switch them to it."""
        spare = 1 - int(self.select[0])
        bins = table.shape[0]
        self.tables[spare, :bins] = table
        self.tables[spare, bins:] = 0.0
        self.select[0] = spare
        self._fed = True
        if self.settings.file and self._saving:
            self._save(table)

    def _save(self, table):
        path = self.settings.file
        temporary = f'{path}.part.npz'
        np.savez(temporary, key=self.repeats.key, period=self.repeats.period,
                 width=self.timing[WIDTH], table=table)
        os.replace(temporary, path)

    def _read(self):
        """Load `ilc.file` where its key is the reference's; refuse it with one line if not."""
        path = self.settings.file
        self._saving = True
        if not os.path.exists(path):
            return
        try:
            with np.load(path) as saved:
                key, width, table = str(saved['key']), float(saved['width']), saved['table']
        except (OSError, ValueError, KeyError) as exc:
            self._saving = False
            self.events.append(('warn', f'ilc.file {path}: unreadable ({exc}): not loaded, '
                                        'not overwritten'))
            return
        if (key != self.repeats.key or table.shape != (int(self.timing[BINS]), self.n)
                or abs(width - self.timing[WIDTH]) > 1e-12):
            self._saving = False
            self.events.append(('warn', f'ilc.file {path}: learnt on another reference or '
                                        'period: refused, learning from zero (the file is '
                                        'kept)'))
            return
        self._write(np.clip(table, -self.limit, self.limit))
        self.events.append(('info', f'ilc.file {path}: learnt table loaded'))

    def figures(self):
        """
        Return the /diagnostics pairs: state, trials learnt, last trial's RMS, its trend, gain.

        None of them without `ilc.enable`: a loop that does not learn shows no learning figures.
        """
        if self.settings is None or not self.settings.enable:
            return []
        history = self.history
        trend = history[-1] / history[-2] if len(history) > 1 and history[-2] > 0 else 1.0
        return [('ilc_state', self.state), ('ilc_trials', len(history)),
                ('ilc_trial_rms', history[-1] if history else 0.0), ('ilc_trend', trend),
                ('ilc_gain', self.gain)]

    def _work(self):
        while not self._stop.wait(0.02):
            self.step()

    def close(self) -> None:
        """Stop the worker thread (a node's)."""
        self._stop.set()
