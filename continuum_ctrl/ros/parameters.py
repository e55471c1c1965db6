"""
ROS parameters of a node from a table of Fields: declaration, collection, all-or-nothing updates.

The node is made with ``automatically_declare_parameters_from_overrides=True``, so what the
parameter files and ``-p`` give is declared when the node starts; `NodeParameters` then
re-declares every field with a ParameterDescriptor (description, range, type, and the allowed
names as additional constraints, which `ros2 param describe` prints), showing its
default when not given; fields with no default and no value stay declared but unset (a static
type), so they can be set later. Only values actually given reach the parser, which applies the
defaults itself. `model.*` parameters are re-declared read-only. Integers given for float
parameters are widened, a single number for an array parameter becomes a one-element array,
as YAML authors expect, and array values reach the parser as lists.
"""

import array
from typing import Any, Callable, Dict, Optional

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                SetParametersResult)
from rclpy.exceptions import (InvalidParameterTypeException, InvalidParameterValueException,
                              ParameterUninitializedException)
from rclpy.parameter import Parameter

from continuum_ctrl.params import ConfigError, nest
from continuum_ctrl.params.files import ROS_KEYS

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
    """Return the ROS descriptor of `field`: type, description, range and allowed names."""
    descriptor = ParameterDescriptor(name=name, type=TYPES[field.kind].value,
                                     description=field.description)
    if field.choices is not None:
        descriptor.additional_constraints = 'one of: ' + ', '.join(field.choices)
    if field.kind == 'number' and field.low is not None and field.high is not None:
        descriptor.floating_point_range = [FloatingPointRange(
            from_value=float(field.low), to_value=float(field.high))]
    if field.kind == 'integer':
        descriptor.integer_range = [IntegerRange(from_value=int(field.low),
                                                 to_value=int(field.high), step=1)]
    return descriptor


#: parameters rclpy declares on every node by itself
RCLPY_KEYS = ROS_KEYS + ('start_type_description_service',)


class NodeParameters:
    """
    The parameters of one node: declared from `fields`, parsed by the parser given to `bind`.

    `values` holds the values given (dotted names, without `model.*`), `model` the nested
    `model` namespace, `problem` a ConfigError found while declaring (an unknown key), raised
    by `bind`; a value of the wrong type or out of range stays in `values` for the parser.
    Before `bind` (an unconfigured lifecycle node) a set value is only checked against its
    descriptor; after it, ``parse(tree)`` validates every update all-or-nothing, and
    `on_change(settings, names)` runs after an accepted one.
    """

    def __init__(self, node: Any, fields: Dict[str, Any],
                 on_change: Optional[Callable[[Any, list], None]] = None) -> None:
        self.node = node
        self.fields = fields
        self.on_change = on_change
        self.parse: Optional[Callable[[Dict[str, Any]], Any]] = None
        self.settings: Any = None
        self.problem: Optional[ConfigError] = None
        names = node.list_parameters([], 0).names
        given = {name: node.get_parameter(name).value for name in names
                 if name not in RCLPY_KEYS}
        self.values: Dict[str, Any] = {}
        for name, field in fields.items():
            if name in given:
                node.undeclare_parameter(name)
                self.values[name] = _coerce(field.kind, given[name])
            value = self.values.get(name, field.default)
            try:
                node.declare_parameter(name, TYPES[field.kind] if value is ... else value,
                                       _descriptor(name, field), ignore_override=True)
            except (InvalidParameterTypeException, InvalidParameterValueException):
                # declared unset; the parser names the key and the problem at `bind`
                node.declare_parameter(name, TYPES[field.kind], _descriptor(name, field),
                                       ignore_override=True)
        model = {}
        for name in sorted(n for n in given if n.startswith('model.')):
            model[name] = given[name]
            node.undeclare_parameter(name)
            node.declare_parameter(name, given[name], ParameterDescriptor(
                name=name, read_only=True, description='dynamics model (read-only)'),
                ignore_override=True)
        unknown = sorted(set(given) - set(fields) - set(model))
        if unknown:
            self.problem = self.problem or ConfigError(unknown[0], 'is not a known parameter')
        self.model = nest(model).get('model', {})
        node.add_on_set_parameters_callback(self._on_set)

    def bind(self, parse: Callable[[Dict[str, Any]], Any]) -> Any:
        """Parse the current values with `parse` and keep it for updates; return the settings."""
        if self.problem is not None:
            raise self.problem
        self.settings = parse(nest(self.values))
        self.parse = parse
        return self.settings

    def unbind(self) -> None:
        """Forget the parser and settings (cleanup): updates are only checked, not parsed."""
        self.parse, self.settings = None, None

    def _on_set(self, params: list) -> SetParametersResult:
        values = dict(self.values)
        changed = []
        for param in params:
            if param.name in RCLPY_KEYS or param.name.startswith('model.'):
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
        settings = None
        if self.parse is not None:
            try:
                settings = self.parse(nest(values))
            except ConfigError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        self.values = values
        if self.parse is not None:
            self.settings = settings
            if self.on_change is not None:
                self.on_change(settings, changed)
        return SetParametersResult(successful=True)

    def get(self, name: str) -> Any:
        """Return the value of a declared parameter, or None when unset."""
        try:
            return self.node.get_parameter(name).value
        except ParameterUninitializedException:
            return None
