"""
The parameter home (no ROS): errors, parameter files, trees and typed field reads.

    from continuum_ctrl.params import ConfigError, Reader, file_parameters, model_spec
    tree, model = file_parameters('config/planar_2r.yaml', 'continuum_controller')

`files` reads ROS 2 parameter files with rcl's merge rules for the nodes, `load_model` and
every CLI command, and finds the package's config directory; `fields` holds `nest`/`flatten`,
the `Field` of a schema and the `Reader` whose errors name the full dotted key; `schema`
the `Schema` (a table of Fields with the `Check`s beside them) and its one parser;
`launch_description` names the nodes, the arms' files and the nodes' command lines (plain
data, for the launch files, `continuum-ctrl launch`, the demo and the tests). The schemas
themselves live beside what they configure: the loop's in `control.settings`, the plant's in
`sim.plant`, the nodes' own in `runtime.node_settings`, the models' in `models.fields`.
"""

from continuum_ctrl.params.errors import ConfigError
from continuum_ctrl.params.fields import Field, flatten, nest, Reader, REQUIRED
from continuum_ctrl.params.schema import Check, Schema
from continuum_ctrl.params.files import (check_declarable, check_readable, config_dirs,
                                         config_path, file_parameters, load_yaml, model_spec,
                                         node_parameters, read_text, read_yaml,
                                         real_list, real_literal)

__all__ = ['Check', 'ConfigError', 'Field', 'flatten', 'nest', 'Reader', 'REQUIRED', 'Schema',
           'check_declarable', 'check_readable',
           'config_dirs', 'config_path', 'file_parameters', 'load_yaml', 'model_spec',
           'node_parameters', 'read_text', 'read_yaml', 'real_list', 'real_literal']
