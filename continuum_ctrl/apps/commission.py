"""
`continuum-ctrl commission PARAMS.yaml --out TUNED.yaml`: from a new arm to a tuned file.

    continuum-ctrl commission PARAMS.yaml --out TUNED.yaml [--excite 40] [--safe 10]
        [--verify 12] [--gains GAINS.yaml]

With the arm's driver running (it publishes `/joint_states` and takes
`/continuum_controller/commands`, as for the controller node), runs the controller node
through the steps of identify/commissioning.py: the quiet loop on the file's sinusoid, the
quiet loop through the excitation (recorded: TUNED.mcap beside TUNED.yaml), `identify`,
`tune` for the fitted plant, and the written file alone on the file's sinusoid (its loop
gains halved and verified again, at most twice, while its commands ring). A progress
line names the step and the time left. Every step that drives the arm watches its commands
and stops at a chatter index above 0.1. At the end it prints the before/after table and
writes TUNED.yaml (the nominal file, the fitted values and the tuned gains: a complete file
`controller_node` runs alone) and a report directory TUNED_report/ (the identification's
report and held-out plot, the runs' plots, the node logs). A step that fails says which and
why (exit status 1), keeps what it recorded, and the controller node is stopped with SIGINT,
which sends the arm its safe command. Each step is also a command of its own: `identify`,
`tune`, and the controller node with config/identify_excitation.yaml. `--gains` takes
gains (a `tune --write` overlay) instead of the tune step.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from continuum_ctrl.params import ConfigError, load_yaml
from continuum_ctrl.params.files import check_readable
from continuum_ctrl.params.launch_description import (config_path, CONTROLLER,
                                                      NodeDescription, PACKAGE)
from continuum_ctrl.identify.commissioning import (BACK_OFF, BACK_OFFS, backed_off,
                                                   ChatterGuard, FIT, fit_window, incomplete,
                                                   Progress, RECOVERIES, RECOVERY, ringing,
                                                   StepFailed, steps, table, tracking,
                                                   tuned_file, valves_for_controller)

#: the quiet loop and its excitation (identify/commissioning.py)
EXCITATION = 'identify_excitation.yaml'
#: longest wait, s, for the messages of a step's last seconds after its duration
TAIL_WAIT = 10.0
#: s allowed for the controller node to start and hear the driver
START_TIMEOUT = 60.0
#: s the arm rests on its safe command before a verification again, so that it starts from
#: rest as the first did: a ringing run stopped leaves the disc stack swinging on its
#: springs (section 1's mode, damping ratio 0.04, decays with a 2.4 s time constant)
SETTLE = 8.0
#: poses of the reference the tuner linearizes the fitted plant at
TUNE_POSES = 3


def parse(argv):
    """Return the parsed command line."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl commission',
                                     description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('params', help="the arm's nominal parameter file")
    parser.add_argument('--out', required=True, help='the tuned parameter file to write')
    for name, default, what in (('safe', 10.0, "the quiet loop on the file's sinusoid"),
                                ('excite', 40.0, 'the excitation, recorded'),
                                ('verify', 12.0, 'the tuned file on the sinusoid')):
        parser.add_argument(f'--{name}', type=float, default=default,
                            help=f's of {what} (default {default:g})')
    parser.add_argument('--gains', help='a gains overlay (as `tune --write` writes it) to '
                                        'use instead of the tune step')
    args = parser.parse_args(argv)
    for name in ('safe', 'excite', 'verify'):
        if not getattr(args, name) > 0.0:
            raise ConfigError(f'--{name}', f'must be > 0 s, got {getattr(args, name)}')
    return args


def first_warning(path):
    """Return the first WARN or ERROR line of the node log `path` (the cause), or its path."""
    lines = [line for line in Path(path).read_text(errors='replace').splitlines()
             if '[WARN]' in line or '[ERROR]' in line]
    return lines[0].split(']: ', 1)[-1].strip() if lines else f'see {path}'


def tune_gains(params, valves, out):
    """
    Return the tuner's gains overlay (YAML text) for the complete file `params`; write `out`.

    `valves`: the fitted ``(lag, dead time)``, s. The tuner's continuous search for the
    fitted plant, whose best gains are kept even where they miss a margin (the overlay's
    first line says which); where none are stable over the box with the file's Kalman
    observer, again with its force noise raised (RECOVERY, RECOVERIES; the overlay then
    carries the observer's noises). Raises StepFailed where even those are unstable.
    """
    from continuum_ctrl.apps.tune import tune_file
    options = {'valves': [float(v) for v in valves], 'poses': TUNE_POSES}
    design_of = tune_file(params, **options)
    for _ in range(RECOVERIES if design_of.estimator else 0):
        if design_of.proposal.stable:
            break
        was = design_of.estimator.force_noise
        print(f"commission: no gains stable over the tuner's error box with the observer's "
              f'force noise at {was:g} N; tuned again at {RECOVERY * was:g} N (the lengths '
              'trusted more: more margin, noisier commands)', flush=True)
        design_of = tune_file(params, force_noise=RECOVERY * was, **options)
    design = design_of.proposal
    if not design.stable:
        raise StepFailed('tune', 'the best gains the tuner found are unstable for the fitted '
                                 f'plant somewhere in its error box; {design_of.toppling_line()}')
    text = design_of.overlay()
    Path(out).write_text(text)
    return text


class Commissioning:
    """The steps' state: files, progress, what each step left (apps/commission.py doc)."""

    def __init__(self, args):
        self.args = args
        self.nominal = Path(args.params)
        self.out = Path(args.out)
        self.report = self.out.with_name(self.out.stem + '_report')
        self.bag = self.out.with_suffix('.mcap')
        self.progress = Progress(steps(args.safe, args.excite, args.verify))
        self.step = 0
        self.kept = []
        #: the nominal file's model, for the tip's error (loaded at the first step's end)
        self.model = None

    def announce(self, index, elapsed=0.0):
        """Print the progress line of step `index`."""
        self.step = index
        print(self.progress.line(index, elapsed), flush=True)

    def overlays(self):
        """Write the quiet loop's two overlays into the report directory; return their paths."""
        excitation = config_path(EXCITATION)
        tree = load_yaml(Path(excitation).read_text())
        tree[CONTROLLER]['ros__parameters'].pop('reference', None)
        safe = self.report / 'safe_loop.yaml'
        safe.write_text('# commission: the quiet loop on the file\'s own reference\n'
                        + yaml.safe_dump(tree, sort_keys=False))
        return safe, Path(excitation)

    def drive(self, name, files, seconds, bag=None):
        """Run the controller node on `files` for `seconds` from activation; its tracking."""
        from continuum_ctrl.apps.launch import start, stop
        from continuum_ctrl.apps.node_pair import command_message
        from continuum_ctrl.ros.recorder import Recorder
        from continuum_ctrl.runtime.controller_runtime import CONTROLLING

        node = NodeDescription(PACKAGE, 'controller_node', CONTROLLER,
                               tuple(str(f) for f in files))
        log_path = self.report / f'{name.replace(" ", "_")}.log'
        processes = []
        with open(log_path, 'w') as log, Recorder(bag=bag is not None, message=command_message(
                [str(f) for f in files])) as rec:
            try:
                processes += start([node], outputs=[log])
                if not rec.wait(lambda: rec.active_since is not None, START_TIMEOUT,
                                processes):
                    raise StepFailed(name, f'the controller did not go active within '
                                           f'{START_TIMEOUT:g} s: is the driver publishing '
                                           f'/joint_states? (log {log_path})')
                guard = ChatterGuard(rec.joint_names)
                problem = self._watch(rec, guard, seconds)
            finally:
                stop(processes)         # SIGINT: the node sends the safe command
                if bag is not None:
                    rec.write_bag(bag)
                    self.kept.append(bag)
            if problem:
                raise StepFailed(name, problem)
            if rec.status not in CONTROLLING:
                raise StepFailed(name, f"the controller left control (status '{rec.status}'): "
                                       f'{first_warning(log_path)}')
            return self._finish(name, rec, seconds, bag)

    def _finish(self, name, rec, seconds, bag):
        """Check the step's recording, plot it; return its tracking (identify/commissioning)."""
        from continuum_ctrl.apps.demo import align
        from continuum_ctrl.sim.report import plot

        t, q_des, q, _ = rec.arrays(since=rec.active_since)
        if bag is not None:         # what the fit reads must be whole (the table need not)
            for topic in ('/joint_states', f'/{CONTROLLER}/commands'):
                problem = incomplete(1e-9 * np.array([m[4] for m in rec.messages
                                                      if m[0] == topic]), seconds, topic)
                if problem:
                    raise StepFailed(name, problem)
        command_t = np.array([c[0] for c in rec.commands])
        command = np.array([c[1] for c in rec.commands])
        plot(self.report / f'{name.replace(" ", "_")}.png', rec.joint_names, t, q_des, q,
             align(command_t, command, t), float(np.median(np.diff(t))))
        inside = command_t >= t[0]
        return tracking(rec.joint_names, t, q_des, q, command_t[inside], command[inside],
                        self._tip(rec.joint_names, q_des, q))

    def _tip(self, joints, q_des, q):
        """Return the tip's error (N,), m, by the nominal file's kinematics; None: no tip."""
        from continuum_ctrl.models import load_model
        from continuum_ctrl.params import file_parameters
        from continuum_ctrl.sim.report import tip_frame, tip_paths

        if self.model is None:      # the controller's model alone: no fit's setup
            self.model = load_model(file_parameters(str(self.nominal), CONTROLLER)[1])
        frame = tip_frame(self.model)
        if frame is None:
            return None
        index = [joints.index(name) for name in self.model.joint_names]
        return tip_paths(self.model, frame, q_des[:, index], q[:, index])[2]

    def _watch(self, rec, guard, seconds):
        """Record for `seconds`, feeding the guard; return its problem line or None."""
        start, heard, shown = time.monotonic(), 0, time.monotonic()
        found = []

        def check():
            nonlocal heard, shown
            for t, command in rec.commands[heard:]:
                if t >= rec.active_since:   # not the safe command sent while it waited
                    guard.add(t, command)
            heard = len(rec.commands)
            if time.monotonic() - shown > 10.0:
                shown = time.monotonic()
                self.announce(self.step, shown - start)
            problem = guard.problem()
            if problem:
                found.append(problem)
            return bool(found)

        rec.run(seconds, until=check)
        if not found:
            # a loaded machine hands the recorder the last messages late: wait for them
            end = rec.active_since + seconds
            rec.run(TAIL_WAIT, until=lambda: check() or rec.states[-1][0] >= end)
        return found[0] if found else None

    def identify(self):
        """Fit the recorded bag; return the fitted file's text (StepFailed if refused)."""
        from continuum_ctrl.apps import identify
        fitted = self.report / 'fitted.yaml'
        window = fit_window(load_yaml(config_path(EXCITATION).read_text()))
        status = identify.main([str(self.nominal), str(self.bag), '--out', str(fitted),
                                '--report', str(self.report / 'identify'),
                                '--fit', ','.join(FIT), '--window', f'{window:.4g}',
                                '--hold-unexcited'])
        if status != 0:
            raise StepFailed('identify', 'the fit was refused (the lines above say why; '
                                         f'the run is kept in {self.bag})')
        return yaml.safe_dump(valves_for_controller(load_yaml(fitted.read_text())))

    def tune(self, fitted_text):
        """Return the gains overlay for the fitted plant: `--gains`, else tuned (StepFailed)."""
        if self.args.gains:
            print(f'commission: gains from {self.args.gains} (--gains), not tuned')
            return Path(self.args.gains).read_text()
        plant = self.report / 'fitted_complete.yaml'
        plant.write_text(tuned_file(self.nominal.read_text(), fitted_text, '',
                                    ['commission: the nominal file with the fitted values']))
        output = load_yaml(fitted_text)['/**']['ros__parameters']['output']
        return tune_gains(plant, (output['time_constant'], output['delay']),
                          self.report / 'gains.yaml')

    def run(self):
        """Run every step; return the before/after table's lines."""
        self.report.mkdir(parents=True, exist_ok=True)
        safe, excitation = self.overlays()
        self.announce(0)
        before = self.drive('safe loop', [self.nominal, safe], self.args.safe)
        self.announce(1)
        self.drive('excitation', [self.nominal, excitation], self.args.excite, self.bag)
        self.announce(2)
        fitted = self.identify()
        self.announce(3)
        gains = self.tune(fitted)
        self.write(fitted, gains)
        self.kept.append(self.out)
        self.announce(4)
        after = self.drive('verify', [self.out], self.args.verify)
        if not self.args.gains:
            after = self.back_off(before, after, fitted, gains)
        return table(before, after)

    def write(self, fitted, gains, scale=1.0):
        """Write the tuned file: the nominal file, the `fitted` values, the `gains`."""
        backed = f', their loop gains x {scale:g} (the verification rang)' if scale < 1.0 else ''
        self.out.write_text(tuned_file(
            self.nominal.read_text(), fitted, gains,
            [f'continuum-ctrl commission {self.nominal}: the nominal file, the values '
             f'identified from {self.bag.name} and the gains tuned for them{backed}']))

    def back_off(self, before, after, fitted, gains):
        """
        Return the verification's tracking after backing the gains off while they ring.

        At most BACK_OFFS times the loop gains are scaled by BACK_OFF, the file and the
        report's gains.yaml written again and verified again (identify/commissioning.py).
        """
        from continuum_ctrl.apps.node_pair import controller_model
        actuation = controller_model(self.out, CONTROLLER)[1].actuation
        span = float(np.min(actuation.p_max - actuation.p_min))
        for attempt in range(1, BACK_OFFS + 1):
            problem = ringing(before, after, span)
            if problem is None:
                return after
            gains = backed_off(gains)
            print(f'commission: {problem}: its loop gains x {BACK_OFF:g}, verified again',
                  flush=True)
            (self.report / 'gains.yaml').write_text(gains)
            self.write(fitted, gains, BACK_OFF ** attempt)
            time.sleep(SETTLE)
            self.announce(4)
            after = self.drive(f'verify {attempt + 1}', [self.out], self.args.verify)
        problem = ringing(before, after, span)
        if problem:
            print(f'commission: {problem}, after {BACK_OFFS} back-offs: kept; lower the gains '
                  'by hand (docs/identification.md)', flush=True)
        return after


def main(argv=None):
    """Commission the arm; 0 when done, 1 when a step failed (ConfigError: status 2)."""
    args = parse(sys.argv[1:] if argv is None else argv)
    check_readable(args.params, 'parameter file')
    if args.gains:
        check_readable(args.gains, '--gains file')
    from continuum_ctrl.apps.node_pair import check_parameter_file
    check_parameter_file(args.params, [CONTROLLER])
    work = Commissioning(args)
    began = time.monotonic()
    try:
        lines = work.run()
    except (StepFailed, ConfigError) as failure:
        step = getattr(failure, 'step', work.progress.plan[work.step].name)
        why = getattr(failure, 'why', str(failure))
        kept = ', '.join(str(p) for p in work.kept) or 'nothing'
        print(f"continuum-ctrl commission: step '{step}' failed: {why}; kept: {kept}; the "
              f'arm has the safe command', file=sys.stderr)
        return 1
    print('\n'.join(lines))
    (work.report / 'summary.txt').write_text('\n'.join(lines) + '\n')
    print(f'wrote {work.out} and {work.report}/ in {time.monotonic() - began:.0f} s')
    return 0
