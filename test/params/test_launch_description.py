"""The launch description: exact command lines, and everything it names exists and is used."""

import ast
import re
from importlib import import_module
from pathlib import Path

import pytest

from continuum_ctrl.params import file_parameters
from continuum_ctrl.params.launch_description import (arm_files, CONTROLLER, controller,
                                                      DEFAULT_PARAMS, DESCRIPTIONS,
                                                      MOCAP_TOPIC, PACKAGE, simulation,
                                                      SIMULATOR)

ROOT = Path(__file__).resolve().parents[2]
LAUNCH_FILES = {'controller': ROOT / 'launch' / 'controller.launch.py',
                'simulation': ROOT / 'launch' / 'simulation.launch.py'}


def entry_points():
    """Return console script name -> 'module:function' from setup.py."""
    text = (ROOT / 'setup.py').read_text()
    return dict(re.findall(r"'([\w-]+) = ([\w.]+:\w+)'", text))


def test_command_lines_are_exact():
    ctl, sim = simulation('planar_2r.yaml', use_sim_time=True)
    params = str(ROOT / 'config' / 'planar_2r.yaml')
    assert ctl.command('controller_node') == [
        'controller_node', '--ros-args', '-r', f'__node:={CONTROLLER}',
        '--params-file', params, '-r', f'~/tip_measured:={MOCAP_TOPIC}',
        '-p', 'use_sim_time:=true']
    assert sim.command('simulator_node') == [
        'simulator_node', '--ros-args', '-r', f'__node:={SIMULATOR}',
        '--params-file', params, '-r', f'commands:=/{CONTROLLER}/commands',
        '-p', 'use_sim_time:=true']
    hardware = controller('panda.yaml', remappings=[('~/commands', '/effort_ctrl/commands')])
    assert hardware[0].command('x')[-4:] == ['-r', '~/commands:=/effort_ctrl/commands',
                                             '-p', 'use_sim_time:=false']


@pytest.mark.parametrize('launch', sorted(DESCRIPTIONS))
def test_everything_named_exists(launch):
    scripts = entry_points()
    for node in DESCRIPTIONS[launch]():
        assert node.package == PACKAGE
        module, function = scripts[node.executable].split(':')
        assert callable(getattr(import_module(module), function))
        assert getattr(import_module(module), 'NODE_NAME') == node.name
        for path in node.parameters:
            assert Path(path).is_file() and Path(path).name == DEFAULT_PARAMS
        for source, target in node.remappings:
            # the simulator listens where the controller publishes: ~/commands of its node;
            # the controller hears the simulator's motion capture
            assert (source, target) == (('commands', f'/{CONTROLLER}/commands')
                                        if node.name == SIMULATOR else
                                        ('~/tip_measured', MOCAP_TOPIC))
    assert (ROOT / 'config' / DEFAULT_PARAMS).is_file()


@pytest.mark.parametrize('launch', sorted(LAUNCH_FILES))
def test_launch_files_build_nodes_from_the_description(launch):
    tree = ast.parse(LAUNCH_FILES[launch].read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module == 'continuum_ctrl.params.launch_description'
                for alias in node.names}
    assert launch in imported
    calls = {node.func.id for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert {launch, 'Node', 'DeclareLaunchArgument', 'LaunchConfiguration'} <= calls
    arguments = {node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and getattr(node.func, 'id', '') == 'DeclareLaunchArgument'}
    assert {'params_file', 'use_sim_time'} <= arguments
    node_call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call)
                     and getattr(node.func, 'id', '') == 'Node')
    given = {kw.arg: ast.unparse(kw.value) for kw in node_call.keywords}
    assert given['package'] == 'd.package' and given['executable'] == 'd.executable'
    assert given['name'] == 'd.name'
    assert given['remappings'].startswith('list(d.remappings)')
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert 'generate_launch_description' in functions


def test_gazebo_example_feeds_a_forward_effort_controller():
    """The ros2_control side takes efforts for the joints the controller commands, in order."""
    from continuum_ctrl.params import read_yaml
    from continuum_ctrl.control.settings import ControllerSettings
    from continuum_ctrl.models import load_model
    from continuum_ctrl.params import file_parameters
    from continuum_ctrl.runtime.node_settings import ControllerNodeSettings
    path = ROOT / 'config' / 'gazebo_arm.yaml'
    data = read_yaml(path)
    forward = data['effort_controller']['ros__parameters']
    manager = data['controller_manager']['ros__parameters']
    assert manager['effort_controller']['type'] == \
        'forward_command_controller/ForwardCommandController'
    assert forward['interface_name'] == 'effort'
    assert data['continuum_controller']['ros__parameters']['use_sim_time'] is True
    tree, model = file_parameters(path, 'continuum_controller')
    _, tree = ControllerNodeSettings.split(tree)
    settings = ControllerSettings.parse(tree, load_model(model))
    assert settings.mode == 'effort' and list(settings.joints) == forward['joints']
    line = controller(path, True, [('~/commands', '/effort_controller/commands')])[0]
    assert line.command('c')[-4:] == ['-r', '~/commands:=/effort_controller/commands', '-p',
                                      'use_sim_time:=true']


def test_setup_installs_launch_and_config_files():
    text = (ROOT / 'setup.py').read_text()
    assert "glob('launch/*.launch.py')" in text and "glob('config/*.yaml')" in text
    assert {'controller_node', 'simulator_node', 'continuum-ctrl'} <= set(entry_points())


def test_the_task_overlay_is_laid_over_the_arm_file_as_two_params_files():
    """One description of the arm: continuum_task.yaml changes the reference only."""
    files = arm_files('continuum_task')
    assert [path.name for path in files] == ['continuum_3section.yaml', 'continuum_task.yaml']
    assert arm_files(str(files[1])) == files == arm_files(['continuum_3section', 'continuum_task'])
    line = simulation(files)[0].command()
    assert [line[i + 1] for i, word in enumerate(line) if word == '--params-file'] == \
        [str(path) for path in files]
    task, model = file_parameters(files, CONTROLLER)
    arm, arm_model = file_parameters(files[0], CONTROLLER)
    assert model == arm_model and not file_parameters(files[1], CONTROLLER)[1]
    assert task['reference']['type'] == 'tip_circle' and task['task']['frame'] == 'section3_tip'
    assert {key: value for key, value in task.items() if key not in ('reference', 'task')} == \
        {key: value for key, value in arm.items() if key != 'reference'}
    simulator, plant = file_parameters(files, SIMULATOR)
    assert (simulator.pop('mocap'), plant) == ({'rate_hz': 120.0, 'noise': 2e-4, 'latency': 0.01},
                                               file_parameters(files[0], SIMULATOR)[1])
    assert simulator == file_parameters(files[0], SIMULATOR)[0]
