"""
`continuum-ctrl identify`: fit stiffness, damping, PMA area and dead zone to recorded runs.

    continuum-ctrl identify PARAMS.yaml DATA... [--out FITTED.yaml] [--report DIR]
        [--states-topic /joint_states] [--commands-topic /continuum_controller/commands]
        [--fit stiffness,damping,area,deadzone[,time_constant,delay]] [--per-pma]
        [--window S]

PARAMS.yaml is the nominal parameter file, read as the controller node reads it; DATA are
rosbag2 MCAP bags (directories or single .mcap files) or the demo's CSV. Prints the report;
writes the fitted parameter file to --out and the report, fitted file and held-out plot to
--report.
"""

import argparse
import sys
from pathlib import Path

from continuum_ctrl.params import ConfigError
from continuum_ctrl.identify.data import COMMANDS_TOPIC, read_run, STATES_TOPIC
from continuum_ctrl.identify.fit import DEFAULT_FIT, identify, Options
from continuum_ctrl.identify.report import fitted_yaml, text, write_report
from continuum_ctrl.identify.setup import read_setup


def _window(value):
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f'must be seconds, got {value!r}') from None
    if not seconds > 0.0:
        raise argparse.ArgumentTypeError(f'must be > 0 s, got {value!r}')
    return seconds


def parse(argv):
    """Return the parsed command line."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl identify',
                                     description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('params', help='nominal parameter file (the one the nodes take)')
    parser.add_argument('data', nargs='+', help='rosbag2 MCAP bags or .mcap files, or CSV')
    parser.add_argument('--out', help='write the fitted parameter file here')
    parser.add_argument('--report', help='write report.txt, fitted.yaml, held_out.png here')
    parser.add_argument('--states-topic', default=STATES_TOPIC)
    parser.add_argument('--commands-topic', default=COMMANDS_TOPIC)
    parser.add_argument('--fit', default=','.join(DEFAULT_FIT),
                        help='comma-separated subset of stiffness, damping, area, deadzone, '
                             f'time_constant, delay (default {",".join(DEFAULT_FIT)})')
    parser.add_argument('--per-pma', action='store_true',
                        help='one area and dead zone per PMA (default: one for all)')
    parser.add_argument('--window', type=_window, default=None,
                        help='Savitzky-Golay smoothing window, s (default 0.1; 0.05 when '
                             'time_constant or delay is fitted)')
    return parser.parse_args(argv)


def main(argv=None):
    """Run the identification; ConfigError (bad input) exits with status 2 via the CLI."""
    args = parse(sys.argv[1:] if argv is None else argv)
    setup = read_setup(args.params)
    runs = [read_run(path, setup.joints, args.states_topic, args.commands_topic)
            for path in args.data]
    fit = tuple(name.strip() for name in args.fit.split(',') if name.strip())
    if not fit:
        raise ConfigError('--fit', 'names no parameter')
    result = identify(runs, setup, Options(fit, args.per_pma, args.window))
    print(text(result, setup, args.data))
    if args.out:
        Path(args.out).write_text(fitted_yaml(result, args.data))
        print(f'wrote {args.out}')
    if args.report:
        for path in write_report(result, setup, args.data, args.report):
            print(f'wrote {path}')
    return 0
