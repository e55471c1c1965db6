"""
The configure check: the file's gains against the file's own plant, the nominal arm.

    line = check_gains(loop)    # None, or one warning line; ConfigError: predicted unstable

The tuner's nominal case, cheaply, for both kinds of arm: the loop of `loop` (a ControlLoop:
its model, gains, integral, observer, valve compensation, rate) linearized at CHECK_POSES
samples of its reference, with no plant error and margins from the loci at CHECK_POINTS
frequencies. A PMA arm's plant valves are the controller's own `output.time_constant` and
`output.delay` (the file's best knowledge of them); a rigid arm's effort is held over the
tick (no valves), its velocities measured through the file's `velocity_filter`, its integral
``gains.ki`` (force units) or ``gains.ki_inertial`` (through M(q)).

Margins below WARN: one warning line that names them and points to `continuum-ctrl tune`
(behind 60 ms valves the shipped PMA gains keep 0.3 dB, behind 100 ms none;
docs/tuning.md). A loop predicted unstable beyond a tolerance is refused (ConfigError, one
line): the node stays unconfigured before the arm moves (the Panda with ``gains.ki`` 200
N m/(rad s) at kp 100, kd 20 swung to 3.5 rad; issue 52). The tolerance (`REFUSE_DB`) is how
far the loop gain must fall (or rise) for the loop to turn stable:

- rigid arms: none. Their linear loop is the rigid body's own, exact but for the clamps;
- PMA arms: 6 dB, a factor of 2. The valve model makes the linear loop pessimistic by
  0.6-2.3 dB behind 60 ms valves against runs in process, and loops near the line are run on
  purpose: the former identification loop (kp 700, kd 20, a 20 ms velocity filter, issue 48)
  needs 5.9 dB less gain; behind its file's own valves (20 + 10 ms) it chatters (4.9 mm,
  3.2 MPa/s on the builtin arm; quiet behind the simulator's 20 + 5 ms), and the guard of
  the excitation is tested on it. The shipped file behind 100 ms valves needs 1 dB (it runs
  quiet, 0.06 mm) and kp 1000 there 2.7 dB (lost, 13 mm): warned; kp 1500 there 6.3 dB
  (lost) and kp 2000 more than 26 dB: refused.

Loops the tuner does not model (full gain matrices) are not checked.
"""


import numpy as np

from continuum_ctrl.control.observer import Observer
from continuum_ctrl.params import ConfigError
from continuum_ctrl.tuning.linear_loop import Gains, LoopOptions, LoopSystem, PlantError, Pose
from continuum_ctrl.tuning.margins import loop_margins, spectral_radius
from continuum_ctrl.tuning.proposal import Requirement, Setup
from continuum_ctrl.tuning.reference_poses import poses_of

#: the margins below which configure warns: gain (dB), phase (deg), delay (s). The tuner's
#: gains behind 60 ms valves keep 1.6 dB, 14 deg here and track the arm (docs/tuning.md)
WARN = Requirement(gain_db=1.0, phase=10.0, delay=0.002)
#: reference samples over one period, and frequencies of the loci
CHECK_POSES, CHECK_POINTS = 2, 120
#: dB the loop gain must fall (or rise) by, at least, to turn a loop predicted unstable
#: stable before configure refuses it: (PMA arms, rigid arms); see the module doc
REFUSE_DB = (6.0, 0.0)


def file_gains(settings):
    """Return the Gains of `settings` (ControllerSettings): its integral in its own units."""
    return Gains(settings.kp, settings.kd, settings.integral_gain, settings.velocity_filter,
                 settings.ki_inertial is not None)


def _setup(loop):
    """Return the nominal Setup of `loop`: its own valves as the plant's (None: unchecked)."""
    settings = loop.settings
    if np.ndim(settings.kp) != 1 or np.ndim(settings.kd) != 1:
        return None
    bounded = np.isfinite(loop.low) & np.isfinite(loop.high)      # else the middle is 0
    middle = np.where(bounded, 0.5 * (np.where(bounded, loop.low, 0.0)
                                      + np.where(bounded, loop.high, 0.0)), 0.0)
    if settings.reference.needs_task_space:         # no IK at configure: the middle, at rest
        poses = [(0.0, Pose.of(loop.model, (middle, np.zeros_like(middle),
                                            np.zeros_like(middle))))]
    else:
        poses = poses_of(loop, middle, CHECK_POSES)
    kalman = settings.observer.kind == 'kalman' and any(settings.compensation)
    # its own Observer, its gain solved where the loop's is (the linearization moves its state)
    observer = Observer.at_middle(loop.model, settings.observer, loop.period) if kalman else None
    valves = settings.compensation if settings.actuation is not None else (0.0, 0.0)
    options = LoopOptions(loop.period, valves, velocity='kalman' if kalman else 'measured')
    return Setup(loop.model, settings.actuation, settings.compensation, loop.period, poses,
                 options, settings.passive, None, observer)


def _systems(loop):
    """Return the nominal LoopSystems of `loop` at its check poses (None: unchecked)."""
    setup = _setup(loop)
    if setup is None:
        return None
    controllers = setup.controllers(file_gains(loop.settings)).values()
    return [LoopSystem.build(pose, control, PlantError(), setup.options)
            for (_, pose), control in zip(setup.poses, controllers)]


def _clearly_unstable(system, tolerance_db):
    """Return whether `system` stays unstable with its loop gain `tolerance_db` lower or higher."""
    if tolerance_db <= 0.0:
        return True
    factor = 10.0 ** (tolerance_db / 20.0)
    return all(spectral_radius(system.folded.closed(k)) >= 1.0 for k in (1.0 / factor, factor))


def _plant_words(settings):
    """Return the words naming the plant the check assumes."""
    if settings.actuation is None:
        filtered = settings.velocity_filter
        return ('the nominal arm (effort held over the tick, velocities measured'
                + (f' through a {filtered:g} s filter)' if filtered else ')'))
    return (f'the nominal arm behind the valves output.time_constant '
            f'{settings.compensation[0]:g} s, output.delay {settings.compensation[1]:g} s')


def check_gains(loop):
    """
    Return None, or the warning line of `loop`'s nominal margins (module doc).

    Raises ConfigError ('gains') for gains predicted unstable beyond REFUSE_DB.
    """
    systems = _systems(loop)
    if systems is None:
        return None
    s = loop.settings
    found = [loop_margins(system, exact=False, points=CHECK_POINTS) for system in systems]
    worst = min(range(len(found)), key=lambda i: WARN.score(found[i]))
    margins, plant = found[worst], _plant_words(s)
    if not margins.stable:
        what = (f'the gains are predicted unstable on {plant}: a pole at {margins.radius:.4f} '
                f'per tick, {margins.chatter:.1f} Hz')
        tolerance = REFUSE_DB[s.actuation is None]
        if _clearly_unstable(systems[worst], tolerance):
            beyond = (f', and still with the loop gain {tolerance:g} dB lower or higher'
                      if tolerance else '')
            raise ConfigError('gains', f'{what}{beyond}: refused before the arm moves; lower '
                                       'them or run `continuum-ctrl tune` (docs/tuning.md)')
        return (f'{what}: the arm may chatter or be lost; run `continuum-ctrl tune` '
                '(docs/tuning.md)')
    if not WARN.missed(margins):
        return None
    return (f'the gains have little margin on {plant}: GM {margins.gain_db:.1f} dB, PM '
            f'{margins.phase:.0f} deg, DM {1e3 * margins.delay:.1f} ms (warned below '
            f'{WARN.gain_db:g} dB, {WARN.phase:g} deg, {1e3 * WARN.delay:g} ms); the arm may '
            'chatter: run `continuum-ctrl tune` (docs/tuning.md)')
