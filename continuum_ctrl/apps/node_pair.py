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

import logging
from pathlib import Path
from typing import Any, Sequence

import yaml

from continuum_ctrl.control.loop import ControlLoop
from continuum_ctrl.control.settings import ControllerSettings, FIELDS as LOOP_FIELDS
from continuum_ctrl.numerics.jit import kernels_deferred
from continuum_ctrl.params.launch_description import CONTROLLER, config_path, SIMULATOR
from continuum_ctrl.models import load_model
from continuum_ctrl.params import ConfigError, file_parameters, flatten, nest
from continuum_ctrl.runtime.controller_runtime import ControllerRuntime
from continuum_ctrl.runtime.node_settings import ControllerNodeSettings, SimulatorNodeSettings
from continuum_ctrl.sim.plant import Plant, PlantSettings
from continuum_ctrl.tuning.nominal_check import check_gains


def node_parameters(paths, node, overrides=None):
    """Return ``(tree, model namespace)`` of `node` from parameter files merged in order."""
    paths = [config_path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    tree, model = file_parameters(paths, node)
    flat = flatten({**tree, 'model': model})
    flat.update(overrides or {})
    tree = nest(flat)
    return tree, tree.pop('model')


def controller_model(paths, node=CONTROLLER, overrides=None):
    """Return ``(model, ControllerSettings)`` of the controller `node` reads from `paths`."""
    return _controller_parts(paths, node, overrides)[1:]


def _controller_parts(paths, node, overrides):
    """Return ``(ControllerNodeSettings, model, ControllerSettings)`` of `node`'s files."""
    tree, spec = node_parameters(paths, node, overrides)
    node_settings, tree = ControllerNodeSettings.split(tree)
    model = load_model(spec)
    return node_settings, model, ControllerSettings.parse(tree, model)


def controller_runtime(paths, overrides=None, fused=True, check=True):
    """
    Return the ControllerRuntime the controller node builds from `paths` (plus overrides).

    `fused` False: the loop without its fused tick (`ControlLoop`'s option), not compiled.
    `check` False: without the configure check (the tuner assesses the gains itself), so
    gains it would refuse are still built.
    """
    node, model, settings = _controller_parts(paths, CONTROLLER, overrides)
    loop = ControlLoop(model, settings, node.period, fused=fused)
    runtime = ControllerRuntime(loop, node)
    try:
        warning = check_gains(loop) if check else None  # as the controller node's configure
    except ConfigError:
        runtime.close()                     # refused: its planner's process, its workers
        raise
    if warning:
        logging.getLogger('continuum_ctrl').warning(warning)
    return runtime


def controller_loop(paths, overrides=None, fused=True, check=True):
    """Return the ControlLoop of `controller_runtime(paths, overrides, fused, check)`."""
    return controller_runtime(paths, overrides, fused, check).loop


def plant_settings(paths, overrides=None, drop=()):
    """Return the simulator node's PlantSettings from `paths` (overrides, no `drop` keys)."""
    tree, spec = node_parameters(paths, SIMULATOR, overrides)
    tree = {k: v for k, v in SimulatorNodeSettings.split(tree)[1].items() if k not in drop}
    return PlantSettings.parse(tree, spec)


def plant_of(paths, overrides=None, drop=()):
    """Return the simulator node's Plant from `paths` (plus overrides, without `drop` keys)."""
    return Plant(plant_settings(paths, overrides, drop))


def node_pair(paths, controller=None, simulator=None, check=True):
    """
    Return ``(ControllerRuntime, Plant)`` of the nodes reading `paths`, overrides applied.

    `check` False: without the configure check (`controller_runtime`).
    """
    return controller_runtime(paths, controller, check=check), plant_of(paths, simulator)


def overrides_file(path, controller=None, simulator=None):
    """
    Write the dotted overrides of each node as a parameter file at `path`; return `path`.

    The node processes' way to take what `node_pair` takes as arguments: given as a further
    ``--params-file`` after the arm's files.
    """
    path = Path(path)
    path.write_text(yaml.safe_dump({CONTROLLER: {'ros__parameters': nest(controller or {})},
                                    SIMULATOR: {'ros__parameters': nest(simulator or {})}}))
    return path


def command_message(path: Any, node: str = CONTROLLER) -> str:
    """Return `node`'s `output.message` in parameter file(s) `path` (unchecked)."""
    tree, _ = file_parameters(path, node)
    return tree.get('output', {}).get('message', LOOP_FIELDS['output.message'].default)


def check_same_message(controller_path: Any, simulator_path: Any) -> None:
    """
    Raise ConfigError unless controller and simulator name one `output.message`.

    It is the type of the commands topic: with two, the simulator never hears a command.
    """
    sent, taken = command_message(controller_path), command_message(simulator_path, SIMULATOR)
    if sent != taken:
        raise ConfigError('output.message', f"the controller sends '{sent}' commands, the "
                                            f"simulator takes '{taken}': set it under /** "
                                            'for both')


def check_parameter_file(path: Any, nodes: Sequence[str] = (CONTROLLER, SIMULATOR)) -> None:
    """
    Parse a parameter file as each node in `nodes` would, without ROS; raise its ConfigError.

    The launcher and the demo call this before starting node processes, so a bad file gives
    one error line at once rather than one per node after their start-up. The objects it
    builds load no compiled kernels (`jit.kernels_deferred`): they never run.
    """
    with kernels_deferred():
        for node in nodes:
            tree, model = file_parameters(path, node)
            if node == SIMULATOR:
                PlantSettings.parse(SimulatorNodeSettings.split(tree)[1], model)
            else:
                ControllerSettings.parse(ControllerNodeSettings.split(tree)[1],
                                         load_model(model))
    if CONTROLLER in nodes and SIMULATOR in nodes:
        check_same_message(path, path)
