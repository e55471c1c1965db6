"""The parameter home: rcl's merge rules, one reader for nodes and CLI, errors naming keys."""

from pathlib import Path
import shutil

import pytest

from continuum_ctrl.params import (config_path, ConfigError, Field, file_parameters,
                                   model_spec, node_parameters, read_yaml, Reader)
from support.unreadable import unreadable


def test_model_spec_of_a_node_merges_the_wildcard_section_as_rcl_does():
    spec = model_spec(config_path('continuum_3section.yaml'), 'continuum_simulator')
    assert spec['type'] == 'continuum_integral'               # the node's section wins
    assert spec['limit_stiffness'] == 5000.0
    assert spec['sections']['length'] == [0.2, 0.2, 0.2]      # from /**
    assert model_spec(config_path('continuum_3section.yaml'))['type'] == 'continuum_cog'


def test_sections_merge_in_file_order_with_wildcards_and_later_keys_winning():
    data = {
        'ctl': {'ros__parameters': {'a': 1, 'b': {'c': 2}}},
        '/**': {'ros__parameters': {'a': 0, 'b': {'d': 3}, 'e': 4}},
        '/ns/*': {'ros__parameters': {'e': 5}},
        '/ctl': {'ros__parameters': {'f': 6}},
        'other': {'ros__parameters': {'g': 7}},
    }
    assert node_parameters(data, 'ctl') == {'a': 0, 'b.c': 2, 'b.d': 3, 'e': 4, 'f': 6}
    assert node_parameters(data, '/ns/ctl') == {'a': 0, 'b.d': 3, 'e': 5}
    assert node_parameters({'a': {'b': 1}}, 'ctl') == {'a.b': 1}    # a bare mapping


def test_several_files_merge_in_order(tmp_path):
    first, second = tmp_path / 'a.yaml', tmp_path / 'b.yaml'
    first.write_text('/**:\n  ros__parameters:\n    rate_hz: 100.0\n'
                     '    model:\n      type: urdf\n')
    second.write_text('n:\n  ros__parameters:\n    rate_hz: 200.0\n')
    tree, model = file_parameters([first, second], 'n')
    assert tree == {'rate_hz': 200.0} and model == {'type': 'urdf'}


@pytest.mark.parametrize('text, named', [
    ('a: [1, 2\n', 'is not valid YAML (line 2)'),
    ('- 1\n', 'must hold a mapping'),
])
def test_a_malformed_file_is_one_line_naming_it(tmp_path, text, named):
    path = tmp_path / 'bad.yaml'
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        file_parameters(path, 'n')
    assert named in str(err.value) and str(path) in str(err.value)
    assert '\n' not in str(err.value)


def test_a_typo_beside_a_required_key_names_the_typo():
    reader = Reader({'mass_matrx': ['1']}, 'model')
    with pytest.raises(ConfigError) as err:
        reader.strings('mass_matrix')
    assert err.value.key == 'model.mass_matrx' and "'model.mass_matrix'" in str(err.value)
    with pytest.raises(ConfigError) as err:
        Reader({'potential': '0'}, 'model').strings('mass_matrix')
    assert err.value.key == 'model.mass_matrix'


def test_a_key_is_read_as_its_field_in_a_table_by_its_dotted_name():
    table = {'plant.step': Field('number', 0.001, 'step', low=0.0, strict_low=True),
             'plant.engine': Field('string', 'builtin', 'engine', choices=('builtin', 'mujoco'))}
    top = Reader({'plant': {'engine': 'mujoco'}}, '').namespace('plant')
    assert top.from_table('step', table) == 0.001 and top.from_table('engine', table) == 'mujoco'
    with pytest.raises(ConfigError) as err:
        Reader({'step': 0.0}, 'plant').from_table('step', table)
    assert err.value.key == 'plant.step'


BAD_INPUTS = Path(__file__).resolve().parents[1] / 'data' / 'bad_inputs'


@pytest.mark.parametrize('kind, reason', [('binary', 'binary data'),
                                          ('not_utf8', 'another encoding'),
                                          ('directory', 'Is a directory'),
                                          ('unreadable', 'Permission denied')])
@pytest.mark.parametrize('read', ['parameters', 'run'])
def test_an_unreadable_file_is_one_config_error_naming_it(kind, reason, read, tmp_path):
    from continuum_ctrl.identify.data import Joints, read_run

    path = {'binary': BAD_INPUTS / 'binary.yaml', 'not_utf8': BAD_INPUTS / 'not_utf8.yaml',
            'directory': tmp_path / 'folder.csv', 'unreadable': tmp_path / 'run.csv'}[kind]
    if kind == 'directory':
        path.mkdir()
    elif kind == 'unreadable':
        unreadable(path, '/**: {ros__parameters: {}}\n')
    if read == 'run' and path.suffix != '.csv':     # a run is read as CSV by its suffix
        path = Path(shutil.copy(path, tmp_path / 'run.csv'))
    with pytest.raises(ConfigError) as error:
        if read == 'parameters':
            read_yaml(path)
        else:
            read_run(path, Joints(['a'], ['a']))
    assert str(path) in str(error.value) and reason in str(error.value)
    assert '\n' not in str(error.value)
