"""
Arms given as ``M(q)`` and ``U(q)`` expressions (``model.type: symbolic``), derived in SymPy.

Parameters (namespace ``model``):

    coordinates   names of the generalized coordinates, e.g. [q1, q2] (rad or m)
    mass_matrix   the n*n entries of M(q) as expression strings, row-major (kg m^2, kg)
    potential     U(q) as an expression string, J (gravity and any other conservative force)
    constants.*   name -> number, usable in the expressions
    joints        optional joint names in coordinate order; default: the coordinate names

The Christoffel symbols ``c_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i)``, the Coriolis
matrix ``C_ij = sum_k c_ijk qd_k`` and ``g = dU/dq`` are derived with SymPy, then every
quantity is compiled into one generated Python function (common subexpressions hoisted, plain
`math` on Python floats). The velocity of coordinate ``q1`` is named ``dq1`` in the printed
formulas.
"""

from dataclasses import dataclass
import json
from typing import Dict, Tuple

import numpy as np
import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

from continuum_ctrl.params import ConfigError, Reader
from continuum_ctrl.models.base import DynamicsModel
from continuum_ctrl.models.expressions import check_name, parse_expression
from continuum_ctrl.models.fields import SYMBOLIC_SCHEMA


@dataclass
class Derivation:
    """
    The symbolic arm: M, U and what is derived from them, in the parameters' own names.

    `constants` maps each constant's symbol to its value; `christoffel[i][j][k]` is c_ijk.
    """

    joint_names: list
    coordinates: list
    velocities: list
    constants: dict
    M: sp.Matrix
    U: sp.Expr
    christoffel: list
    C: sp.Matrix
    g: sp.Matrix

    @property
    def n(self):
        """Return the number of coordinates."""
        return len(self.coordinates)

    def numeric(self, expr):
        """Return `expr` with every constant replaced by its value."""
        values = {s: sp.Float(v, 17) for s, v in self.constants.items()}
        return expr.xreplace(values)


def christoffel_symbols(M, q):
    """Return ``c[i][j][k] = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i)`` for symbols `q`."""
    n = len(q)
    dM = [M.diff(qk) for qk in q]
    return [[[(dM[k][i, j] + dM[j][i, k] - dM[i][j, k]) / 2 for k in range(n)]
             for j in range(n)] for i in range(n)]


def derive(spec):
    """Parse and check the symbolic `model` namespace, then derive c_ijk, C and g."""
    values = SYMBOLIC_SCHEMA.parse(spec, 'model')
    names = values['model.coordinates']
    if not names:
        raise ConfigError('model.coordinates', 'must name at least one coordinate')
    for name in names:
        check_name(name, 'model.coordinates')
    if len(set(names)) != len(names):
        raise ConfigError('model.coordinates', f'names a coordinate twice: {names}')
    n = len(names)
    coordinates = [sp.Symbol(name, real=True) for name in names]
    velocities = [sp.Symbol('d' + name, real=True) for name in names]
    symbols = dict(zip(names, coordinates))

    constants = {}
    given = Reader(spec, 'model').namespace('constants')
    for name in given.tree:
        check_name(name, given.key(name))
        if name in symbols or name in ('d' + c for c in names):
            raise ConfigError(given.key(name), f"'{name}' is already a coordinate or velocity")
        symbol = sp.Symbol(name, real=True)
        constants[symbol] = given.number(name)
        symbols[name] = symbol

    entries = values['model.mass_matrix']
    if not isinstance(entries, (list, tuple)) or len(entries) != n * n:
        count = len(entries) if isinstance(entries, (list, tuple)) else 'not a list'
        raise ConfigError('model.mass_matrix', f'must hold n*n = {n * n} expressions for '
                                               f'{n} coordinates (row-major), got {count}')
    M = sp.Matrix(n, n, [parse_expression(text, 'model.mass_matrix', symbols)
                         for text in entries])
    for i in range(n):
        for j in range(i + 1, n):
            difference = M[i, j] - M[j, i]
            if difference != 0 and difference.equals(0) is not True:
                raise ConfigError('model.mass_matrix',
                                  f'is not symmetric: entry [{i}, {j}] = {M[i, j]} but '
                                  f'[{j}, {i}] = {M[j, i]}')
    U = parse_expression(values['model.potential'], 'model.potential', symbols)
    joints = values.get('model.joints', names)
    if len(joints) != n:
        raise ConfigError('model.joints', f'must have {n} entries, got {len(joints)}')
    if len(set(joints)) != n:
        raise ConfigError('model.joints', f'names a joint twice: {joints}')

    c = christoffel_symbols(M, coordinates)
    C = sp.Matrix(n, n, lambda i, j: sum(c[i][j][k] * velocities[k] for k in range(n)))
    g = sp.Matrix([U.diff(qi) for qi in coordinates])
    return Derivation(joints, coordinates, velocities, constants, M, U, c, C, g)


def quantities(derivation):
    """
    Return (table, qdd): each compiled quantity, name -> (arguments, expression, doc, kind).

    Arguments name the state vectors a function takes: ``q``, ``qd``, ``qdd``; `kind` is
    'matrix' (n, n), 'vector' (n,) or 'scalar'; `qdd` holds the acceleration symbols.
    """
    d = derivation
    qd = sp.Matrix(d.velocities)
    qdd = sp.Matrix([sp.Dummy(f'ddq{i}', real=True) for i in range(d.n)])
    bias = d.C * qd + d.g
    return {
        'mass_matrix': (('q',), d.M, 'Return the inertia matrix M(q), (n, n).', 'matrix'),
        'coriolis_matrix': (('q', 'qd'), d.C, 'Return the Coriolis matrix C(q, qd), (n, n).',
                            'matrix'),
        'gravity_vector': (('q',), d.g, 'Return g(q) = dU/dq, (n,).', 'vector'),
        'gravity_potential': (('q',), d.U, 'Return the potential energy U(q) in joules.',
                              'scalar'),
        'bias_forces': (('q', 'qd'), bias, 'Return C(q, qd) qd + g(q), (n,).', 'vector'),
        'inverse_dynamics': (('q', 'qd', 'qdd'), d.M * qdd + bias,
                             'Return M(q) qdd + C(q, qd) qd + g(q), (n,).', 'vector'),
    }, qdd


def state_symbols(derivation, qdd):
    """
    Return argument name -> (parameter symbols, generated names q_0.., qd_0.., qdd_0..).

    Generated names carry the 0-based index into the argument (``q_0`` is ``q[0]``), never a
    coordinate's own name: a coordinate called ``q1`` may well be ``q[0]``.
    """
    n = derivation.n
    return {
        'q': (derivation.coordinates, [f'q_{i}' for i in range(n)]),
        'qd': (derivation.velocities, [f'qd_{i}' for i in range(n)]),
        'qdd': (list(qdd), [f'qdd_{i}' for i in range(n)]),
    }


def index_legend(derivation):
    """Return a line saying which coordinate each generated ``q_i`` is."""
    pairs = ', '.join(f'q_{i} = {c}' for i, c in enumerate(derivation.coordinates))
    return f'Generated variables q_i, qd_i, qdd_i are q[i], qd[i], qdd[i]: {pairs}.'


def common_subexpressions(derivation, expr, state):
    """
    Return (assignments, outputs) of `expr` with constants substituted, state symbols renamed.

    `state` is `state_symbols`; temporaries are named x0, x1, ...; integral floats become
    integers (``1.0*x`` is just ``x``).
    """
    renames = {s: sp.Symbol(name, real=True)
               for symbols, names in state.values() for s, name in zip(symbols, names)}
    matrix = expr if isinstance(expr, sp.MatrixBase) else sp.Matrix([expr])
    matrix = derivation.numeric(matrix).xreplace(renames)
    matrix = matrix.xreplace({f: sp.Integer(int(f)) for f in matrix.atoms(sp.Float)
                              if float(f).is_integer()})
    return sp.cse(list(matrix), symbols=sp.numbered_symbols('x'), optimizations='basic')


def python_function(derivation, name, args, expr, doc, kind, state):
    """Return the source of one generated Python function computing `expr` of `kind`."""
    printer = PythonCodePrinter({'fully_qualified_modules': True, 'standard': 'python3'})
    assignments, outputs = common_subexpressions(derivation, expr, state)
    lines = [f'def {name}({", ".join(args)}):', f'    """{doc}"""']
    for arg in args:
        targets = ', '.join(state[arg][1]) + (',' if derivation.n == 1 else '')
        lines.append(f'    {targets} = {arg}.tolist() if isinstance({arg}, np.ndarray) '
                     f'else {arg}')
    lines += [f'    {symbol} = {printer.doprint(value)}' for symbol, value in assignments]
    out = [printer.doprint(value) for value in outputs]
    n = derivation.n
    if kind == 'scalar':
        lines.append(f'    return float({out[0]})')
    elif kind == 'vector':
        lines.append(f'    return np.array([{", ".join(out)}], dtype=float)')
    else:
        rows = ', '.join('[' + ', '.join(out[r * n:(r + 1) * n]) + ']' for r in range(n))
        lines.append(f'    return np.array([{rows}], dtype=float)')
    return '\n'.join(lines) + '\n'


def python_source(derivation):
    """
    Return a self-contained Python module computing M, C, g, U, bias forces and inverse dynamics.

    Functions take state vectors (NumPy arrays or sequences) in coordinate order.
    """
    table, qdd = quantities(derivation)
    state = state_symbols(derivation, qdd)
    values = ', '.join(f'{s} = {v!r}' for s, v in derivation.constants.items()) or 'none'
    header = [
        '"""',
        'Dynamics of a symbolic arm, generated by continuum_ctrl (`continuum-ctrl derive`).',
        '',
        f'Coordinates, in order: {", ".join(map(str, derivation.coordinates))}.',
        f'Joint names: {", ".join(derivation.joint_names)}.',
        index_legend(derivation),
        f'Constants: {values}.',
        '"""',
        '',
        'import math  # noqa: F401',
        '',
        'import numpy as np',
        '',
        f'JOINT_NAMES = {derivation.joint_names!r}',
        '',
    ]
    functions = [python_function(derivation, name, args, expr, doc, kind, state)
                 for name, (args, expr, doc, kind) in table.items()]
    return '\n'.join(header) + '\n\n' + '\n\n'.join(functions)


class SymbolicModel(DynamicsModel):
    """An arm given as M(q) and U(q): compiled functions of the derived quantities."""

    def __init__(self, derivation, source=None):
        self.derivation = derivation
        self.joint_names = list(derivation.joint_names)
        self.source = python_source(derivation) if source is None else source
        namespace = {}
        exec(compile(self.source, '<continuum_ctrl.models.symbolic>', 'exec'), namespace)
        self._mass_matrix = namespace['mass_matrix']
        self._coriolis_matrix = namespace['coriolis_matrix']
        self._gravity_vector = namespace['gravity_vector']
        self._gravity_potential = namespace['gravity_potential']
        self._bias_forces = namespace['bias_forces']
        self._inverse_dynamics = namespace['inverse_dynamics']

    def mass_matrix(self, q):
        """Inertia matrix ``M(q)``, (n, n)."""
        return self._mass_matrix(q)

    def coriolis_matrix(self, q, qd):
        """Christoffel Coriolis matrix ``C(q, qd)``, (n, n)."""
        return self._coriolis_matrix(q, qd)

    def gravity_vector(self, q):
        """Generalized conservative force ``g(q) = dU/dq``, (n,)."""
        return self._gravity_vector(q)

    def gravity_potential(self, q):
        """Potential energy ``U(q)`` in joules (all of `model.potential`)."""
        return self._gravity_potential(q)

    def bias_forces(self, q, qd):
        """``C(q, qd) qd + g(q)``, (n,)."""
        return self._bias_forces(q, qd)

    def inverse_dynamics(self, q, qd, qdd):
        """``M qdd + C qd + g`` as one compiled function, (n,)."""
        return self._inverse_dynamics(q, qd, qdd)

    def forward_dynamics(self, q, qd, tau):
        """Acceleration ``M^-1 (tau - C qd - g)``, (n,)."""
        return np.linalg.solve(self._mass_matrix(q),
                               np.asarray(tau, dtype=float) - self._bias_forces(q, qd))


#: spec (canonical JSON) -> (derivation, generated source), see `from_spec`
_DERIVED: Dict[str, Tuple[Derivation, str]] = {}
#: specs kept; a process builds few distinct arms
_DERIVED_KEPT = 16


def from_spec(spec):
    """
    Build a `SymbolicModel` from the nested `model` namespace (``type: symbolic``).

    The derivation and its generated source depend on the spec alone and take SymPy a while,
    so a process makes them once per spec (a controller and a plant of one arm, or a test
    suite, share them); each call still returns a model of its own.
    """
    key = json.dumps(spec, sort_keys=True, default=repr)
    if key not in _DERIVED:
        derivation = derive(spec)
        if len(_DERIVED) >= _DERIVED_KEPT:
            _DERIVED.clear()
        _DERIVED[key] = derivation, python_source(derivation)
    return SymbolicModel(*_DERIVED[key])
