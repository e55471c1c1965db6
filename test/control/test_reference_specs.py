"""
The reference types' registry (control/reference_specs.py): one class per `reference.type`.

Every registered type parses from its parameters, reads back as the same parameters, and
builds a reference that starts at the measured pose (a multisine: centred on it); the type
names, the parameter table and the loop's planning all come from the registry, and an unknown
name is one error line listing the registered ones.
"""

from dataclasses import dataclass

from support.continuum_reference import REFERENCE_ARM
import numpy as np
import pytest

from continuum_ctrl import load_model
from continuum_ctrl.control import reference_specs
from continuum_ctrl.control.loop import ControlLoop
from continuum_ctrl.control.reference_specs import (HoldSpec, reference_fields,
                                                    REFERENCE_TYPES, register)
from continuum_ctrl.control.settings import ControllerSettings, FIELDS
from continuum_ctrl.control.task_space import TaskSpace
from continuum_ctrl.params import ConfigError, Field

N = 9
Q0 = np.full(N, 0.013)
#: a reachable point near the tip at Q0, m
NEAR_TIP = [0.003, 0.0, 0.636]

#: parameters of each registered type (a new type adds its example here)
EXAMPLES = {
    'hold': {},
    'sinusoid': {'amplitude': [0.002], 'frequency': [0.5, 1.0, 0.7] * 3},
    'min_jerk': {'goal': [0.02], 'duration': 1.5},
    'trajectory': {'times': [1.0, 2.0], 'positions': [0.02] * N + [0.01] * N},
    'multisine': {'amplitude': [0.002], 'band': [0.2, 2.0], 'components': 2},
    'tip_circle': {'tip_radius': 0.01, 'tip_frequency': 0.2},
    'tip_waypoints': {'times': [1.0], 'tip_positions': NEAR_TIP},
}


@pytest.fixture(scope='module')
def arm():
    return load_model(REFERENCE_ARM)


def parse(model, reference, **top):
    tree = {'gains': {'kp': [100.0] * model.n, 'kd': [20.0] * model.n},
            'reference': dict(reference), **top}
    return ControllerSettings.parse(tree, model)


def parameters(spec):
    """Return the `reference.*` values that parse to `spec` (joints in model order)."""
    out = {'type': spec.kind, 'blend_time': spec.blend_time}
    for name in spec.fields:
        value = getattr(spec, name)
        if value is not None:
            out[name] = np.ravel(value).tolist() if np.ndim(value) else value
    return out


def test_every_type_has_an_example():
    assert set(EXAMPLES) == set(REFERENCE_TYPES), 'give each registered type an example'


@pytest.mark.parametrize('kind', list(REFERENCE_TYPES))
def test_every_type_round_trips_through_parsing_and_starts_at_q0(arm, kind):
    spec = parse(arm, {'type': kind, **EXAMPLES[kind]}).reference
    assert type(spec) is REFERENCE_TYPES[kind] and spec.kind == kind
    again = parse(arm, parameters(spec)).reference
    assert type(again) is type(spec)
    for name in ('blend_time', *spec.fields):
        ours, theirs = getattr(spec, name), getattr(again, name)
        assert (ours is None and theirs is None) or np.array_equal(ours, theirs), name
    task = TaskSpace(arm, parse(arm, {}).task) if spec.needs_task_space else None
    reference = spec.build(Q0, task)
    assert reference.n == N
    q, qd, qdd = (np.array(a) for a in reference.sample(0.0))
    assert np.all(np.isfinite(np.concatenate((q, qd, qdd))))
    if kind == 'multisine':            # its sines start at their phases, around q0
        assert np.array_equal(reference.center, Q0)
        swing = np.max([np.abs(reference.sample(t)[0] - Q0) for t in np.linspace(0, 9, 91)])
        assert 0.0 < swing <= 0.002 + 1e-12
    else:
        np.testing.assert_allclose(q, Q0, rtol=0.0, atol=1e-9)


def test_task_space_types_are_planned_aside_by_the_loop(arm):
    for kind, spec_type in REFERENCE_TYPES.items():
        loop = ControlLoop(arm, parse(arm, {'type': kind, **EXAMPLES[kind]}, resume_count=1),
                           2e-3)
        loop.set_state(Q0, np.zeros(N), 0.0)
        assert loop.status == 'active'
        assert loop.awaiting_plan == spec_type.needs_task_space, kind
        assert loop.planner.step() == spec_type.needs_task_space, kind
        loop.tick(2e-3)
        assert not loop.awaiting_plan and loop.reference.reference.n == N


def test_unknown_type_is_one_line_listing_the_registered_names(arm):
    with pytest.raises(ConfigError) as raised:
        parse(arm, {'type': 'spline'})
    message = str(raised.value)
    assert raised.value.key == 'reference.type' and '\n' not in message
    assert ', '.join(REFERENCE_TYPES) in message and "'spline'" in message


def test_parameter_table_and_choices_come_from_the_registry():
    assert FIELDS['reference.type'].choices == tuple(REFERENCE_TYPES)
    own = {f'reference.{name}' for spec in REFERENCE_TYPES.values() for name in spec.fields}
    table = {key for key in FIELDS if key.startswith('reference.')}
    assert table == own | {'reference.type', 'reference.blend_time'}
    for key in own:        # each row names the types that read the key, and only those
        readers = [kind for kind, spec in REFERENCE_TYPES.items()
                   if key.split('.', 1)[1] in spec.fields]
        named = [kind for part in FIELDS[key].description.split('; ')
                 for kind in part.split(': ', 1)[0].split(', ')]
        assert named == readers, key


def test_keys_of_another_type_are_ignored(arm):
    spec = parse(arm, {'type': 'hold', 'tip_radius': 0.01, 'goal': [0.5]}).reference
    assert isinstance(spec, HoldSpec) and spec.position is None


def test_registry_refuses_a_second_name_mismatched_keys_and_a_shared_key_redeclared(
        monkeypatch):
    monkeypatch.setattr(reference_specs, 'REFERENCE_TYPES', dict(REFERENCE_TYPES))

    @dataclass(frozen=True, kw_only=True)
    class Again(HoldSpec):
        kind = 'hold'

    with pytest.raises(ValueError, match='registered twice'):
        register(Again)

    @dataclass(frozen=True, kw_only=True)
    class Misnamed(HoldSpec):
        kind = 'misnamed'
        fields = {'pose': HoldSpec.fields['position']}

    with pytest.raises(ValueError, match='not its keys'):
        register(Misnamed)

    @dataclass(frozen=True, kw_only=True)
    class Wider(HoldSpec):
        kind = 'wider'
        fields = {'position': Field('numbers', [0.0], 'another default')}

    register(Wider)
    with pytest.raises(ValueError, match='reference.position'):
        reference_fields()
