"""
The `model.*` parameters of every model type, as one table of Fields.

Each model's parser (`rigid.from_spec`, `symbolic.derive`, `continuum.params.read_spec`)
validates its own keys and takes its defaults from here; the parameter reference is written
from this table. A key ending in ``<name>`` stands for a namespace of free names (a joint, a
constant). Units: SI (m, kg, N/m, N s/m, m/s^2, rad). `RIGID_SCHEMA`, `SYMBOLIC_SCHEMA` and
`CONTINUUM_SCHEMA` are a model type's part of the table as `continuum_ctrl.params.Schema`
reads it; what the model decides (the URDF's joints, a namespace of free names, the
expressions, the lengths of the lists, one value per section or per PMA) stays a step of its
parser.
"""

from dataclasses import replace

from continuum_ctrl.params import Check, Field, Schema

#: model.type values, in the order of `continuum_ctrl.models.MODEL_TYPES`
MODEL_TYPE_NAMES = ('urdf', 'symbolic', 'continuum_cog', 'continuum_integral')

#: energy-shaping coefficients [bv1, bv2, bv3, bw1, bw2, bw3] of the CoG model, from
#: `continuum-ctrl fit-betas config/continuum_3section.yaml` (defaults: seed 0, 4000 training
#: and 2000 held-out states) on the reference arm of docs/continuum-model.md, section 7. The
#: angular betas carry < 0.1 % of the energy on this thin arm, so the fit holds them at 1.
DEFAULT_BETA = (1.329519, 1.492308, 1.787884, 1.0, 1.0, 1.0)

#: Gauss-Legendre points per section of the integral model (relative error about 1e-12 for
#: bending angles up to about 4 rad per section, see test_continuum_models.py)
DEFAULT_QUADRATURE = 10

#: gravity in the arm's base frame, m/s^2
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)

#: every `model.*` parameter; the description starts with the model types that read it
MODEL_FIELDS = {
    'model.type': Field('string', ..., 'which model: a URDF arm through Pinocchio, M(q) and '
                        'U(q) given as expressions, or a continuum arm (fast CoG model or the '
                        'integral reference model)', choices=MODEL_TYPE_NAMES, required=True),
    'model.gravity': Field('numbers', list(DEFAULT_GRAVITY), 'urdf, continuum_*: gravity in '
                           'the base frame, m/s^2, 3 values', length=3),
    'model.joints': Field('strings', ..., 'all types: joint names in model order; default: '
                          "the URDF's movable joints, the coordinates, or section{i}_pma{j}"),
    'model.urdf': Field('string', ..., 'urdf: a path, file:// or package://pkg/... (ament '
                        'index, then ROS_PACKAGE_PATH, then the example-robot-data wheel)',
                        required=True),
    'model.locked_positions.<joint>': Field('number', 0.0, 'urdf: position of a joint left '
                                            'out of model.joints, rad or m'),
    'model.payload.mass': Field('number', 0.0, 'urdf: a payload the URDF does not hold, kg, '
                                'at model.payload.offset in model.payload.frame (0: none; '
                                '`identify` fits it, docs/rigid-payload.md)', 0.0),
    'model.payload.frame': Field('string', ..., 'urdf: the URDF frame that carries '
                                 'model.payload.mass (required with it)'),
    'model.payload.offset': Field('numbers', [0.0, 0.0, 0.0], "urdf: the payload's centre "
                                  'of mass in model.payload.frame, m', length=3),
    'model.coordinates': Field('strings', ..., 'symbolic: names of the coordinates q',
                               required=True),
    'model.mass_matrix': Field('strings', ..., 'symbolic: the n*n entries of M(q) as '
                               'expressions, row-major, symmetric', required=True),
    'model.potential': Field('string', ..., 'symbolic: U(q) as an expression (gravity and '
                             'elastic potential), J', required=True),
    'model.constants.<name>': Field('number', ..., 'symbolic: named constants of the '
                                    'expressions, a number each (default: none)'),
    'model.sections.length': Field('numbers', ..., 'continuum_*: rest length per section, m '
                                   '; its length is the number of sections n', 0.0,
                                   strict_low=True, required=True),
    'model.sections.radius': Field('numbers', ..., 'continuum_*: PMA distance from the '
                                   'backbone per section, m', 0.0, strict_low=True,
                                   required=True),
    'model.sections.mass': Field('numbers', ..., 'continuum_*: mass per section, kg', 0.0,
                                 strict_low=True, required=True),
    'model.sections.max_extension': Field('numbers', ..., 'continuum_*: PMA stroke l_max per '
                                          'section, m', 0.0, strict_low=True, required=True),
    'model.sections.stiffness': Field('numbers', ..., 'continuum_*: PMA stiffness, N/m, one '
                                      'per section or one per PMA', 0.0, required=True),
    'model.sections.damping': Field('numbers', ..., 'continuum_*: PMA damping, N s/m, one per '
                                    'section or one per PMA', 0.0, required=True),
    'model.sections.offset': Field('numbers', ..., 'continuum_*: fixed translation sigma '
                                   'before each section, m, one per section (default: 0)'),
    'model.sections.twist': Field('numbers', ..., 'continuum_*: fixed twist gamma before '
                                  'each section, rad, one per section (default: 0)'),
    'model.cog.beta': Field('numbers', list(DEFAULT_BETA), 'continuum_cog: the six '
                            'energy-shaping coefficients [bv1, bv2, bv3, bw1, bw2, bw3]',
                            length=6),
    'model.quadrature': Field('integer', DEFAULT_QUADRATURE, 'continuum_integral: '
                              'Gauss-Legendre points per section', 1),
    'model.limit_stiffness': Field('number', 0.0, 'continuum_*: stiffening outside [0, l_max] '
                                   '(smooth, over 5 % of the stroke), N/m; for simulation', 0.0),
}

#: the keys of model.type urdf; `from_spec` reads the joints' names in model.locked_positions
RIGID_SCHEMA = Schema({
    'model.type': replace(MODEL_FIELDS['model.type'], choices=MODEL_TYPE_NAMES[:1]),
    **{key: MODEL_FIELDS[key] for key in ('model.urdf', 'model.gravity', 'model.joints',
                                          'model.payload.mass', 'model.payload.frame',
                                          'model.payload.offset')}},
    ignored=('model.locked_positions',))

#: the keys of model.type symbolic; the expressions are read as given (`derive` parses them)
#: and the constants' names in model.constants by `derive`
SYMBOLIC_SCHEMA = Schema({
    'model.type': replace(MODEL_FIELDS['model.type'], choices=MODEL_TYPE_NAMES[1:2]),
    'model.coordinates': MODEL_FIELDS['model.coordinates'],
    **{key: replace(MODEL_FIELDS[key], kind='any')
       for key in ('model.mass_matrix', 'model.potential')},
    'model.joints': MODEL_FIELDS['model.joints']}, ignored=('model.constants',))

#: model.type values of the continuum models
CONTINUUM_TYPES = MODEL_TYPE_NAMES[2:]


def _continuum_schema() -> Schema:
    """Return the Schema of the continuum models' keys (see CONTINUUM_SCHEMA)."""
    keys = ('model.gravity', *(key for key in MODEL_FIELDS if key.startswith('model.sections.')))
    fields = {'model.type': replace(MODEL_FIELDS['model.type'], choices=CONTINUUM_TYPES),
              **{key: MODEL_FIELDS[key] for key in keys},
              'model.sections.area': Field('numbers', ..., 'PMA area per section or per PMA, '
                                           'm^2 (read by fit-betas only)', 0.0),
              'model.cog.beta': MODEL_FIELDS['model.cog.beta'],
              'model.quadrature': replace(MODEL_FIELDS['model.quadrature'], kind='number',
                                          low=1.0),
              'model.joints': MODEL_FIELDS['model.joints'],
              'model.limit_stiffness': MODEL_FIELDS['model.limit_stiffness']}
    return Schema(fields, (
        Check('model.sections.length', ('model.sections.length',), len,
              'must list at least one section'),
        Check('model.quadrature', ('model.quadrature',), lambda points: points == int(points),
              lambda points: f'must be a whole number, got {points}')))


#: the keys of continuum_cog and continuum_integral; `model.quadrature` is read as a number
#: (10.0 is 10) and `model.sections.area` (not a model parameter: `load_model` refuses it) is
#: still accepted where `read_spec` is called directly
CONTINUUM_SCHEMA = _continuum_schema()
