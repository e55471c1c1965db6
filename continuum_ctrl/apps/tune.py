"""
`continuum-ctrl tune PARAMS.yaml`: the loop's margins over a box of plant errors, and gains.

    continuum-ctrl tune PARAMS.yaml [--poses 4] [--stiffness 0.2] [--damping 0.25]
        [--area 0.1] [--mass 0.2] [--payload KG] [--payload-frame F] [--payload-offset X Y Z]
        [--valves LAG DEAD] [--measurement-delay S] [--unstamped]
        [--velocity measured|differenced|kalman] [--position-noise M] [--force-noise N]
        [--bias-noise N] [--mode-frequency HZ] [--mode-damping Z]
        [--gain-margin DB] [--phase-margin DEG] [--delay-margin MS]
        [--kp ...] [--kd ...] [--ki ...] [--velocity-filter ...] [--no-search] [--rows N]
        [--write OUT.yaml]

The controller node's loop of the file (its model, output, valve compensation, rate, gains)
is linearized at `--poses` samples of its reference over one period (tuning.linear_loop),
with the simulator's valves (`actuator.*`, or `--valves`) as the plant's, and its margins are
printed per pose and corner of the error box, worst first (tuning.margins). Then the grid of
gains is searched (tuning.proposal) for the largest bandwidth that keeps the margins at every
pose and corner; the gains are printed as a parameter-file overlay, which `--write` saves (pass
it after PARAMS.yaml: later files win; it carries ``observer.*`` too where `--velocity` or a
`--*-noise` changed the estimator the gains are for). A line says how fast the arm topples
with no feedback against the valves' latency. The velocity path is the file's: the Kalman observer
with `observer.type: kalman` (its noises, or the `--*-noise` options; `velocity_filter` is then
unused and not searched), else the measured velocities. A rigid arm's file (effort output)
is tuned alike: no valves (its effort held over the tick; `--valves` a drive's lag), a box
of every link's mass (`--mass`, default +-0.3) and a payload at a frame (`--payload*`), and
`kp`, `kd`, `ki_inertial` proposed (tuning.search.RIGID). See docs/tuning.md.
"""

import argparse
import dataclasses
from dataclasses import dataclass
import functools
import itertools
import math
from pathlib import Path
from typing import Optional, Sequence, Tuple

import numpy as np

from continuum_ctrl.control.observer import Observer
from continuum_ctrl.apps.node_pair import controller_loop, node_pair, plant_settings
from continuum_ctrl.params import ConfigError, real_list, real_literal
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.sim.plant import ENGINES
from continuum_ctrl.tuning.engine_plant import engine_plant
from continuum_ctrl.tuning.linear_loop import (LoopOptions, Mode, toppling_rate,
                                               VELOCITY_PATHS)
from continuum_ctrl.tuning.nominal_check import file_gains
from continuum_ctrl.tuning.proposal import (best_of, corners, Design, exactly, Requirement,
                                            rigid_corners, Setup, uniform)
from continuum_ctrl.tuning.reference_poses import least_bandwidth, poses_of
from continuum_ctrl.tuning.search import every_case, Family, PMA, RIGID, search

#: the gains that may be given as explicit candidates (one value for every joint), units
GRID = {'kp': '1/s^2', 'kd': '1/s', 'ki': 'N/(m s) (rigid arms: gains.ki_inertial, 1/s^3)',
        'velocity_filter': 's'}
#: s the file's own loop holds the simulator's engine at a pose before it is linearized
HOLD = 3.0
#: the mass error's default share: PMA arms, rigid arms (links 0.7-1.3 of the URDF's: the
#: Panda's example-robot-data inertias are approximate; issue 52 measured x0.75 and x1.3)
PMA_MASS, RIGID_MASS = 0.2, 0.3
#: kg and m: a rigid arm's default payload (where the file names adapt.payload_frame) and its
#: centre in that frame, a part held 10 cm out of the hand (bench/rigid_payload.py's)
DEFAULT_PAYLOAD, PAYLOAD_OFFSET = 3.0, (0.0, 0.0, 0.1)


def held_engine(params, simulator, pose, period):
    """
    Return the DiscretePlant of the simulator's engine of `params` resting at `pose`.

    The file's own loop holds it there (its sinusoid with no amplitude, centred on the pose:
    an upright arm topples without feedback) for HOLD s; then its step is linearized.
    """
    q0 = [float(v) for v in pose.sample[0]]
    runtime, plant = node_pair(params, {'reference.center': q0, 'reference.amplitude': [0.0]},
                               {**simulator, 'initial.position': q0})
    simulate_nodes(runtime, plant, HOLD)
    return engine_plant(plant, period)


def _positive(value, key):
    if not value > 0.0:
        raise ConfigError(key, f'must be > 0, got {value}')
    return value


def _share(value, key):
    if not 0.0 <= value < 1.0:
        raise ConfigError(key, f'must be a share in [0, 1), got {value}')
    return value


def _format(rows, requirement, count):
    """Return the table of `rows` (the first `count`; 0: all) as lines."""
    lines = [f"{'pose':>4} {'t s':>5} {'stiff':>5} {'damp':>5} {'area':>5} {'mass':>5} "
             f"{'load kg':>7} {'GM dB':>6} {'low dB':>6} {'PM deg':>6} {'DM ms':>6} "
             f"{'cross Hz':>8} {'BW Hz':>6} {'chatter Hz':>10} {'ok':>3}"]
    for row in rows[:count or len(rows)]:
        m, e = row.margins, row.error
        low = 20.0 * math.log10(m.gain_low) if m.gain_low > 0.0 else -math.inf
        lines.append(f'{row.pose:>4} {row.time:>5.2f} {e.stiffness:>5.2f} {e.damping:>5.2f} '
                     f'{e.area:>5.2f} {e.mass:>5.2f} {e.payload:>7.2f} {m.gain_db:>6.2f} '
                     f'{low:>6.1f} '
                     f'{m.phase:>6.1f} {1e3 * m.delay:>6.2f} {m.crossover:>8.2f} '
                     f'{m.bandwidth:>6.2f} {m.chatter:>10.1f} '
                     f"{'yes' if requirement.shortfall(m) >= 1.0 else 'NO':>3}")
    if count and len(rows) > count:
        lines.append(f'... {len(rows) - count} more rows, each with larger margins')
    return lines


def overlay(gains, joints, observer=None):
    """
    Return the parameter-file overlay of `gains` (one value per joint) as YAML text.

    An integral in acceleration units is ``gains.ki_inertial``, with ``gains.ki`` 0 (the
    two units of one integral exclude each other). `observer`: the ``observer.*`` keys the
    gains were designed with where the file has others (`observer_change`), or None.
    """
    def values(array):
        return real_list(np.broadcast_to(array, (n,)))
    n = len(joints)
    integral = ([f'      ki: {values(0.0)}', f'      ki_inertial: {values(gains.ki)}']
                if gains.inertial else [f'      ki: {values(gains.ki)}'])
    estimator = ['    observer:'] + [
        f'      {key}: {value if isinstance(value, str) else real_literal(value)}'
        for key, value in observer.items()] if observer else []
    return '\n'.join([
        'continuum_controller:',
        '  ros__parameters:',
        f'    velocity_filter: {real_literal(gains.velocity_filter)}', *estimator,
        '    gains:',
        f'      kp: {values(gains.kp)}',
        f'      kd: {values(gains.kd)}', *integral, ''])


def noise_options(args):
    """Return the observer's noises the options `args` give, by key (None: the file's)."""
    return {f'{name}_noise': getattr(args, f'{name}_noise')
            for name in ('position', 'force', 'bias')}


def observer_change(args, settings, observer):
    """
    Return the ``observer.*`` keys the tuner's loop has and the file has not ({}: none).

    `observer`: the Setup's (None: velocities measured or differenced). The options
    ``--velocity`` and ``--*-noise`` change the estimator the gains are designed with, so an
    overlay of those gains must carry it.
    """
    if observer is None:
        return {'type': 'none'} if settings.observer.kind == 'kalman' else {}
    given = any(value is not None for value in noise_options(args).values())
    if settings.observer.kind == 'kalman' and not given:
        return {}
    chosen = observer.settings
    return {'type': 'kalman', 'position_noise': chosen.position_noise,
            'force_noise': chosen.force_noise, 'bias_noise': chosen.bias_noise}


def summary(label, rows, requirement):
    """Return one line: each margin's smallest value over `rows`, and whether all meet them."""
    margins = [row.margins for row in rows]
    return (f'{label}: smallest GM {min(m.gain_db for m in margins):.2f} dB, PM '
            f'{min(m.phase for m in margins):.1f} deg, DM '
            f'{1e3 * min(m.delay for m in margins):.2f} ms, bandwidth '
            f'{min(m.bandwidth for m in margins):.2f} Hz; '
            f"{'meets' if requirement.shortfall(margins[0]) >= 1.0 else 'does NOT meet'} "
            f'GM {requirement.gain_db:g} dB, PM {requirement.phase:g} deg, DM '
            f'{1e3 * requirement.delay:g} ms, bandwidth {requirement.bandwidth:g} Hz '
            'everywhere')


def _arguments(argv):
    parser = argparse.ArgumentParser(prog='continuum-ctrl tune',
                                     description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('params', nargs='+',
                        help='parameter file(s) of the controller and simulator nodes (later '
                             'files win)')
    parser.add_argument('--poses', type=int, default=4,
                        help='reference samples over one period (default 4)')
    for name, default in (('stiffness', 0.2), ('damping', 0.25), ('area', 0.1)):
        parser.add_argument(f'--{name}', type=float, default=default,
                            help=f'PMA arms: plant {name} error, a share (default '
                                 f'+-{default:g})')
    parser.add_argument('--mass', type=float,
                        help='plant mass error, a share: every link alike (default +-0.2 on '
                             'PMA arms, +-0.3 on rigid arms)')
    parser.add_argument('--payload', type=float,
                        help='rigid arms: a payload the model lacks, kg, in the box with none '
                             '(default 3 where the file names adapt.payload_frame, else 0)')
    parser.add_argument('--payload-frame',
                        help="rigid arms: the URDF frame carrying it (default: the file's "
                             'adapt.payload_frame)')
    parser.add_argument('--payload-offset', type=float, nargs=3, default=list(PAYLOAD_OFFSET),
                        metavar=('X', 'Y', 'Z'),
                        help="rigid arms: its centre in that frame, m (default 0 0 0.1: a "
                             "part 10 cm out of the hand)")
    parser.add_argument('--plant', choices=('model', 'engine'), default='model',
                        help="the controller's model with the error box (default), or the "
                             "simulator's engine linearized (its own mismatch; of the box, "
                             'only the area applies)')
    parser.add_argument('--engine', choices=ENGINES,
                        help="with --plant engine: the simulator's engine (default: the "
                             "file's)")
    parser.add_argument('--valves', type=float, nargs=2, metavar=('LAG', 'DEAD'),
                        help="the plant's valve lag and dead time, s (default: the "
                             "simulator's actuator.*, else the controller's output.*; rigid "
                             'arms: a lag of the drives, default none)')
    parser.add_argument('--measurement-delay', type=float, default=0.0,
                        help='age of the measurement, s, in whole control periods (default 0)')
    parser.add_argument('--unstamped', action='store_true',
                        help='the controller does not know the age (no stamp): it predicts '
                             'from the receive time')
    parser.add_argument('--velocity', choices=VELOCITY_PATHS,
                        help="velocities measured, positions differenced, or the Kalman "
                             "observer (default: 'kalman' with the file's observer.type "
                             "kalman, else 'measured')")
    for name, unit in (('position', 'm or rad'), ('force', 'N or N m'),
                       ('bias', 'N/s^0.5')):
        parser.add_argument(f'--{name}-noise', type=float,
                            help=f"with the observer: its {name}_noise, {unit} (default: the "
                                 "file's observer.*)")
    parser.add_argument('--mode-frequency', type=float, default=0.0,
                        help='Hz of an unmodelled mode per PMA before the arm (default 0: '
                             'none; docs/tuning.md)')
    parser.add_argument('--mode-damping', type=float, default=0.1,
                        help="the mode's damping ratio (default 0.1)")
    parser.add_argument('--gain-margin', type=float, default=6.0, help='dB (default 6)')
    parser.add_argument('--phase-margin', type=float, default=25.0, help='deg (default 25)')
    parser.add_argument('--delay-margin', type=float, default=4.0, help='ms (default 4)')
    parser.add_argument('--bandwidth', type=float,
                        help='Hz, the least bandwidth of the search (default: twice the '
                             "reference's fastest frequency, else 0.5)")
    for name, unit in GRID.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=float, nargs='+',
                            help=f'candidate values, {unit}: the combinations are assessed '
                                 "instead of the continuous search (the others: the file's)")
    parser.add_argument('--no-search', action='store_true',
                        help="assess the file's gains only")
    parser.add_argument('--rows', type=int, default=12,
                        help='table rows printed, worst first (0: all; default 12)')
    parser.add_argument('--write', type=Path, help='write the proposed gains to this file')
    return parser.parse_args(argv)


def file_observer(loop, **noises):
    """
    Return the Kalman Observer of `loop` (a ControlLoop), the `noises` not None overriding.

    `noises`: position_noise (m or rad), force_noise (N or N m), bias_noise (N/s^0.5); the
    gain solved where the loop solves it, the middle of the joint limits (0: unbounded).
    """
    for key, value in noises.items():
        if value is not None and not (value > 0.0 or key == 'bias_noise' and value == 0.0):
            raise ConfigError(f"--{key.replace('_', '-')}", f'must be > 0, got {value}')
    settings = dataclasses.replace(loop.settings.observer, kind='kalman',
                                   **{k: v for k, v in noises.items() if v is not None})
    if not any(loop.settings.compensation):
        raise ConfigError('--velocity', "'kalman' is driven by the valve model: needs "
                                        'output.time_constant or output.delay')
    return Observer.at_middle(loop.model, settings, loop.period)


def _check_arguments(args):
    """Refuse out-of-range plant errors, poses, margins and grid values (ConfigError)."""
    for key in ('stiffness', 'damping', 'area', 'mass'):
        if getattr(args, key) is not None:
            _share(getattr(args, key), f'--{key}')
    if args.payload is not None and args.payload < 0.0:
        raise ConfigError('--payload', f'must be >= 0 kg, got {args.payload}')
    if args.poses < 1:
        raise ConfigError('--poses', f'must be >= 1, got {args.poses}')
    for key in ('gain_margin', 'phase_margin', 'delay_margin'):
        _positive(getattr(args, key), f"--{key.replace('_', '-')}")
    if args.bandwidth is not None:
        _positive(args.bandwidth, '--bandwidth')
    for name in GRID:
        for value in getattr(args, name) or ():
            (_positive if name != 'velocity_filter' else _share)(
                value, f"--{name.replace('_', '-')}")
    given = [f"--{name.replace('_', '-')}" for name in GRID if getattr(args, name)]
    if args.no_search and given:
        raise ConfigError('--no-search', f"rates the file's own gains, and {', '.join(given)} "
                                         f'are candidates of a search: to rate other gains, '
                                         f'put them in an overlay file after PARAMS.yaml')


def _header(args, loop, engine, valves, velocity, observer, mode, cases):
    """Return the line that says what the tuner linearizes (`engine` None: the model plant)."""
    settings, period = loop.settings, loop.period
    return (f"{' '.join(map(str, args.params))}: {loop.model.n} PMAs at {1.0 / period:g} Hz; "
            'plant '
            + (f'the {engine} engine linearized, ' if engine else '') + 'valves '
            f'{valves[0]:g} s lag, {valves[1]:g} s dead time; compensation '
            f'{settings.compensation[0]:g} s, {settings.compensation[1]:g} s; measurement '
            f"{args.measurement_delay * 1e3:g} ms old{' (unstamped)' if args.unstamped else ''}"
            f', velocity {velocity}'
            + (f' (noises {observer.settings.position_noise:g}, '
               f'{observer.settings.force_noise:g}, {observer.settings.bias_noise:g}'
               + (', the bias cancelled' if observer.settings.cancel_bias else '') + '); '
               if observer else '; ')
            + (f'mode {mode.frequency:g} Hz, damping {mode.damping:g}; ' if mode else '')
            + f'errors stiffness +-{args.stiffness:g}, damping +-{args.damping:g}, area '
            f'+-{args.area:g}, mass +-{args.mass:g}: {cases} cases x {args.poses} poses')


def _rigid_header(args, loop, valves, velocity, payload, cases):
    """Return the line that says what the tuner linearizes, for a rigid arm."""
    frame, offset = payload
    return (f"{' '.join(map(str, args.params))}: {loop.model.n} joints at "
            f'{1.0 / loop.period:g} Hz, effort held over the tick; drives {valves[0]:g} s '
            f'lag, {valves[1]:g} s dead time; measurement {args.measurement_delay * 1e3:g} ms '
            f'old; velocity {velocity} through a {loop.settings.velocity_filter:g} s filter; '
            f'errors mass +-{args.mass:g} (every link), payload 0 or {args.payload:g} kg'
            + (f' at {frame} {list(offset)} m' if args.payload else '')
            + f': {cases} cases x {args.poses} poses')


def _rigid_box(args, loop):
    """Fill the rigid defaults of `args`; return ((frame, offset) of the payload, errors)."""
    adapt = loop.settings.adapt
    frame = args.payload_frame or (adapt[0] if adapt else None)
    if args.payload is None:
        args.payload = DEFAULT_PAYLOAD if frame else 0.0
    if args.payload and frame not in loop.model.frame_names():
        raise ConfigError('--payload-frame', f'must name a frame of the URDF to carry '
                                             f'--payload, got {frame!r}')
    if args.mass is None:
        args.mass = RIGID_MASS
    return (frame, tuple(args.payload_offset)), rigid_corners(args.mass, args.payload)


def _setup(args):
    """Return ``(Setup, errors, header line, ControlLoop)`` of the options `args`."""
    loop = controller_loop(args.params, check=False)    # gains configure refuses, tuned
    plant = plant_settings(args.params, {'engine': args.engine} if args.engine else None)
    settings, period = loop.settings, loop.period
    rigid = settings.actuation is None
    if np.ndim(settings.kp) != 1 or np.ndim(settings.kd) != 1:
        raise ConfigError('gains.kp', 'the tuner takes diagonal gains (n values)')
    if rigid and args.plant == 'engine':
        raise ConfigError('--plant', "'engine' linearizes a PMA arm's simulator; a rigid arm's "
                                     'plant is its model with the mass and payload box')
    valves = tuple(args.valves) if args.valves else (
        (0.0, 0.0) if rigid else
        plant.actuator[:2] if any(plant.actuator[:2]) else settings.compensation)
    for value in valves:
        if value < 0.0:
            raise ConfigError('--valves', f'must be >= 0 s, got {value}')
    ticks = args.measurement_delay / period
    if args.measurement_delay < 0.0 or abs(ticks - round(ticks)) > 1e-6:
        raise ConfigError('--measurement-delay', f'must be whole control periods of '
                                                 f'{period:g} s, got {args.measurement_delay}')
    mode = None
    if args.mode_frequency:
        _positive(args.mode_frequency, '--mode-frequency')
        mode = Mode(args.mode_frequency, _positive(args.mode_damping, '--mode-damping'))
    velocity = args.velocity or ('kalman' if settings.observer.kind == 'kalman'
                                 else 'measured')
    observer = file_observer(loop, **noise_options(args)) if velocity == 'kalman' else None
    options = LoopOptions(period, valves, int(round(ticks)), not args.unstamped, velocity,
                          mode)
    poses = poses_of(loop, plant.initial, args.poses)
    if rigid:
        payload, errors = _rigid_box(args, loop)
        setup = Setup(loop.model, None, settings.compensation, period, poses, options,
                      settings.passive, payload=payload)
        return setup, errors, _rigid_header(args, loop, valves, velocity, payload,
                                            len(errors)), loop
    if args.mass is None:
        args.mass = PMA_MASS
    engines = None
    if args.plant == 'engine':
        if args.valves or mode:
            raise ConfigError('--plant', "'engine' runs the simulator's own valves and modes: "
                                         'no --valves or --mode-frequency')
        if settings.reference.kind != 'sinusoid':
            raise ConfigError('--plant', "'engine' holds the arm with a sinusoid reference")
        simulator = {'engine': args.engine} if args.engine else {}
        engines = [held_engine(args.params, simulator, pose, period) for _, pose in poses]
        args.stiffness = args.damping = args.mass = 0.0
    setup = Setup(loop.model, settings.actuation, settings.compensation, period, poses,
                  options, settings.passive, engines, observer)
    errors = corners(args.stiffness, args.damping, args.area, args.mass)
    return setup, errors, _header(args, loop, plant.engine if engines else None, valves,
                                  velocity, observer, mode, len(errors)), loop


@dataclass(frozen=True)
class Tuning:
    """
    What `tune_file` found.

    Its `header` line, the file's gains (`current`, a Design) and the `proposal` (a Design;
    None with `no_search`); `joints` the file's joint names; `toppling` how fast the plant
    (the model's, or the engine linearized) leaves the reference's poses with no feedback (1/s:
    the nominal arm's, the box's worst; linear_loop.toppling_rate) and `latency` the plant
    valves' lag plus dead time (s); `estimator` the Kalman observer's settings the gains were
    designed with (None: velocities measured or differenced) and `observer` the
    ``observer.*`` keys of it the file lacks (`observer_change`).
    """

    header: str
    current: Design
    proposal: Optional[Design]
    joints: Sequence[str]
    toppling: Tuple[float, float]
    latency: float
    estimator: Optional[object]
    observer: dict

    def toppling_line(self):
        """Return one line: how fast the arm topples unheld, against the valves' latency."""
        nominal, worst = self.toppling
        if worst == 0.0:
            return 'with no feedback the arm stays at its poses (no mode of the plant grows)'
        latency = self.latency
        line = (f'with no feedback the arm leaves its poses at up to {nominal:.2f} 1/s '
                f"({worst:.2f} 1/s at the error box's worst): the loop holds it up")
        if latency == 0.0:
            return line
        return (f"{line}; times the actuators' {1e3 * latency:.0f} ms of lag and dead time: "
                f'{nominal * latency:.2f} ({worst * latency:.2f}), the less margin the larger '
                '(docs/tuning.md)')

    def overlay(self):
        """Return the proposal as parameter-file YAML text, its margins in a comment atop."""
        design = self.proposal
        return (f'# continuum-ctrl tune: {summary("margins", design.rows, design.requirement)}'
                '\n' + overlay(design.gains, self.joints, self.observer))


def tune_file(params, **options):
    """
    Return the Tuning of the parameter file(s) `params`: the file's margins and a proposal.

    The library entry point of `continuum-ctrl tune` (commissioning calls it): `options` are
    the command's, by their Python names (``poses=4, valves=(0.06, 0.01), area=0.1,
    velocity='kalman', gain_margin=6.0, kp=[...], no_search=True``, ...), their defaults
    the command's. Without `kp`, `kd`, `ki`, `velocity_filter` the search is continuous
    (tuning.search); with any of them, their combinations are the candidates. A bad option
    raises ConfigError naming it.
    """
    args = _arguments([str(p) for p in np.atleast_1d(params)])
    for key, value in options.items():
        if key not in vars(args) or key == 'params':
            raise ConfigError(key, 'is not an option of the tuner')
        setattr(args, key, value)
    _check_arguments(args)
    setup, errors, header, loop = _setup(args)
    settings = loop.settings
    requirement = Requirement(args.gain_margin, args.phase_margin, 1e-3 * args.delay_margin,
                              args.bandwidth or least_bandwidth(settings.reference))
    shipped = file_gains(settings)
    ranges = PMA if settings.actuation is not None else RIGID
    rows = every_case(setup, shipped, errors, requirement, ranges)
    current = Design(shipped, exactly(setup, shipped, errors, requirement, rows), requirement)
    rates = [[toppling_rate(setup.plant(p, error), setup.period) for error in errors]
             for p in range(len(setup.poses))]
    toppling = (max(at[0] for at in rates), max(max(at) for at in rates))
    found = functools.partial(Tuning, header, current, joints=settings.joints,
                              toppling=toppling, latency=sum(setup.options.valves),
                              estimator=setup.observer and setup.observer.settings,
                              observer=observer_change(args, settings, setup.observer))
    if args.no_search:
        return found(None)
    if any(getattr(args, name) for name in GRID):
        defaults = (float(np.mean(settings.kp)), float(np.mean(settings.kd)),
                    float(np.mean(shipped.ki)), settings.velocity_filter)
        grid = [getattr(args, name) or [value] for name, value in zip(GRID, defaults)]
        if setup.observer:          # the velocity filter is not in the observer's loop
            grid[3] = [settings.velocity_filter]
        proposal = best_of(setup, [uniform(setup.model, *values, inertial=shipped.inertial)
                                   for values in itertools.product(*grid)],
                           errors, requirement)
    else:
        start, w0 = Family.of(shipped, ranges)
        if ranges.inertial and not shipped.inertial:    # ki in force units: ki_inertial
            start = dataclasses.replace(start, ratio=math.sqrt(RIGID.ratio[0] * RIGID.ratio[1]))
        proposal = search(setup, errors, requirement, start, w0, rows)
    return found(proposal)


def main(argv=None):
    """
    Print the margins of the file's gains and of the proposed ones.

    Return 0 when the proposal meets the requirement everywhere, else 1 (it is still printed
    and, when it is stable everywhere, written with what it misses atop).
    """
    args = _arguments(argv)
    tuning = tune_file(args.params, **{k: v for k, v in vars(args).items()
                                       if k not in ('params', 'rows', 'write')})
    print(tuning.header)
    print(tuning.toppling_line())
    current = tuning.current
    print('\n'.join(_format(current.rows, current.requirement, args.rows)))
    print(summary("the file's gains", current.rows, current.requirement))
    design = tuning.proposal
    if design is None:
        return 0
    print('\n'.join(_format(design.rows, design.requirement, args.rows)))
    print(summary('proposed', design.rows, design.requirement))
    if design.dropped:
        print(f'no gains searched hold the arm at {len(design.dropped)} errors of the box, '
              'left out (stiffness, damping, area, mass): ' + ', '.join(
                  f'({e.stiffness:g}, {e.damping:g}, {e.area:g}, {e.mass:g})'
                  for e in design.dropped))
    if not design.stable:
        print('the best gains found are unstable at some pose or plant error: nothing '
              'written; narrow the error box or measure the plant (docs/tuning.md)')
        return 1
    if not design.met:
        print(f"the best gains found miss the {', '.join(design.missed)} margin: they have "
              'the largest margins the search reached')
    text = tuning.overlay()
    print(text, end='')
    if args.write:
        args.write.write_text(text)
        print(f'wrote {args.write}')
    return 0 if design.met else 1
