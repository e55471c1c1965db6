"""
What identification needs from the nominal parameter file, read as the controller node reads it.

Continuum arms in pressure mode and URDF arms in effort mode.

The file's ``/**`` section merged with the ``continuum_controller`` section gives the model
(geometry and masses are taken as known), `joints` (command order) and `output.*` (nominal
area, dead zone, pressure range).
"""

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from continuum_ctrl.control.settings import (FIELDS, JointVectors, OUTPUT_KEYS, read_output,
                                             shared_output)
from continuum_ctrl.identify.data import Joints
from continuum_ctrl.params.launch_description import CONTROLLER
from continuum_ctrl.models import load_model
from continuum_ctrl.models.continuum.model import ContinuumModel
from continuum_ctrl.models.rigid import RigidModel
from continuum_ctrl.params import ConfigError, file_parameters, Reader
from continuum_ctrl.sim.tip_capture import default_frame

#: the controller's friction feed-forward, taken as the nominal friction
FRICTION_KEYS = ('output.friction', 'output.friction_stiffness')


@dataclass
class Setup:
    """
    The nominal arm, as the parameter file describes it.

    `model` (as in the file), `rigid` (the same arm without stiffness and damping, whose
    inverse dynamics give ``M qdd + C qd + g``), `joints`, `actuation` (nominal ActuationMap,
    model order), `section` (section index of each coordinate), the nominal per-section
    `stiffness` (N/m) and `damping` (N s/m), and `friction`: the file's ``output.friction``
    and ``output.friction_stiffness`` (N, N/m, model order), None where it has none.
    """

    path: str
    model: object
    rigid: object
    joints: Joints
    actuation: object
    section: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    friction: Optional[Tuple[np.ndarray, np.ndarray]] = None

    @property
    def sections(self):
        """Return the number of sections."""
        return len(self.stiffness)


@dataclass
class RigidSetup:
    """A rigid (URDF) arm as the parameter file describes it: `model` (RigidModel), `joints`."""

    path: str
    model: object
    joints: Joints


def read_setup(path):
    """
    Read the nominal parameter file `path`: a Setup (continuum) or RigidSetup (URDF arm).

    ConfigError names what is missing or bad.
    """
    tree, model_ns = file_parameters(path, CONTROLLER)
    model = load_model(model_ns)
    if not isinstance(model, (ContinuumModel, RigidModel)):
        raise ConfigError('model.type', f"identify supports continuum arms (continuum_cog, "
                                        f"continuum_integral) and URDF arms (urdf), got "
                                        f"{model_ns.get('type')!r}")
    vec = JointVectors.read(tree, model.joint_names)
    output = Reader(tree, '').namespace('output').tree
    mode, actuation = read_output(shared_output(OUTPUT_KEYS).parse(output, 'output', vec.n),
                                  vec, model)
    if isinstance(model, RigidModel):
        if mode != 'effort':
            raise ConfigError('output.mode', "identify needs 'effort' for a URDF arm")
        return RigidSetup(str(path), model, Joints(model.joint_names, vec.joints))
    if mode != 'pressure':
        raise ConfigError('output.mode', "identify needs 'pressure' for a continuum arm")
    sections = dict(model_ns.get('sections', {}))
    count = model.n // 3
    rigid = load_model({**model_ns, 'sections': {**sections, 'stiffness': [0.0] * count,
                                                 'damping': [0.0] * count}})
    spec = model.spec
    values = shared_output(FRICTION_KEYS, ()).parse(output, 'output', vec.n)
    friction = tuple(vec.to_model(values[key]) for key in FRICTION_KEYS)
    return Setup(str(path), model, rigid, Joints(model.joint_names, vec.joints), actuation,
                 np.arange(model.n) // 3, np.asarray(spec.stiffness, dtype=float)[::3].copy(),
                 np.asarray(spec.damping, dtype=float)[::3].copy(),
                 friction if friction[0].any() else None)


def task_setup(path):
    """
    Read what a kinematic calibration needs from the parameter file `path`.

    Return ``(model, joints, frame, base_frame)``: the controller's model, its Joints, the
    task frame (`task.frame`, default the last section tip) and `task.base_frame`.
    """
    tree, model_ns = file_parameters(path, CONTROLLER)
    model = load_model(model_ns)
    vec = JointVectors.read(tree, model.joint_names)
    task = tree.get('task', {}) if isinstance(tree.get('task'), dict) else {}
    frame = task.get('frame') or default_frame(model)
    if frame is None or frame not in model.frame_names():
        raise ConfigError('task.frame', f'the model has no frame {frame!r}: a kinematic '
                                        f'calibration needs a tip frame')
    return (model, Joints(model.joint_names, vec.joints), frame,
            task.get('base_frame', FIELDS['task.base_frame'].default))
