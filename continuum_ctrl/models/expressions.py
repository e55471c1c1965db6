"""
Safe parsing of parameter expressions (``"m2*l1*lc2*cos(q2)"``) into SymPy, without eval.

The text is parsed by Python's `ast` and only this grammar is converted, node by node:
declared names, ``pi``, int/float literals, ``+ - * / **``, unary ``+ -``, parentheses and
calls of the functions in `FUNCTIONS`. Everything else (attributes, subscripts, other calls,
keywords, lambdas, strings, comparisons, comprehensions, names starting with ``_``) is a
ConfigError naming the parameter and the offending piece.
"""

import ast
import math

import sympy as sp

from continuum_ctrl.params import ConfigError

#: allowed function name -> (SymPy function, number of arguments)
FUNCTIONS = {
    'sin': (sp.sin, 1), 'cos': (sp.cos, 1), 'tan': (sp.tan, 1),
    'asin': (sp.asin, 1), 'acos': (sp.acos, 1), 'atan2': (sp.atan2, 2),
    'sinh': (sp.sinh, 1), 'cosh': (sp.cosh, 1), 'tanh': (sp.tanh, 1),
    'exp': (sp.exp, 1), 'log': (sp.log, 1), 'sqrt': (sp.sqrt, 1), 'abs': (sp.Abs, 1),
}

#: allowed constant names
CONSTANTS = {'pi': sp.pi}

#: names a parameter may not declare
RESERVED = set(FUNCTIONS) | set(CONSTANTS)

#: largest magnitude of a numeric exponent of a numeric base (keeps ``9**9**9`` out)
MAX_NUMERIC_EXPONENT = 64

#: longest expression text accepted
MAX_LENGTH = 20000

_OPERATORS = {ast.Add: sp.Add, ast.Sub: lambda a, b: a - b, ast.Mult: sp.Mul,
              ast.Div: lambda a, b: a / b, ast.Pow: sp.Pow}


def check_name(name, key):
    """Reject a declared symbol name that is not a plain identifier or is reserved."""
    if not isinstance(name, str) or not name.isidentifier() or name.startswith('_'):
        raise ConfigError(key, f"'{name}' is not a valid name (an identifier not starting "
                               "with '_')")
    if name in RESERVED:
        raise ConfigError(key, f"'{name}' is a reserved function or constant name")


def parse_expression(text, key, names):
    """
    Convert expression `text` of parameter `key` into a SymPy expression.

    `names` maps each allowed name to its SymPy symbol (or value). A number is accepted as
    is; anything outside the grammar raises ConfigError(key, ...).
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ConfigError(key, f'must be an expression string, got {text!r}')
    if not isinstance(text, str):
        return _number(text, key, repr(text))
    if len(text) > MAX_LENGTH:
        raise ConfigError(key, f'expression is longer than {MAX_LENGTH} characters')
    try:
        tree = ast.parse(text.strip(), mode='eval')
    except SyntaxError as exc:
        raise ConfigError(key, f"cannot parse '{text}': {exc.msg} (column {exc.offset})") \
            from exc
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ConfigError(key, f"cannot parse '{text}': {type(exc).__name__}") from exc
    return _Converter(key, text, names).convert(tree.body)


def _number(value, key, token):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(key, f"literal {token} is not allowed: only int and float numbers")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(key, f'literal {token} is not finite')
    return sp.Integer(value) if isinstance(value, int) else sp.Float(value)


class _Converter:
    """Recursive conversion of an allowed `ast` node into SymPy."""

    def __init__(self, key, text, names):
        self.key = key
        self.text = text
        self.names = names

    def fail(self, node, why):
        try:
            token = ast.unparse(node)
        except (ValueError, AttributeError, RecursionError):
            token = type(node).__name__
        raise ConfigError(self.key, f"'{token}' in '{self.text}': {why}")

    def convert(self, node):
        try:
            method = getattr(self, '_' + type(node).__name__, None)
            if method is None:
                self.fail(node, f'{type(node).__name__} is not allowed (only names, numbers, '
                                f'+ - * / **, parentheses and the functions '
                                f'{sorted(FUNCTIONS)})')
            return method(node)
        except RecursionError as exc:
            raise ConfigError(self.key, f"'{self.text}' is nested too deeply") from exc

    def _Constant(self, node):
        return _number(node.value, self.key, repr(node.value))

    def _Name(self, node):
        name = node.id
        if name.startswith('_'):
            self.fail(node, "names starting with '_' are not allowed")
        if name in self.names:
            return self.names[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name in FUNCTIONS:
            self.fail(node, 'is a function; call it with arguments')
        self.fail(node, f'unknown name (declared: {sorted(self.names)} and pi)')

    def _UnaryOp(self, node):
        operand = self.convert(node.operand)
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return operand
        self.fail(node, f'operator {type(node.op).__name__} is not allowed')

    def _BinOp(self, node):
        operator = _OPERATORS.get(type(node.op))
        if operator is None:
            self.fail(node, f'operator {type(node.op).__name__} is not allowed '
                            '(only + - * / **)')
        left, right = self.convert(node.left), self.convert(node.right)
        if (operator is sp.Pow and left.is_Number and right.is_Number
                and abs(right) > MAX_NUMERIC_EXPONENT):
            self.fail(node, f'numeric exponent beyond {MAX_NUMERIC_EXPONENT}')
        return operator(left, right)

    def _Call(self, node):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            self.fail(node.func, f'is not an allowed function (allowed: {sorted(FUNCTIONS)})')
        if node.keywords:
            self.fail(node, 'keyword arguments are not allowed')
        function, arity = FUNCTIONS[node.func.id]
        if len(node.args) != arity or any(isinstance(a, ast.Starred) for a in node.args):
            self.fail(node, f'{node.func.id} takes {arity} argument(s)')
        return function(*(self.convert(arg) for arg in node.args))
