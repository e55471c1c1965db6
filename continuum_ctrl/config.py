"""
Parameter files and the `model` namespace: one schema shared by ROS and `load_model`.

Parameter files are standard ROS 2 YAML (``node_name: {ros__parameters: {...}}``, ``/**``
wildcards allowed) or a bare mapping. Nested mappings and dotted ROS parameter names
(``model.sections.length``) describe the same tree; `nest` and `flatten` convert between them.
"""

from pathlib import Path

import yaml


class ConfigError(ValueError):
    """A bad parameter or parameter file; the message names the offending key."""

    def __init__(self, key, problem):
        self.key = key
        self.problem = problem
        super().__init__(f"parameter '{key}': {problem}" if key else problem)


def read_yaml(path):
    """Read a YAML file into a mapping; a missing or malformed file is a ConfigError."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError('', f"cannot read parameter file '{path}': {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError('', f"parameter file '{path}' is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError('', f"parameter file '{path}' must hold a mapping at the top level")
    return data


def node_parameters(data, node_name=None):
    """
    Return the parameter tree of one node in a ROS 2 parameter file.

    Looks for ``node_name: ros__parameters`` (then ``/**``); a file holding exactly one
    node's ``ros__parameters`` is taken whatever its name; a bare mapping is returned as is.
    """
    sections = {k: v['ros__parameters'] for k, v in data.items()
                if isinstance(v, dict) and isinstance(v.get('ros__parameters'), dict)}
    if not sections:
        return data
    for key in (node_name, '/' + node_name if node_name else None, '/**'):
        if key in sections:
            return sections[key]
    if len(sections) == 1:
        return next(iter(sections.values()))
    raise ConfigError('', f"parameter file holds several nodes {sorted(sections)}; "
                          f"none is named '{node_name}'")


def nest(flat):
    """Turn dotted keys (``{'model.type': 'urdf'}``) into nested mappings."""
    tree = {}
    for key, value in flat.items():
        *parents, leaf = key.split('.')
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(key, 'is both a value and a namespace')
        node[leaf] = value
    return tree


def flatten(tree, prefix=''):
    """Turn nested mappings into dotted keys, the inverse of `nest`."""
    flat = {}
    for key, value in tree.items():
        name = f'{prefix}{key}'
        if isinstance(value, dict):
            flat.update(flatten(value, name + '.'))
        else:
            flat[name] = value
    return flat


def model_spec(spec, node_name=None):
    """Return the `model` namespace as a nested dict, from a dict or a parameter-file path."""
    if isinstance(spec, (str, Path)):
        params = nest(flatten(node_parameters(read_yaml(spec), node_name)))
        if 'model' not in params:
            raise ConfigError('model', f"missing from parameter file '{spec}'")
        spec = params['model']
    if not isinstance(spec, dict):
        raise ConfigError('model', 'must be a mapping of model parameters')
    spec = nest(flatten(spec))
    if 'model' in spec and 'type' not in spec:
        spec = spec['model']
    return spec


class Reader:
    """
    Typed, validated access to one parameter namespace; every error names its key.

    Keys read are recorded so that `finish` can reject unknown ones.
    """

    def __init__(self, tree, prefix):
        self.tree = tree
        self.prefix = prefix
        self.used = set()

    def key(self, name):
        """Return the full dotted name of `name` in this namespace."""
        return f'{self.prefix}.{name}' if self.prefix else name

    def has(self, name):
        """Whether `name` is given."""
        return name in self.tree

    def raw(self, name, default=...):
        """Return the value of `name` as given; `default` when absent (required when not set)."""
        self.used.add(name)
        if name not in self.tree:
            if default is ...:
                raise ConfigError(self.key(name), 'is required but missing')
            return default
        return self.tree[name]

    def string(self, name, default=..., choices=None):
        """Read a string, optionally one of `choices`."""
        value = self.raw(name, default)
        if not isinstance(value, str):
            raise ConfigError(self.key(name), f'must be a string, got {value!r}')
        if choices is not None and value not in choices:
            raise ConfigError(self.key(name), f"must be one of {sorted(choices)}, got '{value}'")
        return value

    def boolean(self, name, default=...):
        """Read a boolean: true or false, neither a number nor a string."""
        value = self.raw(name, default)
        if not isinstance(value, bool):
            raise ConfigError(self.key(name), f'must be true or false, got {value!r}')
        return value

    def number(self, name, default=..., low=None, high=None, strict_low=False):
        """Read a finite float, optionally within ``[low, high]`` (low excluded if strict_low)."""
        return self._check_range(name, self._to_float(name, self.raw(name, default)),
                                 low, high, strict_low)

    def numbers(self, name, default=..., length=None, low=None, high=None, strict_low=False):
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

    def strings(self, name, default=..., length=None):
        """Read a list of strings, optionally of a given length."""
        value = self.raw(name, default)
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ConfigError(self.key(name), f'must be a list of strings, got {value!r}')
        if length is not None and len(value) != length:
            raise ConfigError(self.key(name), f'must have {length} entries, got {len(value)}')
        return list(value)

    def namespace(self, name, default=...):
        """Return a nested Reader for the sub-namespace `name` (an empty one when absent)."""
        value = self.raw(name, {} if default is ... else default)
        if not isinstance(value, dict):
            raise ConfigError(self.key(name), 'must be a namespace of parameters')
        return Reader(value, self.key(name))

    def finish(self):
        """Reject keys that were given but never read."""
        unknown = sorted(set(self.tree) - self.used)
        if unknown:
            raise ConfigError(self.key(unknown[0]), 'is not a known parameter')

    def _to_float(self, name, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(self.key(name), f'must be a number, got {value!r}')
        value = float(value)
        if value != value or value in (float('inf'), float('-inf')):
            raise ConfigError(self.key(name), f'must be finite, got {value}')
        return value

    def _check_range(self, name, value, low, high, strict_low):
        if low is not None and (value <= low if strict_low else value < low):
            bound = f'> {low}' if strict_low else f'>= {low}'
            raise ConfigError(self.key(name), f'must be {bound}, got {value}')
        if high is not None and value > high:
            raise ConfigError(self.key(name), f'must be <= {high}, got {value}')
        return value
