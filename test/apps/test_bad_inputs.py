"""
Every entry point over the bad-input corpus (test/data/bad_inputs/): one error line, exit status 2.

Each entry of `CORPUS` is an input and the name its error line must give (the file or the
key); each entry of `ENTRY_POINTS` a command line and the kinds of input it reads. A new
command joins by adding a row to `ENTRY_POINTS`.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from continuum_ctrl.params.launch_description import find_executable
from support.forked import Forker
from support.unreadable import unreadable

#: exercises whole commands (model loading, node start-up) over many inputs
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parents[1] / 'data' / 'bad_inputs'
#: made by the test without read permission (git keeps no such file)
UNREADABLE = 'unreadable.yaml'
#: input -> (argument, what the error line must name, kind: any | symbolic | continuum)
CORPUS = {
    'syntax_error': (HERE / 'syntax_error.yaml', 'syntax_error.yaml', 'any'),
    'missing_file': (HERE / 'no_such_file.yaml', 'no_such_file.yaml', 'any'),
    'bad_arm_name': ('no_such_arm', 'no_such_arm', 'any'),
    'misspelt_required_key': (HERE / 'misspelt_required_key.yaml', "'model.mass_matrx'",
                              'symbolic'),
    'unknown_key': (HERE / 'unknown_key.yaml', "'model.sections.colour'", 'continuum'),
    'wrong_type': (HERE / 'wrong_type.yaml', "'model.sections.mass'", 'continuum'),
    'wrong_count': (HERE / 'wrong_count.yaml', "'model.sections.radius'", 'continuum'),
    'binary': (HERE / 'binary.yaml', 'binary.yaml', 'any'),
    'not_utf8': (HERE / 'not_utf8.yaml', 'not_utf8.yaml', 'any'),
    'directory': (HERE, 'bad_inputs', 'any'),
    'unreadable': (UNREADABLE, 'unreadable.yaml', 'any'),
    'empty_list': (HERE / 'empty_list.yaml', "'output.deadzone'", 'declared'),
}
ALL = ('any', 'symbolic', 'continuum')
#: what the nodes read besides: parameters they declare (an empty list rcl takes)
NODES = ALL + ('declared',)


def a_run(out):
    """Return a run file in `out` that exists (identify checks the runs are there first)."""
    run = out / 'run.csv'
    run.write_text('t\n')
    return run


#: entry point -> (command line for an input and an output directory, kinds it reads, marks)
ENTRY_POINTS = {
    'controller_node': (lambda arg, out: [find_executable('controller_node'), '--ros-args',
                                          '--params-file', str(arg)], NODES, [pytest.mark.ros]),
    'simulator_node': (lambda arg, out: [find_executable('simulator_node'), '--ros-args',
                                         '--params-file', str(arg)], NODES, [pytest.mark.ros]),
    'demo': (lambda arg, out: ['demo', '--arm', str(arg), '--out', str(out)], NODES,
             [pytest.mark.ros]),
    'launch': (lambda arg, out: ['launch', 'simulation', '--params-file', str(arg)], NODES,
               [pytest.mark.ros]),
    'simulate': (lambda arg, out: ['simulate', '--arm', str(arg), '--duration', '0.1',
                                   '--out', str(out)], ALL, []),
    'derive': (lambda arg, out: ['derive', str(arg)], ('any', 'symbolic'), []),
    'fit-betas': (lambda arg, out: ['fit-betas', str(arg), '--samples', '50', '--held-out',
                                    '20'], ('any', 'continuum'), []),
    'identify': (lambda arg, out: ['identify', str(arg), str(a_run(out))], ALL, []),
    'commission': (lambda arg, out: ['commission', str(arg), '--out', str(out / 'tuned.yaml')],
                   ALL, []),
    'tune': (lambda arg, out: ['tune', str(arg), '--no-search', '--poses', '1'],
             ('any', 'continuum'), []),
}
#: cases that run as fresh processes; the others fork from one that has imported the commands
FRESH = {('controller_node', 'binary'), ('identify', 'binary')}


def unreadable_file(folder):
    """
    Return a parameter file in `folder` that this process may not read.

    Skips the test where permissions do not bind (root reads any file): there the case
    would pass without testing anything.
    """
    return unreadable(folder / UNREADABLE, (HERE / 'unknown_key.yaml').read_text())


CASES = [pytest.param(entry, name, id=f'{entry}-{name}', marks=marks)
         for entry, (_, kinds, marks) in ENTRY_POINTS.items()
         for name, (_, _, kind) in CORPUS.items() if kind in kinds]


@pytest.fixture(scope='module')
def forker():
    """One interpreter that has imported the commands, forked for each case."""
    with Forker() as server:
        yield server


@pytest.mark.parametrize('entry, name', CASES)
def test_a_bad_input_gives_one_error_line_naming_it_and_status_2(entry, name, tmp_path, forker):
    arg, named, _ = CORPUS[name]
    if arg == UNREADABLE:
        arg = unreadable_file(tmp_path)
    line = ENTRY_POINTS[entry][0](arg, tmp_path)
    if not Path(line[0]).is_absolute():           # a continuum-ctrl command
        line = [sys.executable, '-m', 'continuum_ctrl.apps.cli'] + line
    if (entry, name) in FRESH:
        done = subprocess.run(line, capture_output=True, text=True, timeout=180)
    else:
        done = forker.run(line, tmp_path)
    output = done.stdout + done.stderr
    errors = [text for text in done.stderr.splitlines() if 'error:' in text]
    assert done.returncode == 2, output
    assert 'Traceback' not in output, output
    assert len(errors) == 1, output
    assert named in errors[0], output
