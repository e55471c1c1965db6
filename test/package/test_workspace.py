"""
The README's ROS workspace path on a fresh workspace: `colcon build`, then launch.

The repository's tracked files are copied into ``WS/src/continuum_ctrl``, built with the
README's ``colcon build --packages-select continuum_ctrl`` (its install step compiles the
continuum kernels into the installed tree), and the simulation is launched from a shell that
sourced ``install/setup.bash``: with ``ros2 launch continuum_ctrl simulation.launch.py`` where
ros2cli is installed, else with the package's runner (``lib/continuum_ctrl/continuum-ctrl
launch simulation``, the same node list), as ``ros2 run`` would find it. Asserted: the nodes
run the installed copy, the first command is heard within FIRST_COMMAND_BOUND (a generous
bound for a loaded 2-core machine; minutes with a cold kernel cache), and no node had to
compile a kernel the install should have compiled.
"""

import os
from pathlib import Path
import shutil
import signal
import subprocess
import sys
import time

import pytest

from continuum_ctrl.params.launch_description import CONTROLLER
from continuum_ctrl.numerics.jit import COMPILE_NOTICE

ROOT = Path(__file__).resolve().parents[2]
#: seconds from the launch to the first command heard, on a loaded 2-core machine
FIRST_COMMAND_BOUND = 30.0
COLCON = shutil.which('colcon') or shutil.which('colcon', path=str(Path(sys.executable).parent))

pytestmark = [pytest.mark.slow, pytest.mark.ros, pytest.mark.build,
              pytest.mark.skipif(COLCON is None, reason='colcon is not installed (pip install '
                                 'colcon-common-extensions; requirements.txt has it)')]


def tracked_files():
    """Return the repository's files as a clean clone has them (git), else the tree's."""
    listed = subprocess.run(['git', 'ls-files', '-z'], cwd=ROOT, capture_output=True)
    if listed.returncode == 0:
        return [Path(name) for name in listed.stdout.decode().split('\0') if name]
    skip = {'.git', '.venv', '.venv-jazzy', 'build', 'install', 'log'}
    return [path.relative_to(ROOT) for path in ROOT.rglob('*')
            if path.is_file() and not skip & set(path.relative_to(ROOT).parts)
            and '__pycache__' not in path.parts]


def workspace(tmp_path):
    """Make ``WS/src/continuum_ctrl`` from the tracked files; return WS."""
    ws = tmp_path / 'ws'
    source = ws / 'src' / 'continuum_ctrl'
    for name in tracked_files():
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    return ws


def launch_line():
    """Return the README's launch command, or the runner's where ros2cli is not installed."""
    if shutil.which('ros2'):
        return 'ros2 launch continuum_ctrl simulation.launch.py'
    return 'exec "$AMENT_PREFIX_PATH/lib/continuum_ctrl/continuum-ctrl" launch simulation'


def first_command_seconds(ws, env, log):
    """Launch from a shell that sourced the workspace; return s until a command is heard."""
    probe = [str(ws / 'install' / 'continuum_ctrl' / 'lib' / 'continuum_ctrl' / 'continuum-ctrl'),
             'echo', f'/{CONTROLLER}/commands', '--count', '1', '--timeout', '300']
    start = time.monotonic()
    with open(log, 'w') as out:
        launch = subprocess.Popen(['bash', '-c', f'source install/setup.bash && {launch_line()}'],
                                  cwd=ws, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        try:
            heard = subprocess.run(['bash', '-c', 'source install/setup.bash && exec "$@"', '_',
                                    *probe], cwd=ws, env=env, capture_output=True, text=True,
                                   timeout=330)
            seconds = time.monotonic() - start
        finally:
            os.killpg(launch.pid, signal.SIGINT)
            launch.wait(timeout=60)
    assert heard.returncode == 0 and 'data:' in heard.stdout, (heard.stdout, heard.stderr)
    return seconds


def test_colcon_build_then_launch_gives_a_command_at_once(tmp_path):
    ws = workspace(tmp_path)
    env = {key: value for key, value in os.environ.items()
           if key not in ('PYTHONPATH', 'AMENT_PREFIX_PATH', 'COLCON_PREFIX_PATH')}
    env.update(COLCON_HOME=str(tmp_path / 'colcon-home'),
               PATH=os.pathsep.join((str(Path(sys.executable).parent), env.get('PATH', ''))))
    start = time.monotonic()
    built = subprocess.run([COLCON, 'build', '--packages-select', 'continuum_ctrl',
                            '--event-handlers', 'console_direct+'], cwd=ws, env=env,
                           capture_output=True, text=True, timeout=2400)
    build_seconds = time.monotonic() - start
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert 'kernels ready in' in built.stdout, built.stdout[-3000:]
    log = tmp_path / 'launch.log'
    seconds = first_command_seconds(ws, env, log)
    text = log.read_text()
    print(f'colcon build {build_seconds:.0f} s; first command {seconds:.1f} s after the launch')
    site = str(ws / 'install' / 'continuum_ctrl')
    commands = [line for line in text.splitlines() if '--ros-args' in line]
    assert commands and all(line.startswith(site) for line in commands), text[:2000]
    assert COMPILE_NOTICE.split(':')[0] not in text, text[:3000]
    assert seconds < FIRST_COMMAND_BOUND, text[:3000]
