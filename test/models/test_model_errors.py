"""Bad URDF and symbolic model specs: each is one ConfigError that names the key."""

import copy
import os

import pytest

from continuum_ctrl import load_model
from continuum_ctrl.params import ConfigError
from continuum_ctrl.models import rigid

PANDA = 'package://example-robot-data/robots/panda_description/urdf/panda.urdf'
URDF = {'type': 'urdf', 'urdf': PANDA,
        'joints': [f'panda_joint{i}' for i in range(1, 8)]}
SYMBOLIC = {'type': 'symbolic', 'coordinates': ['q1', 'q2'],
            'mass_matrix': ['a + b*cos(q2)', 'c', 'c', 'c'],
            'potential': 'g*sin(q1)', 'constants': {'a': 3.0, 'b': 1.0, 'c': 0.5, 'g': 9.81}}


def changed(base, **changes):
    """Return a deep copy of `base` with keys set (None deletes a key)."""
    spec = copy.deepcopy(base)
    for key, value in changes.items():
        if value is None:
            del spec[key]
        else:
            spec[key] = value
    return spec


def error(spec):
    """Return the one ConfigError that loading `spec` raises."""
    with pytest.raises(ConfigError) as info:
        load_model(spec)
    return info.value


def test_valid_specs_load():
    assert load_model(URDF).n == 7
    assert load_model(SYMBOLIC).n == 2


def test_unknown_type():
    assert error(changed(URDF, type='pinocchio')).key == 'model.type'
    assert error(changed(URDF, type=None)).key == 'model.type'


@pytest.mark.parametrize('spec, key, words', [
    (changed(URDF, urdf=None), 'model.urdf', 'missing'),
    (changed(URDF, urdf='/no/such/arm.urdf'), 'model.urdf', '/no/such/arm.urdf'),
    (changed(URDF, urdf='package://no_such_pkg/urdf/arm.urdf'), 'model.urdf', 'no_such_pkg'),
    (changed(URDF, urdf='package://panda_description'), 'model.urdf', 'PACKAGE/PATH'),
    (changed(URDF, urdf=os.devnull), 'model.urdf', 'does not exist'),
    (changed(URDF, joints=['panda_joint1', 'elbow']), 'model.joints', 'elbow'),
    (changed(URDF, joints=['panda_joint1', 'panda_joint1']), 'model.joints', 'twice'),
    (changed(URDF, joints=[]), 'model.joints', 'at least one'),
    (changed(URDF, joints='panda_joint1'), 'model.joints', 'list of strings'),
    (changed(URDF, gravity=[0.0, -9.81]), 'model.gravity', '3 entries'),
    (changed(URDF, gravity=[0.0, 0.0, 'down']), 'model.gravity', 'number'),
    (changed(URDF, locked_positions={'gripper': 0.0}), 'model.locked_positions.gripper',
     'gripper'),
    (changed(URDF, locked_positions={'panda_joint1': 0.0}), 'model.locked_positions.panda_joint1',
     'cannot be locked'),
    (changed(URDF, locked_positions={'panda_finger_joint1': 'open'}),
     'model.locked_positions.panda_finger_joint1', 'number'),
    (changed(URDF, damping=[0.1]), 'model.damping', 'not a known parameter'),
])
def test_bad_urdf_specs(spec, key, words):
    problem = error(spec)
    assert problem.key == key
    assert words in str(problem)


def test_continuous_joints_are_rejected_by_name():
    urdf = 'package://double_pendulum_description/urdf/double_pendulum_continuous.urdf'
    problem = error({'type': 'urdf', 'urdf': urdf})
    assert problem.key == 'model.urdf' and 'nq=2' in str(problem)
    problem = error({'type': 'urdf', 'urdf': urdf, 'joints': ['joint1']})
    assert problem.key == 'model.joints'


def test_directory_as_urdf_is_refused(tmp_path):
    problem = error(changed(URDF, urdf=str(tmp_path)))
    assert problem.key == 'model.urdf' and str(tmp_path) in str(problem)


def test_unreadable_urdf_names_the_file(tmp_path):
    path = tmp_path / 'broken.urdf'
    path.write_text('<robot name="x"><link name="a"></robot>')
    problem = error(changed(URDF, urdf=str(path), joints=None))
    assert problem.key == 'model.urdf' and 'broken.urdf' in str(problem)


@pytest.mark.parametrize('spec, key, words', [
    (changed(SYMBOLIC, coordinates=None), 'model.coordinates', 'missing'),
    (changed(SYMBOLIC, mass_matrix=None), 'model.mass_matrix', 'missing'),
    (changed(SYMBOLIC, potential=None), 'model.potential', 'missing'),
    (changed(SYMBOLIC, coordinates=[]), 'model.coordinates', 'at least one'),
    (changed(SYMBOLIC, coordinates=['q1', 'q1']), 'model.coordinates', 'twice'),
    (changed(SYMBOLIC, coordinates=['q1', 'sin']), 'model.coordinates', 'reserved'),
    (changed(SYMBOLIC, coordinates=['q1', '__q']), 'model.coordinates', '__q'),
    (changed(SYMBOLIC, mass_matrix=['1', '0', '0']), 'model.mass_matrix', 'n*n = 4'),
    (changed(SYMBOLIC, mass_matrix='a'), 'model.mass_matrix', 'n*n = 4'),
    (changed(SYMBOLIC, mass_matrix=['a', 'c*cos(q1)', 'c', 'c']), 'model.mass_matrix',
     'not symmetric'),
    (changed(SYMBOLIC, mass_matrix=['a +', 'c', 'c', 'c']), 'model.mass_matrix', 'a +'),
    (changed(SYMBOLIC, mass_matrix=["__import__('os')", 'c', 'c', 'c']), 'model.mass_matrix',
     '__import__'),
    (changed(SYMBOLIC, potential="__import__('os').system('true')"), 'model.potential',
     '__import__'),
    (changed(SYMBOLIC, potential='q1.real'), 'model.potential', 'q1.real'),
    (changed(SYMBOLIC, potential='(lambda: q1)()'), 'model.potential', 'lambda'),
    (changed(SYMBOLIC, potential='m*g*sin(q1)'), 'model.potential', "'m'"),
    (changed(SYMBOLIC, potential='g*sin(dq1)'), 'model.potential', 'dq1'),
    (changed(SYMBOLIC, potential=['g']), 'model.potential', 'expression string'),
    (changed(SYMBOLIC, joints=['j1']), 'model.joints', '2 entries'),
    (changed(SYMBOLIC, joints=['j1', 'j1']), 'model.joints', 'twice'),
    (changed(SYMBOLIC, constants={'a': 'three'}), 'model.constants.a', 'number'),
    (changed(SYMBOLIC, constants={'q1': 1.0}), 'model.constants.q1', 'coordinate'),
    (changed(SYMBOLIC, constants={'dq2': 1.0}), 'model.constants.dq2', 'velocity'),
    (changed(SYMBOLIC, constants={'pi': 3.0}), 'model.constants.pi', 'reserved'),
    (changed(SYMBOLIC, gravity=[0.0, 0.0, -9.81]), 'model.gravity', 'not a known parameter'),
])
def test_bad_symbolic_specs(spec, key, words):
    problem = error(spec)
    assert problem.key == key
    assert words in str(problem)


def test_a_parameter_file_without_model_names_it(tmp_path):
    path = tmp_path / 'params.yaml'
    path.write_text('/**:\n  ros__parameters:\n    rate: 100.0\n')
    assert error(str(path)).key == 'model'


def test_missing_example_robot_data_names_the_install_command(monkeypatch):
    assert 'pip install' not in str(error(changed(URDF, urdf='package://no_such_pkg/a.urdf')))
    # a ROS workspace without it: rosdep has no key for it, so `rosdep install` leaves it out
    monkeypatch.setattr(rigid, 'example_robot_data_share', lambda: None)
    problem = error(URDF)
    assert problem.key == 'model.urdf' and '\n' not in str(problem)
    assert 'example-robot-data is not installed' in str(problem)
    assert 'pip install --no-deps example-robot-data' in str(problem)
