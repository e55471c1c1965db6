"""
`continuum-ctrl commission`'s steps without ROS: their list, the chatter watch, the files.

    guard = ChatterGuard(joints)          # the commands' chatter over the last WINDOW s
    guard.add(t, command); problem = guard.problem()      # None, or one line
    progress = Progress(STEPS); progress.line(step, elapsed)
    text = tuned_file(nominal, fitted_text, gains_text)   # one complete parameter file

The steps (apps/commission.py runs them through the controller node's topics):
1. `safe loop`: the quiet loop (config/identify_excitation.yaml's gains, the file's
   sinusoid) for SAFE_SECONDS, the "before" of the table;
2. `excitation`: the same loop through the excitation's multisine, recorded as an MCAP bag;
3. `identify`: the fit of FIT to that bag (the valves' lag and dead time included);
4. `tune`: gains for the fitted plant;
5. `verify`: the written file alone, on the file's sinusoid, the "after" of the table; when
   its commands ring (`ringing`: they vary RINGING_RATIO times as fast as the safe loop's on
   the same reference, and faster than RINGING_SPAN_RATE pressure ranges a second), the
   tuned loop gains are scaled by BACK_OFF (`backed_off`) and the file verified again, at
   most BACK_OFFS times: the fit leaves the valves' split of lag and dead time open, and the
   tuner's margins with it (docs/identification.md).
The quiet loop is the law's feed-forward through the arm's own spring (``law.passive:
reference``, gains of 1/s^2 and 1/s against the PMAs' kN/m: open loop in effect), so no
valve makes it unstable, and the commands follow the reference's smooth multisine.
"""

from dataclasses import dataclass
import copy

import numpy as np
import yaml

from continuum_ctrl.control.command_quality import (CHATTER_CUTOFF_HZ, chatter_index,
                                                    variation_rate)
from continuum_ctrl.identify.signals import window_for_cutoff
from continuum_ctrl.params.fields import flatten, nest
from continuum_ctrl.params.launch_description import CONTROLLER
from continuum_ctrl.sim.report import summary
from continuum_ctrl.params import load_yaml

#: a step stops when a command channel's chatter index over the last WINDOW s exceeds this
CHATTER_LIMIT = 0.1
#: s of commands each chatter check spans; checks come every CHECK_EVERY s
WINDOW, CHECK_EVERY = 4.0, 0.5
#: the verification rings when its commands' largest variation rate is over this many times
#: the safe loop's on the same reference, and over RINGING_SPAN_RATE. On the MuJoCo arm
#: behind 100 + 10 ms valves the safe loop's commands vary 0.64 MPa/s, gains tuned for a fit
#: that put 45 of the valves' 120 ms into dead time rang at 3.5-3.8 MPa/s (0.5-1.3 mm), and
#: the same gains halved tracked within 0.04-0.09 mm at 0.20-0.26 MPa/s (in process, lengths
#: only)
RINGING_RATIO = 2.0
#: 1/s: ... and over this share of the PMAs' pressure range per second (0-500 kPa: 1 MPa/s),
#: as a safe loop holding a pose varies by its sensor's noise alone
RINGING_SPAN_RATE = 2.0
#: a back-off's factor on the loop gains (6 dB), and the back-offs at most
BACK_OFF, BACK_OFFS = 0.5, 2
#: the gains a back-off scales: the whole loop gain, the velocity filter left alone
LOOP_GAINS = ('kp', 'kd', 'ki', 'ki_inertial')
#: where the tuner finds no gains stable over its box with the Kalman observer, the
#: observer's force noise is raised by this factor and the plant tuned again, at most
#: RECOVERIES times: the observer then trusts the lengths more than its model, and the loop's
#: margins tend to those of measured velocities (loop transfer recovery), at the price of
#: the sensor's noise in the commands. A soft arm's fit behind 113 ms of valves held no
#: gains over the default box at 0.5 N and did at 2 N, which track the soft MuJoCo arm at
#: 0.040 / 0.025 / 0.020 mm and 0.92 MPa/s (10 N: 0.050 / 0.032 / 0.021 mm at 2.5 MPa/s;
#: through the nodes, RMS from activation; docs/tuning.md)
RECOVERY, RECOVERIES = 4.0, 2
#: a step's recording must span this share of its seconds, with no gap over MAX_GAP s
COMPLETE, MAX_GAP = 0.9, 0.5
#: what `identify` fits for commissioning; with `--hold-unexcited` friction the data do not
#: pin (too few reversals, or none to tell) is left out. Left out of the fit, 6 N of PMA
#: friction on the MuJoCo arm read as a 16 % stiffer arm behind a 224 ms valve lag (true
#: 60 + 10 ms), for which no gains were stable; fitted (through the nodes): friction 5.1 N,
#: stiffness -7 %, area -12 %, 52 + 9 ms, held-out R^2 0.99
FIT = ('stiffness', 'damping', 'area', 'deadzone', 'friction', 'time_constant', 'delay')
#: the fit smooths both sides of the dynamics with a cut-off this many times the excitation's
#: top frequency: the lag shows in the phase at the excitation's own frequencies, and above
#: them the lengths' noise, through the accelerations, is all the force holds (the default
#: 0.05 s window of a lag fit passed it up to 21 Hz: held-out R^2 0.39-0.47, a 41 ms delay for
#: 10 ms on the 4-disc MuJoCo arm behind 60 ms valves)
CUTOFF_OVER_BAND = 5.0
#: the valves' dead time is rounded up by this (s) for the controller: the command's own way
#: to the valves, and a prediction short of the real latency chatters (docs/valves.md)
DELAY_ALLOWANCE = 0.005


def fit_window(excitation):
    """Return the fit's smoothing window (s) for the `excitation` overlay (a parsed file)."""
    band = excitation[CONTROLLER]['ros__parameters']['reference']['band']
    return window_for_cutoff(CUTOFF_OVER_BAND * float(band[-1]))


@dataclass(frozen=True)
class Step:
    """One step: its `name` and the wall time it is expected to take (s)."""

    name: str
    seconds: float


def steps(safe, excite, verify):
    """
    Return the steps with `safe`, `excite` and `verify` seconds of running the arm.

    The tune step's 40 s: on the MuJoCo arm behind 100 + 10 ms valves it took 36 s on this
    2-core machine (its fit, 69 + 43 ms, the longest chains the tuner meets there).
    """
    return (Step('safe loop', safe + 10.0), Step('excitation', excite + 10.0),
            Step('identify', 30.0), Step('tune', 40.0), Step('verify', verify + 10.0))


class Progress:
    """The progress line: which step runs, how long is left of it and of them all."""

    def __init__(self, plan):
        self.plan = tuple(plan)

    def line(self, index, elapsed=0.0):
        """Return the line for step `index` (0-based) `elapsed` s after it began."""
        step = self.plan[index]
        left = max(step.seconds - elapsed, 0.0)
        total = left + sum(s.seconds for s in self.plan[index + 1:])
        return (f'commission [{index + 1}/{len(self.plan)}] {step.name}: about '
                f'{_duration(left)} left of it, {_duration(total)} in all')


def _duration(seconds):
    minutes, rest = divmod(int(round(seconds)), 60)
    return f'{minutes} min {rest:02d} s' if minutes else f'{rest} s'


class StepFailed(RuntimeError):
    """A step failed: `step` (its name) and `why` (one line)."""

    def __init__(self, step, why):
        super().__init__(f'step {step!r} failed: {why}')
        self.step, self.why = step, why


class ChatterGuard:
    """
    The chatter index of the commands heard over the last WINDOW s, checked as they come.

    `joints`: the command channels' names (the commands' order). `add` takes each command
    at its send time; `problem` returns one line when some channel's share of power above
    10 Hz (control/command_quality.py) exceeds CHATTER_LIMIT, else None. It checks at most
    every CHECK_EVERY s, and only once WINDOW s of commands are in, heard at least twice as
    often as the cutoff (a recorder that fell behind and lost some waits for the next).
    """

    def __init__(self, joints, limit=CHATTER_LIMIT, window=WINDOW):
        self.joints, self.limit, self.window = list(joints), limit, window
        self.t, self.command = [], []
        self.checked = -np.inf
        self.worst = 0.0

    def add(self, t, command):
        """Add one command (n,) sent at `t` (s)."""
        if self.t and t <= self.t[-1]:
            return
        self.t.append(float(t))
        self.command.append(np.asarray(command, dtype=float))
        while self.t[-1] - self.t[0] > self.window:
            self.t.pop(0)
            self.command.pop(0)

    def problem(self):
        """Return one line naming the chattering channel, or None (module doc)."""
        if not self.t or self.t[-1] - self.checked < CHECK_EVERY or len(self.t) < 8:
            return None
        if self.t[-1] - self.t[0] < 0.9 * self.window:
            return None
        self.checked = self.t[-1]
        t = np.array(self.t)
        if np.median(np.diff(t)) >= 0.5 / CHATTER_CUTOFF_HZ:
            return None         # heard too sparsely (a recorder behind) to tell: next check
        index = np.nan_to_num(chatter_index(t, np.array(self.command)))
        worst = int(np.argmax(index))
        self.worst = max(self.worst, float(index[worst]))
        if index[worst] <= self.limit:
            return None
        return (f'the commands chatter: chatter index {index[worst]:.2f} at '
                f'{self.joints[worst]} over the last {self.window:g} s (above '
                f'{self.limit:g}); stopped, the arm has the safe command')


def incomplete(times, seconds, topic):
    """
    Return one line when the message `times` (s) of `topic` do not cover a step, else None.

    They must span COMPLETE of its `seconds` without a gap over MAX_GAP s: a recorder that
    fell behind loses messages, and a fit of what is left is refused or wrong.
    """
    times = np.sort(np.asarray(times, dtype=float))
    span = times[-1] - times[0] if times.size > 1 else 0.0
    gap = float(np.max(np.diff(times))) if times.size > 1 else np.inf
    if span >= COMPLETE * seconds and gap <= MAX_GAP:
        return None
    return (f'the recording of {topic} spans {span:.1f} s of the {seconds:g} s, its longest '
            f'gap {gap:.2g} s: the recorder fell behind (a loaded machine?); run it again')


def valves_for_controller(fitted):
    """
    Return the fitted file's tree with `output.delay` rounded up by DELAY_ALLOWANCE.

    `fitted`: identify's fitted file as a tree (values under ``/**``).
    """
    out = copy.deepcopy(fitted)
    output = out.get('/**', {}).get('ros__parameters', {}).get('output', {})
    if 'delay' in output:
        output['delay'] = round(float(output['delay']) + DELAY_ALLOWANCE, 4)
    return out


def ringing(before, after, span, ratio=RINGING_RATIO):
    """
    Return one line when `after`'s commands vary over `ratio` times `before`'s, else None.

    `before`, `after`: `tracking`'s figures of the safe loop and of the verification, on the
    same reference, their commands in Pa; `span` (Pa): the PMAs' pressure range, whose
    RINGING_SPAN_RATE per second the rate must exceed too.
    """
    rate, base = after[1][0], before[1][0]
    if not (rate > ratio * base and rate > RINGING_SPAN_RATE * span):
        return None
    return (f"the tuned loop rings: its commands vary {rate / base:.1f} times as fast as the "
            f"safe loop's on the same reference ({1e-6 * rate:.3g} against "
            f'{1e-6 * base:.3g} MPa/s)')


def backed_off(gains_text, factor=BACK_OFF):
    """Return the gains overlay `gains_text` with its LOOP_GAINS times `factor`, noted atop."""
    tree = load_yaml(gains_text)
    gains = tree[CONTROLLER]['ros__parameters']['gains']
    for key in LOOP_GAINS:
        if key in gains:
            gains[key] = (factor * np.asarray(gains[key], dtype=float)).tolist()
    comments = [line for line in gains_text.splitlines() if line.startswith('#')]
    comments.append(f'# continuum-ctrl commission: the loop gains x {factor:g}: the '
                    'verification rang')
    text = yaml.safe_dump(tree, sort_keys=False, default_flow_style=None)
    return '\n'.join(comments) + '\n' + text


def tuned_file(nominal_text, fitted_text, gains_text, header):
    """
    Return one complete parameter file: the nominal one, the fitted values, the tuned gains.

    Later wins, as with several ``--params-file``; the result runs `controller_node` alone.
    The fitted values (identify writes them under ``/**``) go into the controller's own
    section, which a node reads over ``/**``: there they win over the nominal file's, and a
    simulator given the file keeps its plant. `header`: comment lines (without '#') on top.
    """
    fitted = load_yaml(fitted_text) or {}
    tree = nest({**flatten(load_yaml(nominal_text) or {}),
                 **flatten({CONTROLLER: fitted.get('/**', {})}),
                 **flatten(load_yaml(gains_text) or {})})
    comments = ''.join(f'# {line}\n' for line in header)
    return comments + yaml.safe_dump(tree, sort_keys=False, default_flow_style=None)


def tracking(joints, t, q_des, q, command_t, command, tip=None):
    """
    Return ``{section: (rms m, max m)}`` over the second half, the commands' figures, the tip's.

    The figures: ``(largest variation rate, units/s; largest chatter index)`` over the run.
    `tip` (N,), m: the tip's error at `t` (the controller's kinematics on the measured
    joints: the model's tip, not the arm's); its ``(rms m, max m)`` over the second half, or
    None.
    """
    half = t >= t[0] + 0.5 * (t[-1] - t[0])
    errors = {name: (rms, top) for name, rms, top in summary(joints, (q - q_des)[half])}
    keep = np.concatenate(([True], np.diff(command_t) > 0.0))
    rate = variation_rate(command_t[keep], command[keep])
    share = chatter_index(command_t[keep], command[keep]) if keep.sum() > 8 else [np.nan]
    tip_figures = None if tip is None else (float(np.sqrt(np.mean(tip[half] ** 2))),
                                            float(np.max(tip[half])))
    return errors, (float(np.nanmax(rate)), float(np.nanmax(share))), tip_figures


def table(before, after):
    """Return the before/after table's lines: `before`, `after` as `tracking` returns."""
    lines = [f'{"":12s} {"before (safe loop)":>22s} {"after (tuned file)":>22s}']
    rows = [(name, before[0][name], after[0][name]) for name in before[0]]
    if before[2] is not None and after[2] is not None:
        rows.append(("tip (model's)", before[2], after[2]))
    for name, *runs in rows:
        cells = [f'{1e3 * rms:8.3f} mm RMS {1e3 * top:6.2f} max' for rms, top in runs]
        lines.append(f'{name:12s} ' + ' '.join(f'{c:>22s}' for c in cells))
    for label, k, scale, unit in (('variation', 0, 1e-6, 'MPa/s'), ('chatter', 1, 1.0, '')):
        cells = [f'{scale * run[1][k]:.3g} {unit}'.strip() for run in (before, after)]
        lines.append(f'{label:12s} ' + ' '.join(f'{c:>22s}' for c in cells))
    return lines
