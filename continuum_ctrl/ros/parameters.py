"""
ROS parameters of a node from a table of Fields: declaration, collection, all-or-nothing updates.

Every field is declared with a ParameterDescriptor (description, range, type), showing its
default when not given; fields with no default and no value stay declared but unset (a static
type), so they can be set later. Only values actually given reach the parser, which applies the
defaults itself.
`model.*` parameters are declared read-only from whatever the parameter file gives. Integers
given for float parameters are widened, a single number for an array parameter becomes a
one-element array, as YAML authors expect, and array values reach the parser as lists.
"""

import array

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                SetParametersResult)
from rclpy.exceptions import InvalidParameterValueException, ParameterUninitializedException
from rclpy.parameter import Parameter

from continuum_ctrl.config import ConfigError, nest

#: Field.kind -> ROS parameter type
TYPES = {
    'bool': Parameter.Type.BOOL,
    'number': Parameter.Type.DOUBLE,
    'numbers': Parameter.Type.DOUBLE_ARRAY,
    'integer': Parameter.Type.INTEGER,
    'string': Parameter.Type.STRING,
    'strings': Parameter.Type.STRING_ARRAY,
}


def _coerce(kind, value):
    if isinstance(value, array.array):
        value = value.tolist()
    if kind == 'number' and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind == 'numbers':
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = [value]
        if isinstance(value, (list, tuple)) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return [float(v) for v in value]
    return value


def _descriptor(name, field):
    descriptor = ParameterDescriptor(name=name, type=TYPES[field.kind].value,
                                     description=field.description)
    if field.kind == 'number' and field.low is not None and field.high is not None:
        descriptor.floating_point_range = [FloatingPointRange(
            from_value=float(field.low), to_value=float(field.high))]
    if field.kind == 'integer':
        descriptor.integer_range = [IntegerRange(from_value=int(field.low),
                                                 to_value=int(field.high), step=1)]
    return descriptor


class NodeParameters:
    """
    The parameters of one node: declared from `fields`, parsed by `parse(tree)`.

    ``parse(tree, model)`` takes the nested tree of set values (without `model` and
    `use_sim_time`) and the nested `model` namespace, and returns validated settings or raises
    ConfigError. `on_change(settings, names)` is called
    after an accepted runtime update.
    """

    def __init__(self, node, fields, parse, on_change=None):
        self.node = node
        self.fields = fields
        self.parse = parse
        self.on_change = on_change
        overrides = {name: p.value for name, p in node._parameter_overrides.items()}
        self.values = {}
        for name, field in fields.items():
            descriptor = _descriptor(name, field)
            if name in overrides:
                self.values[name] = _coerce(field.kind, overrides[name])
            value = self.values.get(name, field.default)
            try:
                node.declare_parameter(name, TYPES[field.kind] if value is ... else value,
                                       descriptor, ignore_override=True)
            except InvalidParameterValueException:     # outside the descriptor's range
                raise ConfigError(name, f'must be in [{field.low:g}, {field.high:g}], got '
                                        f'{value!r}') from None
        model = {}
        for name in sorted(n for n in overrides if n.startswith('model.')):
            model[name] = overrides[name]
            node.declare_parameter(name, overrides[name], ParameterDescriptor(
                name=name, read_only=True, description='dynamics model (read-only)'))
        unknown = sorted(set(overrides) - set(fields) - set(model) - {'use_sim_time'})
        if unknown:
            raise ConfigError(unknown[0], 'is not a known parameter')
        self.model = nest(model).get('model', {})
        self.settings = parse(nest(self.values), self.model)
        node.add_on_set_parameters_callback(self._on_set)

    def _on_set(self, params):
        values = dict(self.values)
        changed = []
        for param in params:
            if param.name == 'use_sim_time' or param.name.startswith('model.'):
                continue
            if param.name not in self.fields:
                return SetParametersResult(successful=False,
                                           reason=f"parameter '{param.name}' is not known")
            changed.append(param.name)
            if param.type_ == Parameter.Type.NOT_SET:
                values.pop(param.name, None)
            else:
                values[param.name] = _coerce(self.fields[param.name].kind, param.value)
        if not changed:
            return SetParametersResult(successful=True)
        try:
            settings = self.parse(nest(values), self.model)
        except ConfigError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        self.values, self.settings = values, settings
        if self.on_change is not None:
            self.on_change(settings, changed)
        return SetParametersResult(successful=True)

    def get(self, name):
        """Return the value of a declared parameter, or None when unset."""
        try:
            return self.node.get_parameter(name).value
        except ParameterUninitializedException:
            return None
