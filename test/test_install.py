"""
First start of an installed package: after the install alone, a node starts in seconds.

The package is installed the way colcon installs an ament_python package (`setup.py install
--prefix ... --single-version-externally-managed`) into a fresh tree; the install ends with
the warm step, which compiles the continuum kernels into that tree's cache, and the simulator
node (integral model: the kernels that take longest) is started from the tree. Printed: the
install and start times; asserted, with a generous bound for a loaded machine: the first
start stays under FIRST_START_BOUND (about 3 s on an idle machine, against minutes with a
cold cache).
"""

import os
from pathlib import Path
import signal
import subprocess
import sys
import time

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: seconds: a generous bound for the warmed first start on a loaded 2-core machine
FIRST_START_BOUND = 30.0

pytestmark = [pytest.mark.slow, pytest.mark.ros]


def install(prefix, work):
    """Install the package into `prefix` as colcon does; return its site-packages and output."""
    done = subprocess.run([sys.executable, 'setup.py', '-q', 'egg_info', '--egg-base',
                           str(work), 'build', '--build-base', str(work / 'build'), 'install',
                           '--prefix', str(prefix), '--single-version-externally-managed',
                           '--record', str(work / 'record.txt')], cwd=ROOT, check=True,
                          capture_output=True, text=True, timeout=2400)
    return next(prefix.glob('lib/python3*/site-packages')), done.stdout


def start_seconds(prefix, env, timeout=300.0):
    """Start the installed simulator node; return seconds until it reports its plant."""
    params = prefix / 'share' / 'continuum_ctrl' / 'config' / 'continuum_3section.yaml'
    start = time.monotonic()
    node = subprocess.Popen([sys.executable, str(prefix / 'lib' / 'continuum_ctrl' /
                                                 'simulator_node'), '--ros-args', '-r',
                             '__node:=continuum_simulator', '--params-file', str(params)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        for line in node.stdout:
            if ']: plant ' in line:
                return time.monotonic() - start
            assert time.monotonic() - start < timeout, line
        raise AssertionError(f'the node ended without starting (status {node.wait()})')
    finally:
        node.send_signal(signal.SIGINT)
        node.wait(timeout=30)


def test_an_installed_package_starts_fast_after_the_install_alone(tmp_path):
    prefix = tmp_path / 'install'
    site, output = install(prefix, tmp_path)
    env = dict(os.environ, PYTHONPATH=str(site), AMENT_PREFIX_PATH=str(prefix))
    # the installed copy, not the source tree, is what runs
    where = subprocess.run([sys.executable, '-c', 'import continuum_ctrl; '
                            'print(continuum_ctrl.__file__)'], env=env, cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(site))
    assert 'kernels ready in' in output, output
    for kernels in ('models/continuum', 'actuation'):      # the models' and the valves'
        assert list(site.glob(f'continuum_ctrl/{kernels}/__pycache__/*.nbi')), kernels
    seconds = start_seconds(prefix, env)
    ready = next(line for line in output.splitlines() if 'kernels ready in' in line)
    print(f'installed simulator node, first start after the install: {seconds:.1f} s '
          f'(install: {ready})')
    assert seconds < FIRST_START_BOUND
