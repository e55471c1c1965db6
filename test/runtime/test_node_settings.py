"""Controller and simulator settings without ROS: the shipped files parse, bad values name keys."""

from pathlib import Path
import re
import subprocess
import sys

import numpy as np
import pytest

from continuum_ctrl.control.loop import ControlLoop
from continuum_ctrl.control.settings import ControllerSettings
from continuum_ctrl.params.launch_description import config_path, controller, params_paths
from continuum_ctrl.models import load_model
from continuum_ctrl.params import ConfigError, file_parameters, flatten, nest
from continuum_ctrl.apps.node_pair import check_parameter_file
from continuum_ctrl.runtime.node_settings import ControllerNodeSettings, SimulatorNodeSettings
from continuum_ctrl.sim.plant import PlantSettings
from support.ros_nodes import params_file

ROOT = Path(__file__).resolve().parents[2]
#: the shipped arms, each as its nodes are given it (an overlay after its arm's file)
CONFIGS = ('planar_2r.yaml', 'panda.yaml', 'continuum_3section.yaml',
           ('continuum_3section.yaml', 'continuum_task.yaml'))


def two_link(**changes):
    """Return the 2R controller tree with `changes` (dotted keys) applied, and the model."""
    tree, model = file_parameters(config_path('planar_2r.yaml'), 'continuum_controller')
    _, tree = ControllerNodeSettings.split(tree)
    tree = nest({**flatten(tree), **changes})
    return tree, load_model(model)


@pytest.mark.parametrize('name', CONFIGS)
def test_shipped_files_parse_for_both_nodes(name):
    paths = params_paths(name)
    name = paths[0].name
    tree, model = file_parameters(paths, 'continuum_controller')
    node, tree = ControllerNodeSettings.split(tree)
    settings = ControllerSettings.parse(tree, load_model(model))
    sim_tree, sim_model = file_parameters(paths, 'continuum_simulator')
    sim_node, sim_tree = SimulatorNodeSettings.split(sim_tree)
    plant = PlantSettings.parse(sim_tree, sim_model)
    assert node.autostart and node.realtime_priority == sim_node.realtime_priority
    assert settings.joints == tuple(plant.model.joint_names)
    assert (settings.mode == 'pressure') == name.startswith('continuum')
    if name.startswith('continuum'):
        assert type(plant.model) is not type(load_model(model))
        # the largest push, area * p_max, is the 66.5 N of the reference arm
        assert np.allclose(settings.actuation.force(settings.actuation.p_max), 66.5)


def test_the_template_for_an_arm_of_ones_own_parses_as_the_nodes_read_it():
    """
    config/my_arm.yaml, the template a user copies: it parses for both nodes through the
    nodes' own parsers (and the launcher's check), names the joints it maps states by, marks
    the keys to set, and names only pages that exist.
    """
    path = config_path('my_arm.yaml')
    check_parameter_file(path)          # as `continuum-ctrl launch` and the demo check a file
    tree, model = file_parameters(path, 'continuum_controller')
    node, tree = ControllerNodeSettings.split(tree)
    arm = load_model(model)
    settings = ControllerSettings.parse(tree, arm)
    sim_tree, sim_model = file_parameters(path, 'continuum_simulator')
    plant = PlantSettings.parse(SimulatorNodeSettings.split(sim_tree)[1], sim_model)
    assert settings.mode == 'pressure' and settings.reference.kind == 'hold'
    assert settings.joints == tuple(arm.joint_names) == tuple(plant.model.joint_names)
    assert tuple(model['joints']) == settings.joints and node.realtime_priority == 0
    text = path.read_text()
    assert text.count('SET:') >= 15
    pages = set(re.findall(r'docs/[a-z0-9-]+\.md', text))
    assert pages and all((ROOT / page).is_file() for page in pages), pages


@pytest.mark.parametrize('key, value, named', [
    ('gains.kp', [-1.0, 5.0], 'gains.kp'),
    ('gains.kp', [1.0, 2.0, 3.0], 'gains.kp'),
    ('gains.kd', [1.0, 2.0, 2.0, -3.0], 'gains.kd'),
    ('gains.kq', [1.0, 1.0], 'gains.kq'),
    ('rate_hz', 0.0, 'rate_hz'),                    # the node's key: unknown to the loop
    ('state_timeout', -1.0, 'state_timeout'),
    ('safe_mode', 'brake', 'safe_mode'),
    ('joints', ['joint1', 'joint3'], 'joints'),
    ('reference.type', 'spline', 'reference.type'),
    ('reference.amplitude', [0.1, 0.2, 0.3], 'reference.amplitude'),
    ('reference.colour', 'red', 'reference.colour'),
    ('limits.effort', [0.0, 1.0], 'limits.effort'),
    ('output.mode', 'voltage', 'output.mode'),
])
def test_bad_value_is_an_error_naming_its_key(key, value, named):
    tree, model = two_link(**{key: value})
    with pytest.raises(ConfigError) as err:
        ControllerSettings.parse(tree, model)
    assert err.value.key == named


def test_pressure_output_needs_its_map_and_vents_when_safe():
    tree, model = two_link(**{'output.mode': 'pressure'})
    with pytest.raises(ConfigError, match='output.area'):
        ControllerSettings.parse(tree, model)
    tree, model = two_link(**{'output.mode': 'pressure', 'output.area': [1e-4],
                              'output.p_min': 2e4, 'output.p_max': 1e4})
    with pytest.raises(ConfigError, match='output.p_max'):
        ControllerSettings.parse(tree, model)
    tree, model = two_link(**{'output.mode': 'pressure', 'output.area': [1e-4],
                              'output.p_min': 1e4, 'output.p_max': 5e5, 'safe_mode': 'hold'})
    with pytest.raises(ConfigError, match='safe_mode'):
        ControllerSettings.parse(tree, model)
    del tree['safe_mode']
    loop = ControlLoop(model, ControllerSettings.parse(tree, model), 0.002)
    assert np.array_equal(loop.tick(0.0), [1e4, 1e4])


def test_vectors_follow_the_joints_order():
    tree, model = two_link(joints=['joint2', 'joint1'], **{'gains.kp': [30.0, 10.0],
                                                           'limits.effort': [5.0, 7.0]})
    settings = ControllerSettings.parse(tree, model)
    assert np.array_equal(settings.order, [1, 0])
    assert np.array_equal(settings.kp, [10.0, 30.0])          # model order: joint1, joint2
    assert np.array_equal(settings.effort_limit, [7.0, 5.0])


def test_loop_tracks_in_joint_order_and_respects_limits():
    """One tick at a known state equals the law evaluated by hand, clamped, in joints order."""
    tree, model = two_link(joints=['joint2', 'joint1'], **{
        'reference.type': 'hold', 'reference.position': [0.3, 0.5],
        'reference.blend_time': 0.0, 'limits.effort': [100.0, 20.0], 'resume_count': 1})
    settings = ControllerSettings.parse(tree, model)
    loop = ControlLoop(model, settings, 0.002)
    q = np.array([0.6, 0.25])
    loop.set_state(q, np.zeros(2), 1.0)
    command = loop.tick(1.0)
    kp = settings.kp
    tau = model.inverse_dynamics(q, np.zeros(2), -kp * (q - [0.5, 0.3]))
    expected = np.clip(tau, [-20.0, -100.0], [20.0, 100.0])[[1, 0]]
    assert np.allclose(command, expected, rtol=1e-12, atol=1e-12)
    assert loop.tick(1.0 + settings.state_timeout + 1e-3) is loop.command
    assert np.array_equal(loop.command, [0.0, 0.0])            # stale: zero effort


@pytest.mark.parametrize('key, value', [('rate_hz', 0.0), ('state_decimation', 0),
                                        ('realtime_priority', 100), ('autostart', 'yes'),
                                        ('stamp_tolerance', -1.0),
                                        ('input.max_joint_states_bytes', 0),
                                        ('loop.max_missed_share', 1.5),
                                        ('loop.spin_before_us', 500.0),
                                        ('loop.safe_on_overrun', 1), ('loop.typo', 1),
                                        ('input', 3)])
def test_a_bad_node_setting_is_an_error_naming_its_key(key, value):
    with pytest.raises(ConfigError) as err:
        ControllerNodeSettings.split(nest({key: value}))
    assert err.value.key == key


def test_node_namespaces_are_read_and_taken_out_of_the_tree():
    node, rest = ControllerNodeSettings.split(nest({
        'input.max_trajectory_points': 50, 'loop.safe_on_overrun': True, 'gains.kp': [1.0]}))
    assert node.max_trajectory_points == 50 and node.safe_on_overrun
    assert node.max_missed_share == 0.2 and node.spin_before_us == 0.0
    assert rest == {'gains': {'kp': [1.0]}}


def test_node_settings_leave_the_loop_its_keys():
    node, rest = ControllerNodeSettings.split({'rate_hz': 250, 'gains': {'kp': [1.0]}})
    assert node.period == 1.0 / 250.0 and node.autostart
    assert rest == {'gains': {'kp': [1.0]}}


@pytest.mark.ros
def test_bad_parameter_file_exits_with_the_key(tmp_path):
    path = tmp_path / 'bad.yaml'
    text = config_path('planar_2r.yaml').read_text().replace('kp: [100.0, 100.0]',
                                                             'kp: [100.0, -4.0]')
    path.write_text(text)
    done = subprocess.run(controller(path)[0].command(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert "parameter 'gains.kp'" in done.stderr


def test_the_launchers_check_refuses_two_command_messages(tmp_path):
    """The commands topic has one type: the controller's message set alone is one error."""
    path = params_file(tmp_path, 'planar_2r.yaml',
                       continuum_controller={'output': {'message': 'joint_state'}})
    with pytest.raises(ConfigError) as raised:
        check_parameter_file(path)
    assert raised.value.key == 'output.message' and "'joint_state'" in str(raised.value)
    check_parameter_file(path, ['continuum_controller'])        # alone: nothing to match
    check_parameter_file(params_file(tmp_path, 'planar_2r.yaml', all={
        'output': {'message': 'joint_state'}}))                 # under /**: one for both


def test_the_launchers_check_loads_no_kernel_and_leaves_later_objects_compiled():
    """
    `check_parameter_file` (the launcher's, the demo's) builds a continuum file's models and
    pressure maps without loading a kernel; the process's later objects get compiled entry
    points, not the dispatchers the check was handed.
    """
    script = """
from numba.core.registry import CPUDispatcher
from continuum_ctrl.actuation.pressure_map import _pressure_map
from continuum_ctrl.params.launch_description import config_path
from continuum_ctrl.models import load_model
from continuum_ctrl.models.continuum.cog import cog_run
from continuum_ctrl.models.continuum.integral import integral_evaluate
from continuum_ctrl.apps.node_pair import check_parameter_file
check_parameter_file(config_path('continuum_3section.yaml'))
print(len(cog_run.overloads), len(integral_evaluate.overloads))
model = load_model(config_path('continuum_3section.yaml'), 'continuum_controller')
print(len(cog_run.overloads), isinstance(model._kernel, CPUDispatcher),
      isinstance(_pressure_map(), CPUDispatcher))
"""
    done = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ['0', '0', '1', 'False', 'False'], done.stdout
