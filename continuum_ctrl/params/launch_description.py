"""
The package's launch descriptions as plain data: one source for launch files, runner and tests.

    nodes = simulation(params_files)         # [NodeDescription, ...]; one file or several
    nodes[0].command()                       # the exact command line a launch file would run

`launch/controller.launch.py` and `launch/simulation.launch.py` build launch_ros Nodes from
these descriptions; `continuum-ctrl launch` runs their command lines as processes when
`ros2 launch` is not installed. Pure Python: no `launch` import here.
"""

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from continuum_ctrl.params import ConfigError
from continuum_ctrl.params.files import config_dirs, config_path, PACKAGE

#: the node names, defined here only (the nodes and the tests import them)
CONTROLLER = 'continuum_controller'
SIMULATOR = 'continuum_simulator'
#: parameter file used when none is given: the reference three-section continuum arm
DEFAULT_PARAMS = 'continuum_3section.yaml'
#: the simulator's motion-capture topic (`mocap.topic`'s default): the controller's
#: `~/tip_measured` is remapped to it in simulation
MOCAP_TOPIC = '/mocap/tip'
#: the simulator's true tip (its capture without noise, latency or dropouts)
TRUTH_TOPIC = f'/{SIMULATOR}/tip_true'
#: the simulator's true joint states (the plant's state without the sensor's traits)
JOINT_TRUTH_TOPIC = f'/{SIMULATOR}/joint_states_true'


@dataclass(frozen=True)
class NodeDescription:
    """One node: package, executable, node name, parameter files, remaps, use_sim_time."""

    package: str
    executable: str
    name: str
    parameters: tuple
    remappings: tuple = ()
    use_sim_time: bool = False

    def command(self, executable=None):
        """
        Return the command line: ``exe --ros-args -r __node:=NAME --params-file F ...``.

        `executable`: the program to run (default: `find_executable`).
        """
        line = [executable or find_executable(self.executable), '--ros-args',
                '-r', f'__node:={self.name}']
        for path in self.parameters:
            line += ['--params-file', str(path)]
        for source, target in self.remappings:
            line += ['-r', f'{source}:={target}']
        line += ['-p', f'use_sim_time:={str(self.use_sim_time).lower()}']
        return line


#: short arm names -> parameter file stems in config/ (`demo --arm`, `simulate --arm`)
ARMS = {'continuum': 'continuum_3section', 'continuum_task': 'continuum_task',
        'continuum_ilc': 'continuum_ilc',
        '2r': 'planar_2r', 'panda': 'panda'}
#: overlays in config/ -> the arm file they are laid over (`arm_files` puts it first)
OVERLAYS = {'continuum_task': 'continuum_3section', 'continuum_ilc': 'continuum_3section'}


def arm_files(arms):
    """
    Return the parameter files of `arms` (one arm or several), merged in order: a tuple.

    Each is as `arm_config` finds it; an overlay of config/ (OVERLAYS) named alone comes
    after the file it is laid over, so ``continuum_task`` runs the arm of
    ``continuum_3section.yaml`` with the task-space reference on top, as two
    ``--params-file`` would. Raises ConfigError('--arm').
    """
    paths = [arm_config(arm) for arm in ([arms] if isinstance(arms, (str, Path)) else arms)]
    if len(paths) == 1 and paths[0].stem in OVERLAYS:
        paths.insert(0, arm_config(OVERLAYS[paths[0].stem]))
    return tuple(paths)


def arm_config(arm):
    """
    Return the parameter file of `arm`: a path, a short name in ARMS or a file stem in config/.

    `continuum`, `continuum_3section`, `continuum_3section.yaml` and a path to that file all
    name the same file. Names are looked up in the config directories (`params.config_dirs`:
    the source tree, then the installed share directory). Raises ConfigError('--arm').
    """
    if Path(arm).is_file():
        return Path(arm)
    stem = ARMS.get(arm, arm[:-len('.yaml')] if arm.endswith('.yaml') else arm)
    tried = []
    for root in config_dirs():
        if (root / f'{stem}.yaml').is_file():
            return root / f'{stem}.yaml'
        tried.append(str(root))
    names = ', '.join(f'{short} ({stem}.yaml)' for short, stem in ARMS.items())
    raise ConfigError('--arm', f"'{arm}' is neither a parameter file nor an arm: {names}, or "
                               f"a file stem in {tried}")


def find_executable(name, package=PACKAGE):
    """
    Return the path of `package`'s console script `name`.

    As ``ros2 run`` finds it (``lib/PACKAGE/NAME`` under a prefix of ``AMENT_PREFIX_PATH``: a
    sourced workspace), else on PATH, else beside the running Python (a pip install).
    """
    for prefix in filter(None, os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)):
        candidate = Path(prefix) / 'lib' / package / name
        if os.access(candidate, os.X_OK) and candidate.is_file():
            return str(candidate)
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    return found or name


def params_paths(params_files):
    """Return the paths (a tuple) of one parameter file or several, merged in that order."""
    files = [params_files] if isinstance(params_files, (str, Path)) else params_files
    return tuple(config_path(path) for path in files)


def controller(params_files=DEFAULT_PARAMS, use_sim_time=False, remappings=()):
    """
    Describe the controller alone (hardware): remap `~/commands` to the actuators' topic.

    `params_files`: one parameter file or several, later ones winning (`--params-file` each).
    """
    return [NodeDescription(PACKAGE, 'controller_node', CONTROLLER,
                            params_paths(params_files), tuple(remappings), use_sim_time)]


def simulation(params_files=DEFAULT_PARAMS, use_sim_time=False):
    """
    Describe controller plus simulator; the simulator hears the controller's commands.

    The controller hears the simulator's motion capture (`~/tip_measured` from MOCAP_TOPIC).
    """
    params = params_paths(params_files)
    return controller(params, use_sim_time, (('~/tip_measured', MOCAP_TOPIC),)) + [
        NodeDescription(PACKAGE, 'simulator_node', SIMULATOR, params,
                        (('commands', f'/{CONTROLLER}/commands'),), use_sim_time)]


#: launch name -> description function
DESCRIPTIONS = {'controller': controller, 'simulation': simulation}
