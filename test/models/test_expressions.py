"""The safe expression parser: the allowed grammar converts exactly, everything else is refused."""

import math

import pytest
import sympy as sp

from continuum_ctrl.params import ConfigError
from continuum_ctrl.models.expressions import check_name, FUNCTIONS, parse_expression

x, y, m = sp.symbols('x y m', real=True)
NAMES = {'x': x, 'y': y, 'm': m}
KEY = 'model.potential'


def parse(text):
    """Parse `text` with the test's names under the potential's key."""
    return parse_expression(text, KEY, NAMES)


@pytest.mark.parametrize('text, expected', [
    ('m*x**2 + 3', m * x**2 + 3),
    ('-x**2', -(x**2)),
    ('(x + y) * (x - y)', (x + y) * (x - y)),
    ('1/2*m', m / 2),
    ('2**-1', sp.Rational(1, 2)),
    ('+x - -y', x + y),
    ('2.5e-3*x', sp.Float(0.0025) * x),
    ('pi/2', sp.pi / 2),
    ('atan2(y, x) + abs(x)', sp.atan2(y, x) + sp.Abs(x)),
    ('sqrt(x)*exp(y)*log(m)', sp.sqrt(x) * sp.exp(y) * sp.log(m)),
    ('sinh(x) + cosh(x) + tanh(x) + asin(x) + acos(x) + tan(x)',
     sp.sinh(x) + sp.cosh(x) + sp.tanh(x) + sp.asin(x) + sp.acos(x) + sp.tan(x)),
])
def test_allowed_grammar_converts_exactly(text, expected):
    assert sp.simplify(parse(text) - expected) == 0


def test_every_whitelisted_function_evaluates_like_math():
    for name, (function, arity) in FUNCTIONS.items():
        args = ', '.join(['0.3'] * arity)
        reference = abs(0.3) if name == 'abs' else getattr(math, name)(*[0.3] * arity)
        assert float(parse(f'{name}({args})')) == pytest.approx(reference, rel=1e-14)


def test_numbers_are_accepted_as_numbers():
    assert parse_expression(2, KEY, NAMES) == 2
    assert parse_expression(0.25, KEY, NAMES) == sp.Float(0.25)


@pytest.mark.parametrize('text, token', [
    ("__import__('os').system('false')", '__import__'),
    ('x.real', 'x.real'),
    ('x.__class__', 'x.__class__'),
    ('lambda: 1', 'lambda'),
    ('z + 1', 'z'),
    ('_secret', '_secret'),
    ("'a string'", 'a string'),
    ('x[0]', 'x[0]'),
    ('[i for i in y]', 'for'),
    ('x if y else m', 'if'),
    ('x < y', '<'),
    ('x // y', '//'),
    ('x % y', '%'),
    ('foo(x)', 'foo'),
    ('sin(x, y)', 'sin(x, y)'),
    ('sin(x=1)', 'sin(x=1)'),
    ('sin', 'sin'),
    ('True', 'True'),
    ('1j', '1j'),
    ('1e999', 'inf'),
    ('9**9**9', '9 ** 9 ** 9'),
    ('(x, y)', '(x, y)'),
    ('x := 1', ''),
    ('x +', 'x +'),
    ('', ''),
])
def test_anything_else_is_one_config_error_naming_key_and_token(text, token):
    with pytest.raises(ConfigError) as info:
        parse(text)
    assert info.value.key == KEY
    assert token in str(info.value)


def test_non_strings_are_refused():
    for value in (None, True, [1, 2], {'a': 1}):
        with pytest.raises(ConfigError) as info:
            parse_expression(value, 'model.mass_matrix', NAMES)
        assert info.value.key == 'model.mass_matrix'


def test_deep_nesting_is_a_config_error():
    with pytest.raises(ConfigError):
        parse('(' * 1000 + 'x' + ')' * 1000)
    with pytest.raises(ConfigError):
        parse('-' * 100000 + 'x')
    with pytest.raises(ConfigError):
        parse('-' * 15000 + 'x')


@pytest.mark.parametrize('name', ['sin', 'pi', '_x', '2x', 'a.b', 'a b'])
def test_declared_names_must_be_plain_and_unreserved(name):
    with pytest.raises(ConfigError) as info:
        check_name(name, 'model.coordinates')
    assert info.value.key == 'model.coordinates'
