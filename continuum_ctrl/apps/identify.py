"""
`continuum-ctrl identify`: fit an arm's model parameters to recorded runs.

    continuum-ctrl identify PARAMS.yaml DATA... [--out FITTED.yaml] [--report DIR]
        [--states-topic /joint_states] [--commands-topic /continuum_controller/commands]
        [--fit stiffness,damping,area,deadzone[,area_slope][,friction][,time_constant,delay]]
        [--per-pma] [--window S] [--hold-unexcited] [--min-r2 R] [--force]
    continuum-ctrl identify PARAMS.yaml BAG... --fit kinematics --out calib.yaml
        [--tip-topic /mocap/tip] [--min-r2 R] [--force]

PARAMS.yaml is the nominal parameter file, read as the controller node reads it; DATA are
rosbag2 MCAP bags (directories or single .mcap files) or the demo's CSV. Continuum arms get
PMA stiffness, damping, area and dead zone (and the valves' lag, the area's slope, the PMAs'
friction); URDF arms (effort mode) their identifiable (base) inertial parameters, with ``--fit
inertia,friction`` also viscous joint friction, or with ``--fit payload --payload-frame FRAME``
a payload at FRAME beyond the model, written as the controller's ``model.payload.*`` (its own
section only: docs/rigid-payload.md) and refused like a continuum fit when the held-out data
contradict it (a joint predicted worse with it, or all joints' R^2 below --min-r2). Prints
the report; writes the fitted parameter
file to --out (continuum arms) and the report, fitted file and held-out plot to --report. A
continuum fit whose held-out R^2 is below --min-r2 for some PMA is refused: one line per such
PMA saying what the runs lacked (identify/excitation.py), no fitted file (unless --force),
exit status 1.

``--fit kinematics`` fits the model's tip kinematics instead (identify/kinematics.py): from
bags of the joint states and the captured tip (geometry_msgs/PoseStamped on --tip-topic, in
``task.base_frame``) the gap between the model's tip and the true one, as the sag under
gravity and the twist of the arm's shape at the joints, with a polynomial of the tip where it
holds out better (control/kinematic_calibration.py). It prints the held-out residual by
bearing sector and writes ``task.calibration.*`` for the controller's namespace only (the
simulator keeps its truth); a sector whose held-out R^2 is below --min-r2 refuses it (one
line each, nothing written, exit status 1).
"""

import argparse
import sys
from pathlib import Path

from continuum_ctrl.params import ConfigError
from continuum_ctrl.params.files import check_readable
from continuum_ctrl.params.launch_description import MOCAP_TOPIC
from continuum_ctrl.identify.data import check_run, COMMANDS_TOPIC, STAMPED, STATES_TOPIC
from continuum_ctrl.identify.defaults import DEFAULT_FIT, MIN_R2, RIGID_FIT


def _window(value):
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f'must be seconds, got {value!r}') from None
    if not seconds > 0.0:
        raise argparse.ArgumentTypeError(f'must be > 0 s, got {value!r}')
    return seconds


def _r2(value):
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f'must be a number, got {value!r}') from None


def parse(argv):
    """Return the parsed command line."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl identify',
                                     description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('params', help='nominal parameter file (the one the nodes take)')
    parser.add_argument('data', nargs='+', help='rosbag2 MCAP bags or .mcap files, or CSV')
    parser.add_argument('--out', help='write the fitted parameter file here')
    parser.add_argument('--report', help='write report.txt, fitted.yaml, held_out.png here')
    parser.add_argument('--states-topic', default=STATES_TOPIC)
    parser.add_argument('--tip-topic', default=MOCAP_TOPIC,
                        help='--fit kinematics: the captured tip (geometry_msgs/PoseStamped)')
    parser.add_argument('--commands-topic', default=COMMANDS_TOPIC)
    parser.add_argument('--fit', default=None,
                        help='comma-separated subset of stiffness, damping, area, deadzone, '
                             'area_slope, friction, time_constant, delay (default '
                             f'{",".join(DEFAULT_FIT)}); URDF '
                             f'arms: inertia[,friction] (default {",".join(RIGID_FIT)})')
    parser.add_argument('--payload-frame',
                        help='URDF arms, --fit payload: the frame that carries the payload')
    parser.add_argument('--per-pma', action='store_true',
                        help='one area, dead zone, slope and friction per PMA (default: one '
                             'for all)')
    parser.add_argument('--window', type=_window, default=None,
                        help='Savitzky-Golay smoothing window, s (default 0.1; 0.05 when '
                             'time_constant or delay is fitted)')
    parser.add_argument('--hold-unexcited', action='store_true',
                        help='hold a parameter the data do not pin at the file\'s value and '
                             'fit the rest (default: refuse the fit, naming it)')
    parser.add_argument('--min-r2', type=_r2, default=MIN_R2,
                        help='least held-out R^2 of every PMA for the fit to be written '
                             f'(default {MIN_R2})')
    parser.add_argument('--force', action='store_true',
                        help='write the fitted file even when the held-out data contradict it')
    return parser.parse_args(argv)


def check_inputs(args):
    """Raise ConfigError for a parameter file or run that cannot be read (reads nothing)."""
    check_readable(args.params, 'parameter file')
    for path in args.data:
        check_run(path)


def main(argv=None):
    """Run the identification; ConfigError (bad input) exits with status 2 via the CLI."""
    args = parse(sys.argv[1:] if argv is None else argv)
    check_inputs(args)
    if args.fit == 'kinematics':
        return kinematics(args)
    # the model and the fit load SciPy (2.6 s): only once the inputs are known to be there
    from continuum_ctrl.identify.data import read_run
    from continuum_ctrl.identify.excitation import refusals
    from continuum_ctrl.identify.fit import identify, Options
    from continuum_ctrl.identify.report import fitted_yaml, text, unusable, write_report
    from continuum_ctrl.identify.rigid import identify_payload, identify_rigid, payload_yaml
    from continuum_ctrl.identify.setup import read_setup, RigidSetup
    setup = read_setup(args.params)
    rigid = isinstance(setup, RigidSetup)
    payload = rigid and args.fit == 'payload'
    if rigid and args.out and not payload:
        raise ConfigError('--out', "a URDF arm's inertial parameters have no parameter-file "
                                   'keys (they live in the URDF): use --report and correct '
                                   "the URDF's <inertial> elements "
                                   '(docs/identification.md), or fit a payload (--fit '
                                   'payload)')
    if rigid and args.per_pma:
        raise ConfigError('--per-pma', 'is for continuum arms (PMA area and dead zone)')
    if rigid and args.hold_unexcited:
        raise ConfigError('--hold-unexcited', 'is for continuum arms (their PMA parameters)')
    if args.fit is None:
        fit = RIGID_FIT if rigid else DEFAULT_FIT
    else:
        fit = tuple(name.strip() for name in args.fit.split(',') if name.strip())
    if not fit:
        raise ConfigError('--fit', 'names no parameter')
    runs = [read_run(path, setup.joints, args.states_topic, args.commands_topic)
            for path in args.data]
    for run in runs:
        if run.foreign:
            print(f"{run.name}: skipped {run.foreign} joint states on '{args.states_topic}' "
                  f'that name none of the joints (another robot\'s)')
        if run.timing != STAMPED:
            print(f'{run.name}: joint states timed by {run.timing}')
    if payload:
        result, fitted, contradicted = identify_payload(runs, setup, args.payload_frame,
                                                        args.window, args.min_r2)
    elif rigid:
        result = identify_rigid(runs, setup, fit, args.window)
    else:
        options = Options(fit, args.per_pma, args.window, args.hold_unexcited)
        result = identify(runs, setup, options)
    print(text(result, setup, args.data))
    if payload:
        refused = contradicted
    else:
        refused = [] if rigid else refusals(result, setup.joints.model_names, args.min_r2)
    for line in refused:
        print(f'continuum-ctrl identify: refused: {line}', file=sys.stderr)
    write = not refused or args.force
    if args.out and write:
        problem = unusable(result)
        if problem:
            raise ConfigError('--out', problem)
        Path(args.out).write_text(payload_yaml(fitted, result, args.data) if payload
                                  else fitted_yaml(result, args.data))
        print(f'wrote {args.out}')
    if args.report:
        for path in write_report(result, setup, args.data, args.report, fitted=write):
            print(f'wrote {path}')
        if payload and write:
            Path(args.report, 'fitted.yaml').write_text(payload_yaml(fitted, result, args.data))
            print(f'wrote {Path(args.report, "fitted.yaml")}')
    if refused and not args.force:
        print(f'continuum-ctrl identify: not written{" " + args.out if args.out else ""}: '
              f'the held-out data contradict the fit for {len(refused)} '
              f'{"joints" if rigid else "PMAs"} (--force writes '
              'it anyway)', file=sys.stderr)
        return 1
    return 0


def kinematics(args):
    """Fit the kinematic calibration (``--fit kinematics``); return the exit status."""
    from continuum_ctrl.identify.kinematics import calibrate, calibration_yaml, read_tip_pairs
    from continuum_ctrl.identify.setup import task_setup
    model, joints, frame, base_frame = task_setup(args.params)
    runs = [read_tip_pairs(path, model, joints, frame, base_frame, args.states_topic,
                           args.tip_topic) for path in args.data]
    pairs = runs[0].joined(runs[1:])
    print(f'{len(pairs.tips)} still captured tips paired with joint states ({pairs.moving} '
          f'taken while the tip moved, {pairs.unpaired} without joint states near their stamp '
          'left out)')
    fit = calibrate(pairs, model, frame)
    print(fit.text())
    refused = fit.refusals(args.min_r2)
    for line in refused:
        print(f'continuum-ctrl identify: refused: {line}', file=sys.stderr)
    if refused and not args.force:
        print(f'continuum-ctrl identify: not written{" " + args.out if args.out else ""}: the '
              f'held-out data contradict the calibration in {len(refused)} of the regions '
              '(--force writes it anyway)', file=sys.stderr)
        return 1
    if args.out:
        Path(args.out).write_text(calibration_yaml(fit, args.data))
        print(f'wrote {args.out}')
    return 0
