"""
The generated parameter reference, and the allowed names of string parameters.

docs/parameters.md is written from the Field tables; a stale page fails here with the
command that rewrites it. Keys that take names validate against their Field's choices (one
error naming the key and every allowed name) and advertise them in their ROS descriptor.
"""

from pathlib import Path

import pytest

from continuum_ctrl.control.settings import FIELDS as LOOP_FIELDS
from continuum_ctrl.models import MODEL_TYPES, load_model
from continuum_ctrl.models.fields import MODEL_FIELDS
from continuum_ctrl.params import ConfigError, Reader
from continuum_ctrl.apps.docs import COMMAND, PAGE, render
from continuum_ctrl.models.integrators import INTEGRATORS
from continuum_ctrl.sim.plant import FIELDS as PLANT_FIELDS

ROOT = Path(__file__).resolve().parents[2]

#: the string keys that take names, and their Field
NAMED = {
    'reference.type': LOOP_FIELDS['reference.type'],
    'output.mode': LOOP_FIELDS['output.mode'],
    'output.message': LOOP_FIELDS['output.message'],
    'safe_mode': LOOP_FIELDS['safe_mode'],
    'integrator': PLANT_FIELDS['integrator'],
    'model.type': MODEL_FIELDS['model.type'],
}


def test_committed_page_is_current():
    page = ROOT / PAGE
    assert page.is_file(), f'{PAGE} is missing: run `{COMMAND}` in the repository root'
    assert page.read_text(encoding='utf-8') == render(), (
        f'{PAGE} is stale (a Field table changed): run `{COMMAND}` in the repository root '
        'and commit the page')


def test_page_lists_every_field_with_its_allowed_names():
    text = render()
    for table in (LOOP_FIELDS, PLANT_FIELDS, MODEL_FIELDS):
        for key in table:
            assert f'| `{key}` |' in text
    for field in NAMED.values():
        assert ', '.join(f'`{name}`' for name in field.choices) in text


def test_choices_match_what_the_code_accepts():
    assert NAMED['integrator'].choices == tuple(INTEGRATORS)
    assert NAMED['model.type'].choices == tuple(MODEL_TYPES)


@pytest.mark.parametrize('key', sorted(NAMED))
def test_unknown_name_is_one_line_naming_key_and_choices(key):
    field = NAMED[key]
    name = key.split('.')[-1]
    with pytest.raises(ConfigError) as raised:
        Reader({name: 'no_such_name'}, key.rpartition('.')[0]).field(name, field)
    message = str(raised.value)
    assert raised.value.key == key and '\n' not in message
    assert all(choice in message for choice in field.choices) and 'no_such_name' in message
    for choice in field.choices:
        assert Reader({name: choice}, '').field(name, field) == choice


def test_load_model_names_the_model_types():
    with pytest.raises(ConfigError) as raised:
        load_model({'type': 'pinocchio'})
    assert raised.value.key == 'model.type'
    assert all(name in str(raised.value) for name in MODEL_TYPES)


def test_ros_descriptor_advertises_choices_and_ranges():
    from continuum_ctrl.ros.parameters import _descriptor
    descriptor = _descriptor('reference.type', NAMED['reference.type'])
    assert descriptor.additional_constraints == 'one of: ' + ', '.join(
        NAMED['reference.type'].choices)
    rate = _descriptor('state_timeout', LOOP_FIELDS['state_timeout'])
    assert rate.additional_constraints == ''
    assert rate.floating_point_range[0].from_value == LOOP_FIELDS['state_timeout'].low
