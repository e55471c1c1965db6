"""The parameter home: rcl's merge rules, one reader for nodes and CLI, errors naming keys."""

from pathlib import Path
import shutil

import pytest

from continuum_ctrl.params import (Check, config_path, ConfigError, Field, file_parameters,
                                   load_yaml, model_spec, node_parameters, read_yaml, Reader,
                                   real_list, real_literal, Schema)
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


def test_a_key_is_read_as_its_field_says():
    step = Field('number', 0.001, 'step', low=0.0, strict_low=True)
    engine = Field('string', 'builtin', 'engine', choices=('builtin', 'mujoco'))
    top = Reader({'plant': {'engine': 'mujoco'}}, '').namespace('plant')
    assert top.field('step', step) == 0.001 and top.field('engine', engine) == 'mujoco'
    with pytest.raises(ConfigError) as err:
        Reader({'step': 0.0}, 'plant').field('step', step)
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


def test_exponent_numbers_are_floats_as_rcl_reads_them(tmp_path):
    # PyYAML (YAML 1.1) reads 3e-3 as a string; rcl and YAML 1.2 as a number
    path = tmp_path / 'overlay.yaml'
    path.write_text('continuum_controller:\n  ros__parameters:\n    velocity_filter: 3e-3\n'
                    '    gains: {kp: [2E5, -1.5e+2, .5e1]}\n    name: "1e-3"\n'
                    '    frame: e3\n')
    values = file_parameters([config_path('panda.yaml'), path], 'continuum_controller')[0]
    assert values['velocity_filter'] == 0.003
    assert values['gains']['kp'] == [2e5, -150.0, 5.0]
    assert values['name'] == '1e-3' and values['frame'] == 'e3'


@pytest.mark.parametrize('value', [900, 0, -0.0, 2642.0, 1e-9, -3.5e21, 0.1 + 0.2, 123456789])
def test_a_written_float_reads_back_a_float_of_its_digits(value):
    # rcl types `900` an integer: a double parameter, or a list mixing it with floats, refused
    read = load_yaml(f'a: {real_literal(value)}\nb: {real_list([value, 1.5, value], 9)}')
    assert type(read['a']) is float and read['a'] == pytest.approx(value, rel=1e-5, abs=0)
    assert all(type(v) is float for v in read['b']) and read['b'][0] == pytest.approx(value)


#: a small table of two namespaces, one per-joint vector and a rule across keys
TABLE = Schema({
    'mode': Field('string', 'effort', 'mode', choices=('effort', 'pressure')),
    'out.area': Field('numbers', ..., 'area', 0.0, strict_low=True, per_joint=True,
                      required=True, when=('mode', ('pressure',))),
    'out.p_min': Field('number', 0.0, 'lowest'),
    'out.p_max': Field('number', ..., 'highest', required=True),
    'out.limits.rate': Field('numbers', [0.5], 'rate', 0.0, per_joint=True),
    'out.band': Field('numbers', [1.0, 2.0], 'band', length=2),
    'out.extra': Field('numbers', ..., 'optional, no default'),
}, (Check('out.p_max', ('out.p_min', 'out.p_max'), lambda low, high: high > low,
          lambda low, high: f'must be > {low}, got {high}'),))


def test_a_schema_fills_the_defaults_and_expands_one_number_per_joint():
    values = TABLE.parse({'out': {'p_max': 5.0}}, joints=3)
    assert values == {'mode': 'effort', 'out.p_min': 0.0, 'out.p_max': 5.0,
                      'out.limits.rate': [0.5] * 3, 'out.band': [1.0, 2.0]}
    assert values.given == {'out.p_max'}            # 'out.extra' absent: left to the layer
    values = TABLE.parse({'mode': 'pressure', 'out': {'p_max': 5.0, 'area': 2,
                                                      'limits': {'rate': [1, 2, 3]}}}, joints=3)
    assert values['out.area'] == [2.0] * 3 and values['out.limits.rate'] == [1.0, 2.0, 3.0]


@pytest.mark.parametrize('tree, key, problem', [
    ({'out': {'p_max': 1.0, 'limits': {'rates': 1.0}}}, 'out.limits.rates',
     'is not a known parameter'),
    ({'out': {'p_max': 1.0, 'limits': {'rate': [1.0, 2.0]}}}, 'out.limits.rate',
     'must have 1 or 3 entries (one per joint), got 2'),
    ({'out': {'p_max': 1.0, 'band': [1.0]}}, 'out.band', 'must have 2 entries, got 1'),
    ({'out': {'p_max': 1.0, 'limits': 4.0}}, 'out.limits', 'must be a namespace of parameters'),
    ({'out': {}}, 'out.p_max', 'is required but missing'),
    ({'out': {'p_mx': 1.0}}, 'out.p_mx', "did you mean 'out.p_max'"),
    ({'out': {'p_max': 1.0}, 'mode': 'pressure'}, 'out.area', 'is required but missing'),
    ({'out': {'p_max': 1.0}, 'mode': 'vacuum'}, 'mode', 'must be one of effort, pressure'),
    ({'out': {'p_max': -1.0}}, 'out.p_max', 'must be > 0.0, got -1.0'),
])
def test_a_schema_refuses_a_bad_tree_with_one_error_naming_the_key(tree, key, problem):
    with pytest.raises(ConfigError) as err:
        TABLE.parse(tree, joints=3)
    assert err.value.key == key and problem in err.value.problem


def test_a_key_read_only_in_another_mode_is_known_but_not_read():
    values = TABLE.parse({'out': {'p_max': 1.0, 'area': 'not read'}}, joints=3)
    assert 'out.area' not in values


def test_a_typo_is_reported_before_a_check_it_would_mislead():
    with pytest.raises(ConfigError) as err:     # p_min misspelt: 0.0 would fail the rule
        TABLE.parse({'out': {'p_max': -1.0, 'p_mn': -2.0}}, joints=3)
    assert err.value.key == 'out.p_mn'


def test_a_schema_reads_its_namespace_under_a_prefix_and_joins_another():
    table = Schema({'model.sections.length': Field('numbers', ..., 'l', required=True)})
    assert table.parse({'sections': {'length': 1}}, 'model') == {'model.sections.length': [1.0]}
    with pytest.raises(ConfigError) as err:
        table.parse({'sections': {'length': 1, 'colour': 'red'}}, 'model')
    assert err.value.key == 'model.sections.colour'
    both = table + Schema({'model.type': Field('string', 'x', 't')}, ignored=('model.note',))
    assert both.parse({'sections': {'length': 1}, 'note': 3}, 'model') == {
        'model.sections.length': [1.0], 'model.type': 'x'}


def test_a_key_of_kind_any_is_read_as_given_and_an_ignored_namespace_whole():
    table = Schema({'model.potential': Field('any', ..., 'U', required=True)},
                   ignored=('model.constants',))
    tree = {'potential': ['not', 'checked'], 'constants': {'free': 'name'}}
    assert table.parse(tree, 'model') == {'model.potential': ['not', 'checked']}
    with pytest.raises(ConfigError) as err:
        table.parse({'potentail': '0'}, 'model')
    assert err.value.key == 'model.potentail' and "'model.potential'" in err.value.problem
