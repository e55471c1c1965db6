"""
The parameter reference, docs/parameters.md, written from the Field tables.

    continuum-ctrl docs [--out PATH] [--check]
    python -m continuum_ctrl.apps.docs [--out PATH] [--check]

The tables are the schema the nodes declare and validate with, so the page cannot drift from
the code: `test/apps/test_parameter_reference.py` fails when the committed page differs from what
this writes. A new table of Fields is added to `sections` below.
"""

import argparse
from pathlib import Path
import sys
import textwrap
from typing import Any, Dict, List, Optional, Sequence, Tuple

from continuum_ctrl.params.fields import Field, REQUIRED

#: the command that rewrites the page (named in the page and in the stale-page test)
COMMAND = 'python -m continuum_ctrl.apps.docs'

#: where the page lives, from the repository root
PAGE = Path('docs') / 'parameters.md'

#: Field.kind -> the ROS parameter type it is declared as
KINDS = {'bool': 'bool', 'number': 'double', 'numbers': 'double[]', 'integer': 'integer',
         'string': 'string', 'strings': 'string[]'}

HEADER = f"""\
# Parameters

<!-- Written by `{COMMAND}` from the Field tables; do not edit by hand. -->

This page is generated from the schema the nodes declare and validate with (the `Field` tables
of `continuum_ctrl/models/fields.py`, `continuum_ctrl/control/settings.py`,
`continuum_ctrl/sim/plant.py` and `continuum_ctrl/runtime/node_settings.py`). After changing a
table, run `{COMMAND}` (or `continuum-ctrl docs`) from the repository root;
`test/apps/test_parameter_reference.py` fails while the page is stale.

Parameter files are standard ROS 2 YAML. What both nodes share (`model.*`, `joints`,
`output.*`) sits under `/**`; node sections follow and take precedence, as in rcl. Per-joint
vectors are given in `joints` order, as one value per joint or one value for all. Units are
SI (m, rad, kg, N, N m, Pa, s) unless a row says otherwise.

- **default**: *required* means the key must be given (where the mode or type that reads it
  is in use); *none* means the default is computed or the key is optional, as the row says.
- **range**: the bounds checked at start-up and on every runtime change (`[a, b]` inclusive,
  `(a, b]` excluding `a`); the ROS parameter descriptor carries them too
  (`ros2 param describe`).
- **allowed**: the names a string key takes; the descriptor lists them as its additional
  constraints, and any other name is refused with one line naming the key and these names.

An unknown key, a missing one, arrays of the wrong length or a bad value is an error at
start-up naming the key (`error: parameter 'gains.kp': must have 9 entries, got 3`), and the
node exits with status 2. At run time every parameter but `model.*` can be changed through the
parameter services; a set is validated as a whole and refused with a reason if any value is
bad, keeping the old values.
"""


def sections() -> List[Tuple[str, str, Dict[str, Field]]]:
    """Return ``(title, introduction, fields)`` for each section of the page."""
    from continuum_ctrl.control.settings import FIELDS as LOOP_FIELDS
    from continuum_ctrl.models.fields import MODEL_FIELDS
    from continuum_ctrl.runtime.node_settings import CONTROLLER_NODE_FIELDS, SIMULATOR_NODE_FIELDS
    from continuum_ctrl.sim.plant import FIELDS as PLANT_FIELDS, SHARED
    shared = ', '.join(f'`{key}`' for key in SHARED)
    return [
        ('`model.*`: the dynamics model',
         'Read by `load_model`, the controller (its model) and the simulator (its plant); '
         'read-only at run time. Each row says which `model.type` reads the key; another '
         'type refuses it as unknown. Symbolic expressions are parsed, never evaluated: '
         'names, numbers, `+ - * / **`, parentheses and `sin cos tan asin acos atan2 sinh cosh '
         'tanh exp log sqrt abs pi`.',
         MODEL_FIELDS),
        ('Controller node: its own parameters',
         'Node `continuum_controller` (executable `controller_node`): timing, threads, input '
         'bounds and start-up. `use_sim_time` is rclpy\'s own: with it the loop runs on an '
         'executor timer on the ROS clock, without deadlines.',
         CONTROLLER_NODE_FIELDS),
        ('Controller: the control loop',
         'The law, references, task space, output and limits (`ControllerSettings.parse`, '
         'shared by the node, `continuum-ctrl simulate` and the tests). A type\'s own '
         '`reference.*` row starts with the `reference.type` values that read the key; the '
         'other types ignore it.',
         LOOP_FIELDS),
        ('Simulator node',
         f'Node `continuum_simulator` (executable `simulator_node`). It also reads {shared} '
         'from `/**`, with the controller\'s meaning, so that it turns the commands into '
         'forces with the same actuation map.',
         {**SIMULATOR_NODE_FIELDS, **PLANT_FIELDS}),
    ]


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f'{value:g}' if abs(value) >= 1e6 else repr(value)
    if isinstance(value, (list, tuple)):
        return '[' + ', '.join(_value(v) for v in value) + ']'
    if isinstance(value, str):
        return f"'{value}'" if value else "''"
    return repr(value)


def _default(field: Field) -> str:
    if field.default is REQUIRED:
        return 'required' if field.required else 'none'
    return f'`{_value(field.default)}`'


def _range(field: Field) -> str:
    if field.kind not in ('number', 'numbers', 'integer'):
        return ''
    low, high = field.low, field.high
    if low is not None and high is not None:
        return f"{'(' if field.strict_low else '['}{_value(low)}, {_value(high)}]"
    if low is not None:
        return f"{'>' if field.strict_low else '>='} {_value(low)}"
    if high is not None:
        return f'<= {_value(high)}'
    return ''


def _cell(text: str) -> str:
    return text.replace('|', '\\|')


def table(fields: Dict[str, Field]) -> List[str]:
    """Return the Markdown table of `fields`, one row per key, in table order."""
    rows = ['| key | type | default | range | allowed | meaning |',
            '|---|---|---|---|---|---|']
    for key, field in fields.items():
        allowed = ', '.join(f'`{name}`' for name in field.choices or ())
        rows.append(f'| `{key}` | {KINDS[field.kind]} | {_default(field)} | {_range(field)} '
                    f'| {allowed} | {_cell(field.description)} |')
    return rows


def render() -> str:
    """Return the whole page."""
    lines = [HEADER]
    for title, introduction, fields in sections():
        lines += [f'## {title}', '', textwrap.fill(introduction, 99), '', *table(fields), '']
    return '\n'.join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Write the page (default: docs/parameters.md here), or with --check compare it."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl docs', description=__doc__.split(
        '\n\n')[0].strip())
    parser.add_argument('--out', type=Path, default=PAGE, help=f'default: {PAGE}')
    parser.add_argument('--check', action='store_true',
                        help='exit 1 when the page differs from the tables, write nothing')
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.out.read_text(encoding='utf-8') if args.out.is_file() else ''
        if current != text:
            print(f'{args.out} is stale: run `{COMMAND}`', file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding='utf-8')
    print(f'wrote {args.out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
