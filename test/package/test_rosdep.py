"""
Every rosdep key of package.xml resolves, checked with the real rosdep, offline.

The rosdep definitions and distribution files come from a snapshot of ros/rosdistro
(test/data/rosdistro-snapshot.tar.gz: rosdep/{base,python,ruby}.yaml, the distribution.yaml of
Humble, Jazzy and Kilted, and local-index.yaml, a rosdistro index naming them with relative
paths). The test runs the README's command, `rosdep install --from-paths src --ignore-src -y`,
with `--simulate` and the target platform of each distribution.
"""

import os
from pathlib import Path
import shutil
import subprocess
import sys
import tarfile

import pytest

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / 'test' / 'data' / 'rosdistro-snapshot.tar.gz'
#: distribution -> the Ubuntu release its binary packages are built for (REP 2000)
PLATFORMS = {'humble': 'ubuntu:jammy', 'jazzy': 'ubuntu:noble', 'kilted': 'ubuntu:noble'}


def rosdep_command():
    """Return the rosdep executable beside this interpreter, else on PATH; skip without one."""
    beside = Path(sys.executable).with_name('rosdep')
    found = str(beside) if beside.is_file() else shutil.which('rosdep')
    if found is None:
        pytest.skip('rosdep is not installed (pip install rosdep, or apt install python3-rosdep)')
    return found


@pytest.fixture(scope='module')
def offline_rosdep(tmp_path_factory):
    """
    Return a function running rosdep offline on the snapshot, and the package's keys.

    The function runs in a workspace whose `src` holds this package.xml.
    """
    command = rosdep_command()
    root = tmp_path_factory.mktemp('rosdep')
    with tarfile.open(SNAPSHOT) as archive:
        archive.extractall(root / 'rosdistro', filter='data')
    sources = root / 'sources.list.d'
    sources.mkdir()
    (sources / '20-snapshot.list').write_text(''.join(
        f'yaml file://{root}/rosdistro/rosdep/{name}.yaml\n' for name in ('base', 'python')))
    (root / 'home').mkdir()
    workspace = root / 'ws'
    (workspace / 'src' / 'continuum_ctrl').mkdir(parents=True)
    shutil.copy(ROOT / 'package.xml', workspace / 'src' / 'continuum_ctrl')
    env = {key: value for key, value in os.environ.items() if not key.startswith('ROS')}
    env.update(ROSDISTRO_INDEX_URL=f'file://{root}/rosdistro/local-index.yaml',
               ROSDEP_SOURCE_PATH=str(sources), HOME=str(root / 'home'),
               ROS_PYTHON_VERSION='3')

    def run(*args):
        return subprocess.run([command, *args], cwd=workspace, env=env, capture_output=True,
                              text=True, timeout=300)

    update = run('update')
    assert update.returncode == 0, update.stdout + update.stderr
    assert all(f'Add distro "{name}"' in update.stdout for name in PLATFORMS), update.stdout
    keys = run('keys', '--from-paths', 'src', '--ignore-src')
    assert keys.returncode == 0 and 'pinocchio' in keys.stdout.split(), keys.stderr
    return run, keys.stdout.split()


@pytest.mark.slow
@pytest.mark.parametrize('distro', sorted(PLATFORMS))
def test_every_key_resolves(offline_rosdep, distro):
    rosdep, keys = offline_rosdep
    result = rosdep('install', '--from-paths', 'src', '--ignore-src', '-y', '--simulate',
                    f'--os={PLATFORMS[distro]}', '--rosdistro', distro)
    assert result.returncode == 0, result.stdout + result.stderr
    resolved = rosdep('resolve', *keys, f'--os={PLATFORMS[distro]}',
                      '--rosdistro', distro)
    assert resolved.returncode == 0, resolved.stdout + resolved.stderr
    assert f'ros-{distro}-pinocchio' in resolved.stdout.split()
