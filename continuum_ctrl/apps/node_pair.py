"""
The controller's loop and the simulator's plant of a parameter file, without ROS.

`continuum-ctrl simulate` and the tests run the two nodes' cycle in one process this way.

    runtime, plant = node_pair('continuum_3section.yaml', controller={'output.delay': 0.005})
    log = simulate_nodes(runtime, plant, duration)   # sim.closed_loop: tick by tick

Each side reads the file as its node does (``/**`` merged with its own section); the node-only
settings (rate, thread priority, ...) are split off and given to the `ControllerRuntime`
the node would build (its rate is the loop's period). Overrides are dotted keys
(``'actuator.time_constant'``) merged over the file.
"""

from pathlib import Path

from continuum_ctrl.control.loop import ControlLoop
from continuum_ctrl.control.settings import ControllerSettings
from continuum_ctrl.params.launch_description import CONTROLLER, config_path, SIMULATOR
from continuum_ctrl.models import load_model
from continuum_ctrl.params import file_parameters, flatten, nest
from continuum_ctrl.ros.node_settings import ControllerNodeSettings, SimulatorNodeSettings
from continuum_ctrl.runtime.controller_runtime import ControllerRuntime
from continuum_ctrl.sim.plant import Plant, PlantSettings


def node_parameters(paths, node, overrides=None):
    """Return ``(tree, model namespace)`` of `node` from parameter files merged in order."""
    paths = [config_path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    tree, model = file_parameters(paths, node)
    flat = flatten({**tree, 'model': model})
    flat.update(overrides or {})
    tree = nest(flat)
    return tree, tree.pop('model')


def controller_runtime(paths, overrides=None, fused=True):
    """
    Return the ControllerRuntime the controller node builds from `paths` (plus overrides).

    `fused` False: the loop without its fused tick (`ControlLoop`'s option), not compiled.
    """
    tree, spec = node_parameters(paths, CONTROLLER, overrides)
    node, tree = ControllerNodeSettings.split(tree)
    model = load_model(spec)
    return ControllerRuntime(ControlLoop(model, ControllerSettings.parse(tree, model),
                                         node.period, fused=fused), node)


def controller_loop(paths, overrides=None, fused=True):
    """Return the ControlLoop of `controller_runtime(paths, overrides, fused)`."""
    return controller_runtime(paths, overrides, fused).loop


def plant_settings(paths, overrides=None, drop=()):
    """Return the simulator node's PlantSettings from `paths` (overrides, no `drop` keys)."""
    tree, spec = node_parameters(paths, SIMULATOR, overrides)
    tree = {k: v for k, v in SimulatorNodeSettings.split(tree)[1].items() if k not in drop}
    return PlantSettings.parse(tree, spec)


def plant_of(paths, overrides=None, drop=()):
    """Return the simulator node's Plant from `paths` (plus overrides, without `drop` keys)."""
    return Plant(plant_settings(paths, overrides, drop))


def node_pair(paths, controller=None, simulator=None):
    """Return ``(ControllerRuntime, Plant)`` of the nodes reading `paths`, overrides applied."""
    return controller_runtime(paths, controller), plant_of(paths, simulator)
