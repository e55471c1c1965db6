"""
Parameter trees and typed, validated reads of them; every error names its full dotted key.

Nested mappings and dotted ROS parameter names (``model.sections.length``) describe the same
tree; `nest` and `flatten` convert between them. A `Field` describes one parameter of a
schema (ROS type, default, bounds, allowed names, description): the nodes declare their
parameters from tables of Fields, `Reader.field` reads one with its default, bounds and
choices, and `continuum_ctrl.apps.docs` writes the parameter reference from the tables.
"""

import difflib
from dataclasses import dataclass
from typing import Any, Collection, Dict, List, Optional, Tuple

from continuum_ctrl.params.errors import ConfigError

#: marks a parameter without default (required, or taken from elsewhere)
REQUIRED: Any = ...


@dataclass(frozen=True)
class Field:
    """
    One parameter: kind (ROS type), default (``...``: none), description, bounds, choices.

    `low` is excluded when `strict_low`; `choices` lists the names a string parameter may
    take (None: any string). Kind ``any`` (a schema's, never declared) is read as given, for
    the layer to check. For `params.schema.Schema.parse`: `per_joint` numbers are one
    per joint, one number standing for all; `length` fixes how many numbers or strings;
    `required` (without default) must be given; `when` ``(key, values)`` reads the key only
    where `key` has one of `values` (elsewhere it is accepted and ignored).
    """

    kind: str
    default: Any
    description: str
    low: Optional[float] = None
    high: Optional[float] = None
    choices: Optional[Tuple[str, ...]] = None
    strict_low: bool = False
    per_joint: bool = False
    length: Optional[int] = None
    required: bool = False
    when: Optional[Tuple[str, Tuple[Any, ...]]] = None


def nest(flat: Dict[str, Any]) -> Dict[str, Any]:
    """Turn dotted keys (``{'model.type': 'urdf'}``) into nested mappings."""
    tree: Dict[str, Any] = {}
    for key, value in flat.items():
        *parents, leaf = key.split('.')
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(key, 'is both a value and a namespace')
        if isinstance(node.get(leaf), dict) and not isinstance(value, dict):
            raise ConfigError(key, 'is both a value and a namespace')
        node[leaf] = value
    return tree


def flatten(tree: Dict[str, Any], prefix: str = '') -> Dict[str, Any]:
    """Turn nested mappings into dotted keys, the inverse of `nest`."""
    flat: Dict[str, Any] = {}
    for key, value in tree.items():
        name = f'{prefix}{key}'
        if isinstance(value, dict):
            flat.update(flatten(value, name + '.'))
        else:
            flat[name] = value
    return flat


class Reader:
    """
    Typed, validated access to one parameter namespace; every error names its key.

    Keys read are recorded so that `finish` can reject unknown ones. A required key that is
    missing while a similar unknown key is given is reported as that unknown key (a typo).
    """

    def __init__(self, tree: Dict[str, Any], prefix: str) -> None:
        self.tree = tree
        self.prefix = prefix
        self.used: set = set()

    def key(self, name: str) -> str:
        """Return the full dotted name of `name` in this namespace."""
        return f'{self.prefix}.{name}' if self.prefix else name

    def has(self, name: str) -> bool:
        """Whether `name` is given."""
        return name in self.tree

    def raw(self, name: str, default: Any = REQUIRED) -> Any:
        """Return the value of `name` as given; `default` when absent (required when not set)."""
        self.used.add(name)
        if name not in self.tree:
            if default is REQUIRED:
                unknown = [k for k in self.tree if k not in self.used]
                close = difflib.get_close_matches(name, unknown, n=1, cutoff=0.8)
                if close:
                    raise ConfigError(self.key(close[0]), f"is not a known parameter (did you "
                                                          f"mean '{self.key(name)}', which is "
                                                          f"required but missing?)")
                raise ConfigError(self.key(name), 'is required but missing')
            return default
        return self.tree[name]

    def string(self, name: str, default: Any = REQUIRED,
               choices: Optional[Collection[str]] = None) -> str:
        """Read a string, optionally one of `choices` (the error lists them in their order)."""
        value = self.raw(name, default)
        if not isinstance(value, str):
            raise ConfigError(self.key(name), f'must be a string, got {value!r}')
        if choices is not None and value not in choices:
            raise ConfigError(self.key(name), f'must be one of {", ".join(choices)}; '
                                              f'got {value!r}')
        return value

    def boolean(self, name: str, default: Any = REQUIRED) -> bool:
        """Read a boolean: true or false, neither a number nor a string."""
        value = self.raw(name, default)
        if not isinstance(value, bool):
            raise ConfigError(self.key(name), f'must be true or false, got {value!r}')
        return value

    def number(self, name: str, default: Any = REQUIRED, low: Optional[float] = None,
               high: Optional[float] = None, strict_low: bool = False) -> float:
        """Read a finite float, optionally within ``[low, high]`` (low excluded if strict_low)."""
        return self._check_range(name, self._to_float(name, self.raw(name, default)),
                                 low, high, strict_low)

    def integer(self, name: str, default: Any = REQUIRED, low: Optional[int] = None,
                high: Optional[int] = None) -> int:
        """Read a whole number (not a bool, not a float), optionally within ``[low, high]``."""
        value = self.raw(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(self.key(name), f'must be an integer, got {value!r}')
        if (low is not None and value < low) or (high is not None and value > high):
            raise ConfigError(self.key(name), f'must be in [{low}, {high}], got {value}')
        return value

    def numbers(self, name: str, default: Any = REQUIRED, length: Optional[int] = None,
                low: Optional[float] = None, high: Optional[float] = None,
                strict_low: bool = False) -> List[float]:
        """Read a list of finite floats, optionally of a given length and within bounds."""
        value = self.raw(name, default)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(self.key(name), f'must be a list of numbers, got {value!r}')
        out = [self._check_range(name, self._to_float(name, v), low, high, strict_low)
               for v in value]
        if length is not None and len(out) != length:
            raise ConfigError(self.key(name), f'must have {length} entries, got {len(out)}')
        return out

    def per_joint(self, name: str, n: int, default: Any = REQUIRED,
                  low: Optional[float] = None, strict_low: bool = False,
                  high: Optional[float] = None) -> List[float]:
        """Read `n` numbers, one per joint; one number given stands for all joints."""
        values = self.numbers(name, default, low=low, high=high, strict_low=strict_low)
        if len(values) == 1:
            values = values * n
        if len(values) != n:
            raise ConfigError(self.key(name), f'must have 1 or {n} entries (one per joint), '
                                              f'got {len(values)}')
        return values

    def strings(self, name: str, default: Any = REQUIRED,
                length: Optional[int] = None) -> List[str]:
        """Read a list of strings, optionally of a given length."""
        value = self.raw(name, default)
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ConfigError(self.key(name), f'must be a list of strings, got {value!r}')
        if length is not None and len(value) != length:
            raise ConfigError(self.key(name), f'must have {length} entries, got {len(value)}')
        return list(value)

    def field(self, name: str, field: Field, joints: Optional[int] = None) -> Any:
        """
        Read `name` as `field` says: its kind, default, bounds, choices and length.

        A `per_joint` field is read as `joints` numbers (`per_joint`).
        """
        if field.per_joint:
            if joints is None:
                raise ValueError(f'{self.key(name)} is per joint: the joint count is needed')
            return self.per_joint(name, joints, field.default, field.low, field.strict_low,
                                  field.high)
        if field.kind == 'number':
            return self.number(name, field.default, field.low, field.high, field.strict_low)
        if field.kind == 'integer':
            low, high = (None if b is None else int(b) for b in (field.low, field.high))
            return self.integer(name, field.default, low, high)
        if field.kind == 'bool':
            return self.boolean(name, field.default)
        if field.kind == 'string':
            return self.string(name, field.default, field.choices)
        if field.kind == 'strings':
            return self.strings(name, field.default, field.length)
        if field.kind == 'any':
            return self.raw(name, field.default)
        return self.numbers(name, field.default, field.length, field.low, field.high,
                            field.strict_low)

    def namespace(self, name: str, default: Any = REQUIRED) -> 'Reader':
        """Return a nested Reader for the sub-namespace `name` (an empty one when absent)."""
        value = self.raw(name, {} if default is REQUIRED else default)
        if not isinstance(value, dict):
            raise ConfigError(self.key(name), 'must be a namespace of parameters')
        return Reader(value, self.key(name))

    def finish(self) -> None:
        """Reject keys that were given but never read."""
        unknown = sorted(set(self.tree) - self.used)
        if unknown:
            raise ConfigError(self.key(unknown[0]), 'is not a known parameter')

    def _to_float(self, name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(self.key(name), f'must be a number, got {value!r}')
        value = float(value)
        if value != value or value in (float('inf'), float('-inf')):
            raise ConfigError(self.key(name), f'must be finite, got {value}')
        return value

    def _check_range(self, name: str, value: float, low: Optional[float],
                     high: Optional[float], strict_low: bool) -> float:
        if low is not None and (value <= low if strict_low else value < low):
            bound = f'> {low}' if strict_low else f'>= {low}'
            raise ConfigError(self.key(name), f'must be {bound}, got {value}')
        if high is not None and value > high:
            raise ConfigError(self.key(name), f'must be <= {high}, got {value}')
        return value
