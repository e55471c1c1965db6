"""
Dynamics models behind one interface, chosen by ``model.type``.

    model = load_model(spec)   # spec: the `model` parameter namespace as a dict, or a YAML path
"""

from importlib import import_module
from pathlib import Path
from typing import Any, Dict, Optional, Union

from continuum_ctrl.params import ConfigError, model_spec, Reader
from continuum_ctrl.models.base import DynamicsModel
from continuum_ctrl.models.fields import MODEL_FIELDS

#: model.type -> (module, factory taking the nested `model` namespace); the keys are the
#: choices of MODEL_FIELDS['model.type']
MODEL_TYPES = {
    'urdf': ('continuum_ctrl.models.rigid', 'from_spec'),
    'symbolic': ('continuum_ctrl.models.symbolic', 'from_spec'),
    'continuum_cog': ('continuum_ctrl.models.continuum.cog', 'from_spec'),
    'continuum_integral': ('continuum_ctrl.models.continuum.integral', 'from_spec'),
}


def load_model(spec: Union[str, Path, Dict[str, Any]],
               node_name: Optional[str] = None) -> DynamicsModel:
    """
    Build the model described by `spec` (dict, or path to a ROS 2 parameter YAML file).

    Raises ConfigError naming the key for an unknown type, a missing or unknown key, or a
    malformed value.
    """
    spec = model_spec(spec, node_name)
    sections = spec.get('sections')
    if isinstance(sections, dict) and 'area' in sections:     # else: the parser says what
        raise ConfigError('model.sections.area', 'is not a model parameter: the PMA area '
                                                 'is output.area (controller and simulator)')
    kind = Reader(spec, 'model').field('type', MODEL_FIELDS['model.type'])
    module, factory = MODEL_TYPES[kind]
    return getattr(import_module(module), factory)(spec)


__all__ = ['DynamicsModel', 'MODEL_TYPES', 'load_model']
