"""
No function in the package is longer than MAX_LINES, except the compiled kernels of ALLOWED.

A function's length is its lines from the `def` to its last line, docstring and comments
included (`ast`: ``end_lineno - lineno + 1``). A kernel is allowed when its arithmetic is
one pass over the arm that Numba compiles whole: cut into calls, its loops would pass their
buffers and scalars around (or give up the compiler's inlining) on the tick's path.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / 'continuum_ctrl'
#: the longest a function may be, lines
MAX_LINES = 80
#: (module path in the package, function): why its length is what the arithmetic needs
ALLOWED = {
    ('control/fused_tick.py', 'fused_tick'):
        'the whole active tick in one compiled call: sample, observer, prediction, law, '
        'limits, integral, command, its quality sums',
    ('models/continuum/cog.py', 'cog_evaluate'):
        "one pass over the sections filling M, g and the mode's velocity terms with each "
        "section's Jacobians while they are in cache",
    ('models/continuum/task_step.py', 'task_step'):
        'the task-space sample: path, tip pose, Jacobian and its rate, the IK step and the '
        'exact qd_d, qdd_d in one compiled call per tick',
    ('models/continuum/ik_step.py', 'ik_step'):
        'one damped least-squares step with joint bounds, active-set loop and line search '
        'over scratch it carves itself',
}


def function_lengths():
    """Yield ``(module path, function name, lines)`` of every function in the package."""
    for path in sorted(PACKAGE.rglob('*.py')):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield (path.relative_to(PACKAGE).as_posix(), node.name,
                       node.end_lineno - node.lineno + 1)


def test_no_function_is_longer_than_the_limit_but_the_allowed_kernels():
    long = {(module, name): lines for module, name, lines in function_lengths()
            if lines > MAX_LINES}
    offenders = [f'{module}: {name} has {lines} lines (at most {MAX_LINES})'
                 for (module, name), lines in sorted(long.items())
                 if (module, name) not in ALLOWED]
    assert not offenders, '\n'.join(offenders)


@pytest.mark.parametrize('module, name', sorted(ALLOWED))
def test_each_allowed_function_is_a_compiled_kernel_that_needs_it(module, name):
    tree = ast.parse((PACKAGE / module).read_text())
    found = [node for node in tree.body
             if isinstance(node, ast.FunctionDef) and node.name == name]
    assert found, f'{module}: no function {name}: remove it from ALLOWED'
    decorators = [ast.unparse(d) for d in found[0].decorator_list]
    assert any(d.startswith('compiled') for d in decorators), \
        f'{module}: {name} is not a compiled kernel ({decorators})'
    assert found[0].end_lineno - found[0].lineno + 1 > MAX_LINES, \
        f'{module}: {name} is {MAX_LINES} lines or fewer now: remove it from ALLOWED'
