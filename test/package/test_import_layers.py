"""
The package's layers import downwards only: a module imports its own layer and those below.

Every module under continuum_ctrl/ is read with `ast` (nothing is imported): each `import`
and `from ... import` at any depth (inside functions and `if` blocks too), relative ones
resolved against the module's package, and each string constant that names one of the
package's modules (what `import_module` is given). A module placed in no layer fails too, so
that a new folder or top-level module is given its layer here, deliberately.

A folder is a layer, so the exception table `MODULES` holds only the package's facade. ROS is
the edge: a module outside `ros/` and `apps/` that imports rclpy, a rosidl package or a message
package (`builtin_interfaces`, `rcl_interfaces`, any `*_msgs`) fails, at any depth too, so the
models, the law, the runtime, the plants and identification stay importable and testable
without ROS. (What `import_module` is given as a computed string is not seen.)
"""

import ast
from pathlib import Path

PACKAGE = 'continuum_ctrl'
ROOT = Path(__file__).resolve().parents[2]

#: the layers, bottom to top
LAYERS = ('params', 'numerics', 'models', 'actuation', 'control', 'runtime', 'sim',
          'tuning', 'identify', 'ros', 'apps')

#: folders (packages) and the layer of everything in them
FOLDERS = {
    'continuum_ctrl.params': 'params',          # errors, parameter files, Field tables
    'continuum_ctrl.numerics': 'numerics',      # the Numba wrapper, small linear algebra, SO(3)
    'continuum_ctrl.models': 'models',          # the dynamics models behind models/base.py
    'continuum_ctrl.actuation': 'actuation',    # the valve model, the pressure map
    'continuum_ctrl.control': 'control',        # the law, references, the loop's cycle
    'continuum_ctrl.runtime': 'runtime',        # the loop thread, timing, scheduling
    'continuum_ctrl.sim': 'sim',                # the plants, the one-process closed loops
    'continuum_ctrl.tuning': 'tuning',          # the loop linearized, its margins, gains
    'continuum_ctrl.identify': 'identify',      # fits to recorded runs
    'continuum_ctrl.ros': 'ros',                # the rclpy edge: nodes, messages, recording
    'continuum_ctrl.apps': 'apps',              # the commands, which join the layers
}

#: single modules, each with its layer: those outside the folders (a folder's module belongs
#: to its folder's layer, without exception)
MODULES = {
    # the package's face, outside every folder: ConfigError (params) and load_model (models)
    'continuum_ctrl': 'models',
}

#: the layers whose modules may import ROS: the nodes' edge and the commands
ROS_LAYERS = ('ros', 'apps')


def is_ros(name):
    """Return whether the dotted module `name` is ROS: rclpy, rosidl or a message package."""
    top = name.split('.')[0]
    return (top in ('rclpy', 'builtin_interfaces', 'rcl_interfaces') or
            top.startswith('rosidl') or top.endswith('_msgs'))


def layer_of(module):
    """Return the layer of the dotted `module` name, or None when it is placed in none."""
    if module in MODULES:
        return MODULES[module]
    for folder, layer in FOLDERS.items():
        if module == folder or module.startswith(folder + '.'):
            return layer
    return None


def modules_under(root):
    """Return {dotted module name: file} for every .py file of the package under `root`."""
    found = {}
    for path in sorted((root / PACKAGE).rglob('*.py')):
        parts = list(path.relative_to(root).with_suffix('').parts)
        if parts[-1] == '__init__':
            parts.pop()
        found['.'.join(parts)] = path
    return found


def imported(module, path, known):
    """
    Yield (line, imported module) for every import of a package module by `module`.

    `known`: the package's module names. ``from A import b`` names module A.b when that is
    one, else A.
    """
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == '__init__.py' else module.rpartition('.')[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                anchor = package.split('.')[:len(package.split('.')) - (node.level - 1)]
                base = '.'.join(anchor + ([base] if base else []))
            for alias in node.names:
                full = f'{base}.{alias.name}'
                yield node.lineno, full if full in known else base
        elif isinstance(node, ast.Constant) and node.value in known and '.' in node.value:
            yield node.lineno, node.value


def violations(root):
    """Return one line per unplaced module and per upward import in the package under `root`."""
    found = modules_under(root)
    problems = []
    for module, path in found.items():
        where = path.relative_to(root)
        own = layer_of(module)
        if own is None:
            problems.append(f'{where}: module {module} is in no layer (place it in '
                            'test_import_layers.py)')
            continue
        for line, target in sorted(set(imported(module, path, found))):
            if not (target == PACKAGE or target.startswith(PACKAGE + '.')):
                continue
            theirs = layer_of(target)
            if theirs is None:
                problems.append(f'{where}:{line}: imports {target}, which is in no layer')
            elif LAYERS.index(theirs) > LAYERS.index(own):
                problems.append(f'{where}:{line}: imports {target} (layer {theirs}) from '
                                f'layer {own}: upward')
    return problems


def ros_imports(root):
    """Return one line per import of ROS by a module outside the ROS layers under `root`."""
    found = modules_under(root)
    problems = []
    for module, path in found.items():
        if layer_of(module) in ROS_LAYERS:
            continue
        for line, target in sorted(set(imported(module, path, found))):
            if is_ros(target):
                problems.append(f'{path.relative_to(root)}:{line}: imports {target} (ROS) '
                                f'from layer {layer_of(module)}: only ros/ and apps/ may')
    return problems


def test_imports_go_downwards():
    problems = violations(ROOT)
    assert not problems, '\n'.join([f'{len(problems)} import(s) against the layers:'] + problems)


def test_ros_stays_at_the_edge():
    problems = ros_imports(ROOT)
    assert not problems, '\n'.join([f'{len(problems)} ROS import(s) below ros/:'] + problems)


def write_tree(root, files):
    """Write a small package under `root`: {path inside continuum_ctrl/: source text}."""
    for name, text in files.items():
        path = root / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_ros_check_sees_every_kind_of_ros_import(tmp_path):
    """A small tree: each kind of ROS import below ros/ is found, at any depth; the edge's not."""
    files = {
        'control/loop.py': 'def f():\n    import rclpy.node\n',
        'sim/plant.py': 'from sensor_msgs.msg import JointState\n',
        'runtime/clock.py': 'if True:\n    from builtin_interfaces.msg import Time\n',
        'models/base.py': 'import rosidl_runtime_py as r\n',
        'params/files.py': 'from rcl_interfaces.msg import ParameterType\n',
        'identify/bag.py': 'import mcap_ros2.writer\nimport ament_index_python\n',
        'ros/node.py': 'import rclpy\nfrom std_msgs.msg import Float64MultiArray\n',
        'apps/echo.py': 'import rclpy\n',
    }
    write_tree(tmp_path, files)
    assert sorted(ros_imports(tmp_path)) == [
        'continuum_ctrl/control/loop.py:2: imports rclpy.node (ROS) from layer control: only '
        'ros/ and apps/ may',
        'continuum_ctrl/models/base.py:1: imports rosidl_runtime_py (ROS) from layer models: '
        'only ros/ and apps/ may',
        'continuum_ctrl/params/files.py:1: imports rcl_interfaces.msg (ROS) from layer params: '
        'only ros/ and apps/ may',
        'continuum_ctrl/runtime/clock.py:2: imports builtin_interfaces.msg (ROS) from layer '
        'runtime: only ros/ and apps/ may',
        'continuum_ctrl/sim/plant.py:1: imports sensor_msgs.msg (ROS) from layer sim: only '
        'ros/ and apps/ may',
    ]


def test_the_check_sees_upward_and_unplaced_modules(tmp_path):
    """A small tree with one of each kind of import the walk must resolve."""
    files = {
        '__init__.py': '',
        'params/__init__.py': 'from continuum_ctrl.params.errors import ConfigError\n',
        'params/errors.py': 'import numpy\n',
        'params/late.py': 'def f():\n    if True:\n        from ..sim import plant\n',
        'models/__init__.py': 'from . import base\n',
        'models/base.py': 'import continuum_ctrl.control.loop\n',
        'control/loop.py': "KINDS = ('continuum_ctrl.ros.node',)\nfrom .. import params\n",
        'ros/node.py': 'from continuum_ctrl.apps import cli\n',
        'sim/plant.py': 'from continuum_ctrl.control.loop import ControlLoop\n',
        'apps/cli.py': 'from continuum_ctrl.extra import thing\n',
        'extra/__init__.py': '',
    }
    write_tree(tmp_path, files)
    problems = violations(tmp_path)
    assert sorted(problems) == [
        'continuum_ctrl/apps/cli.py:1: imports continuum_ctrl.extra, which is in no layer',
        'continuum_ctrl/control/loop.py:1: imports continuum_ctrl.ros.node (layer ros) from '
        'layer control: upward',
        'continuum_ctrl/extra/__init__.py: module continuum_ctrl.extra is in no layer (place '
        'it in test_import_layers.py)',
        'continuum_ctrl/models/base.py:1: imports continuum_ctrl.control.loop (layer control) '
        'from layer models: upward',
        'continuum_ctrl/params/late.py:3: imports continuum_ctrl.sim.plant (layer sim) from '
        'layer params: upward',
        'continuum_ctrl/ros/node.py:1: imports continuum_ctrl.apps.cli (layer apps) from layer '
        'ros: upward',
    ], problems
