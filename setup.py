"""
ament_python set-up for continuum_ctrl; also installable with `pip install .` or `-e .`.

Installing (`setup.py install`, which `colcon build` runs, and the wheel `pip install` builds)
and `setup.py develop` end by compiling the continuum kernels into the Numba cache of the
installed sources (`continuum-ctrl warm`, in a child process). Numba checks a cached kernel
against a hash of its source file, so the cache stays valid where the files are copied to. A
failure (no NumPy or Numba yet, a read-only tree, a timeout) is one warning line: the install
goes on, and the nodes compile at their first start instead, saying so. Set
CONTINUUM_CTRL_NO_WARM=1 to skip the step.
"""

import os
from glob import glob
import subprocess
import sys

from setuptools import find_packages, setup
from setuptools.command.develop import develop
from setuptools.command.install import install

package_name = 'continuum_ctrl'
#: seconds the warm step may take (minutes on a small machine)
WARM_TIMEOUT = 1800
HERE = os.path.dirname(os.path.abspath(__file__))


def warm_kernels(site):
    """Compile the kernels of the package installed under `site`; never raise."""
    if os.environ.get('CONTINUUM_CTRL_NO_WARM'):
        return
    print('continuum_ctrl: compiling the continuum Numba kernels into the installed cache '
          '(a few minutes on a 2-core machine; CONTINUUM_CTRL_NO_WARM=1 skips it)', flush=True)
    # the child sees the interpreter's packages and the caller's path (a ROS workspace's),
    # not the isolated environment of a pip build, which hides NumPy and Numba
    path = [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep)
            if p and 'pip-build-env' not in p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.abspath(site)] + path))
    try:
        done = subprocess.run(
            [sys.executable, '-c', 'import sys; from continuum_ctrl.apps.warm '
             'import main; sys.exit(main(sys.argv[1:]))', '--arm',
             os.path.join(HERE, 'config', 'continuum_3section.yaml')],
            env=env, cwd=site, capture_output=True, text=True, timeout=WARM_TIMEOUT)
        problem = (done.stderr.strip().splitlines() or ['no output'])[-1] if done.returncode \
            else None
        if problem is None:
            print(f'continuum_ctrl: {done.stdout.strip()}', flush=True)
    except (OSError, subprocess.SubprocessError) as exc:
        problem = str(exc)
    if problem is not None:
        print(f'continuum_ctrl: warning: kernels not compiled at install ({problem}); the '
              'nodes compile them at their first start', flush=True)


class InstallAndWarm(install):
    """`install`, then the warm step on the installed package."""

    def run(self):
        """Install, then compile the kernels there."""
        super().run()
        warm_kernels(self.install_lib)


class DevelopAndWarm(develop):
    """`develop` (an in-place install), then the warm step on the source tree."""

    def run(self):
        """Link the sources, then compile the kernels next to them."""
        super().run()
        if not self.uninstall:      # the directory the sources are imported from
            warm_kernels(os.path.join(self.install_dir, self.egg_path))


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'bench']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.py')),
        ('share/' + package_name + '/config', glob('config/*.yaml') + glob('config/*.rviz')),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='continuum_ctrl maintainers',
    maintainer_email='maintainers@continuum-ctrl.invalid',
    description='Computed-torque control of continuum (PMA) and rigid arms for ROS 2.',
    license='Apache-2.0',
    cmdclass={'install': InstallAndWarm, 'develop': DevelopAndWarm},
    entry_points={
        'console_scripts': [
            'continuum-ctrl = continuum_ctrl.apps.cli:main',
            'controller_node = continuum_ctrl.ros.controller_node:main',
            'simulator_node = continuum_ctrl.ros.simulator_node:main',
        ],
    },
)
