"""
ROS 2 parameter files, read the way rcl reads them, and the package's config directory.

A parameter file is standard ROS 2 YAML, ``NODE: {ros__parameters: {...}}``, or a bare
mapping. A node gets the sections whose name matches it (``/**``, ``/*``, ``name``,
``/name``, ``/ns/name``, with rcl's ``*`` and ``**`` wildcards) merged in file order, later
keys winning, as rcl merges them; `file_parameters` returns that merged tree. Every reader of
parameter files in the package (nodes, `load_model`, CLI commands) goes through this module.

A number in exponent form without a dot (``1e-3``, ``2E5``) is a float, as rcl (and YAML
1.2) read it; PyYAML's safe loader follows YAML 1.1 and reads it as a string (`load_yaml`).
"""

import re
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple, Union

import yaml

from continuum_ctrl.params.errors import ConfigError
from continuum_ctrl.params.fields import flatten, nest

PathLike = Union[str, Path]
#: the ROS package name: its share/ directory holds the installed config/
PACKAGE = 'continuum_ctrl'
#: keys every node has, which no schema of this package lists
ROS_KEYS = ('use_sim_time',)


def read_bytes(path: PathLike, what: str = 'file', key: str = '') -> bytes:
    """
    Return the bytes of file `path`; an unreadable one is a ConfigError naming `what` and it.

    Missing, a directory, no read permission: the system's reason (``Is a directory``, ...).
    """
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(key, f"cannot read {what} '{path}': {exc.strerror}") from None


def check_readable(path: PathLike, what: str = 'file', key: str = '') -> None:
    """Raise the ConfigError of `read_bytes` unless `path` opens for reading (read nothing)."""
    try:
        with open(path, 'rb'):
            pass
    except OSError as exc:
        raise ConfigError(key, f"cannot read {what} '{path}': {exc.strerror}") from None


def read_text(path: PathLike, what: str = 'file', key: str = '') -> str:
    """Return file `path` as UTF-8 text; unreadable or not text: a ConfigError (`read_bytes`)."""
    data = read_bytes(path, what, key)
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as exc:
        kind = 'binary data' if b'\0' in data else 'text in another encoding'
        raise ConfigError(key, f"{what} '{path}' is not UTF-8 text (byte 0x{data[exc.start]:02x} "
                               f'at offset {exc.start}: {kind}?)') from None


class _ParameterLoader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2's exponent floats (``1e-3``), as rcl reads them."""


_ParameterLoader.add_implicit_resolver(
    'tag:yaml.org,2002:float', re.compile(r'^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+$'),
    list('-+0123456789.'))


def load_yaml(text: str) -> Any:
    """Parse YAML text as a parameter file's (exponent floats as rcl reads them); YAMLError."""
    return yaml.load(text, Loader=_ParameterLoader)


def real_literal(value: float, digits: int = 6) -> str:
    """
    Return `value` as a YAML float literal to `digits` significant digits.

    ``900.0``, not ``900``, which rcl types an integer: refused for a double parameter, and
    in a list of doubles.
    """
    text = f'{float(value):.{digits}g}'
    return text if any(c in text for c in '.eEn') else text + '.0'


def real_list(values: Sequence[float], digits: int = 6) -> str:
    """Return `values` as a YAML flow list of float literals (`real_literal`)."""
    return '[' + ', '.join(real_literal(v, digits) for v in values) + ']'


def read_yaml(path: PathLike) -> Dict[str, Any]:
    """Read a YAML file into a mapping; a missing, unreadable or malformed file: ConfigError."""
    path = Path(path)
    text = read_text(path, 'parameter file')
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, 'problem_mark', None)
        line = f' (line {where.line + 1})' if where is not None else ''
        problem = (getattr(exc, 'problem', None) or getattr(exc, 'reason', None)
                   or type(exc).__name__)
        raise ConfigError('', f"parameter file '{path}' is not valid YAML{line}: "
                              f'{problem}') from None
    if not isinstance(data, dict):
        raise ConfigError('', f"parameter file '{path}' must hold a mapping at the top level")
    return data


def check_declarable(data: Dict[str, Any], path: Any) -> None:
    """
    Refuse a parameter file rcl reads but a node cannot declare from: an empty list.

    rcl parses ``key: []`` without complaint; the node then fails to declare a parameter of
    no type, with a traceback. ConfigError names the key.
    """
    for section, params in _sections(data, path).items():
        for key, value in flatten(params).items():
            if isinstance(value, list) and not value:
                raise ConfigError(key, f"an empty list in section '{section}' of '{path}', "
                                       f'which ROS 2 cannot type: leave the key out or give '
                                       f'it values')


def _sections(data: Dict[str, Any], path: Any) -> Dict[str, Dict[str, Any]]:
    """Return the ``ros__parameters`` of each node section; a malformed one is an error."""
    sections = {}
    for key, value in data.items():
        if isinstance(value, dict) and 'ros__parameters' in value:
            params = value['ros__parameters']
            if params is None:
                params = {}
            if not isinstance(params, dict):
                raise ConfigError(f'{key}.ros__parameters', f"in '{path}' must be a mapping")
            sections[str(key)] = params
    return sections


def _matches(pattern: str, node: str) -> bool:
    """Whether a section name matches node `node` (fully qualified), rcl's wildcard rules."""
    pattern = pattern if pattern.startswith('/') else '/' + pattern
    regex = ''.join('.*' if part == '**' else '[^/]*' if part == '*' else re.escape(part)
                    for part in re.split(r'(\*\*|\*)', pattern))
    return re.fullmatch(regex, node) is not None


def node_parameters(data: Dict[str, Any], node_name: Optional[str] = None,
                    path: Any = '') -> Dict[str, Any]:
    """
    Return the flat (dotted) parameters node `node_name` gets from a parameter file's data.

    Matching sections merge in file order, later keys winning (rcl's rules). Without a node
    name: the wildcard sections, then the only named one if there is exactly one. A bare
    mapping (no ``ros__parameters``) is taken as the parameters themselves.
    """
    sections = _sections(data, path)
    if not sections:
        return flatten(data)
    if node_name is None:
        named = [k for k in sections if '*' not in k]
        chosen = [k for k in sections if '*' in k or (len(named) == 1 and k == named[0])]
    else:
        fqn = node_name if node_name.startswith('/') else '/' + node_name
        chosen = [k for k in sections if _matches(k, fqn)]
    flat: Dict[str, Any] = {}
    for key in chosen:
        flat.update(flatten(sections[key]))
    return flat


def file_parameters(paths: Union[PathLike, Sequence[PathLike]], node_name: Optional[str]
                    ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """
    Return ``(parameters, model)`` that node `node_name` gets from parameter file(s).

    Files merge in order, as several ``--params-file`` arguments do. `parameters` is the
    nested tree without `model` and `use_sim_time`; `model` the nested `model` namespace.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    flat: Dict[str, Any] = {}
    for path in paths:
        flat.update(node_parameters(read_yaml(path), node_name, path))
    tree = nest({k: v for k, v in flat.items() if k not in ROS_KEYS})
    model = tree.pop('model', {})
    if not isinstance(model, dict):
        raise ConfigError('model', 'must be a namespace of parameters')
    return tree, model


def model_spec(spec: Union[PathLike, Sequence[PathLike], Dict[str, Any]],
               node_name: Optional[str] = None) -> Dict[str, Any]:
    """Return the `model` namespace as a nested dict: of a dict, or of parameter file(s)."""
    if isinstance(spec, (str, Path, list, tuple)):
        _, model = file_parameters(spec, node_name)
        if not model:
            who = f" for node '{node_name}'" if node_name else ''
            raise ConfigError('model', f"missing from parameter file '{spec}'{who}")
        spec = model
    if not isinstance(spec, dict):
        raise ConfigError('model', 'must be a mapping of model parameters')
    tree = nest(flatten(spec))
    if 'model' in tree and 'type' not in tree:
        tree = tree['model']
    return tree


def config_dirs() -> Iterator[Path]:
    """Yield the directories that may hold the package's config/*.yaml, most specific first."""
    here = Path(__file__).resolve()
    yield here.parents[2] / 'config'
    if len(here.parents) > 5:       # PREFIX/lib/pythonX.Y/site-packages/continuum_ctrl/params/
        yield here.parents[5] / 'share' / PACKAGE / 'config'
    try:
        from ament_index_python.packages import get_package_share_directory
        yield Path(get_package_share_directory(PACKAGE)) / 'config'
    except (ImportError, LookupError, OSError, ValueError):
        pass
    yield Path(sys.prefix) / 'share' / PACKAGE / 'config'


def config_path(name: PathLike) -> Path:
    """
    Return the path of a parameter file: as given when it exists or has a directory.

    Otherwise the first config directory holding it (the source tree's when none does).
    """
    path = Path(name)
    if path.exists() or path.parent != Path('.'):
        return path
    dirs = list(config_dirs())
    return next((d / path for d in dirs if (d / path).is_file()), dirs[0] / path)
