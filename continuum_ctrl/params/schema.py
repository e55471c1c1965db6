"""
Parameter tables with the cross-field checks beside them, and the one parser of them all.

    SCHEMA = Schema(FIELDS, (Check('output.p_max', ('output.p_min', 'output.p_max'),
                                   lambda low, high: high > low,
                                   lambda low, high: f'must be > {low}, got {high}'),))
    values = SCHEMA.parse(tree, joints=n)   # {'output.mode': 'effort', 'gains.ki': [...], ...}

A layer declares its table of Fields (keyed by full dotted name) and the Checks that relate
its keys, as generate_parameter_library declares a parameter file with its validators, and
builds its settings from what `Schema.parse` returns. The parser does for every table alike:

1. it reads each Field from its namespace as the Field says (`Reader.field`: kind, default,
   bounds, choices, length; `per_joint` numbers expanded to the joint count). A Field whose
   `when` does not hold is not read (it is known, and ignored). A missing `required` Field is
   an error, reported as a similar unknown key where one is given (a typo);
2. it rejects every key under the table's namespaces that the table does not name;
3. it runs the Checks in their order, each on the values of the keys it reads; a Check one of
   whose keys has no value (absent without a default, or not read) is skipped.

Every failure is one ConfigError naming the full dotted key. The result (`Values`) maps the
full dotted name of each Field read to its value; absent Fields without a default are left
out, for the layer to compute; `given` names the keys the tree gave. What is not
table-shaped (a model's joints decide a vector's length, a pose must lie within the model's
limits) stays a small explicit step of the layer.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Set, Tuple, Union

from continuum_ctrl.params.errors import ConfigError
from continuum_ctrl.params.fields import Field, Reader, REQUIRED


@dataclass(frozen=True)
class Check:
    """
    A rule over several keys: ``test(*values of reads)`` must hold.

    Else ConfigError(`key`, `problem`), `problem` a text or a function of the same values.
    """

    key: str
    reads: Tuple[str, ...]
    test: Callable[..., bool]
    problem: Union[str, Callable[..., str]]

    def run(self, values: Mapping[str, Any]) -> None:
        """Raise ConfigError naming `key` when the rule fails on `values` (skipped: no value)."""
        if any(key not in values for key in self.reads):
            return
        args = [values[key] for key in self.reads]
        if not self.test(*args):
            problem = self.problem(*args) if callable(self.problem) else self.problem
            raise ConfigError(self.key, problem)


class Values(Dict[str, Any]):
    """A parsed tree: full dotted name -> value; `given`: the names given (not defaulted)."""

    given: Set[str]


@dataclass(frozen=True)
class Schema:
    """
    A table of Fields (full dotted names) with its Checks; `parse` reads a tree with them.

    `ignored` names keys that another parser of the same tree reads: accepted, never read.
    """

    fields: Mapping[str, Field]
    checks: Tuple[Check, ...] = ()
    ignored: Tuple[str, ...] = ()

    def __add__(self, other: 'Schema') -> 'Schema':
        """Return the union of two tables: fields, checks (this one's first) and ignored."""
        return Schema({**self.fields, **other.fields}, self.checks + other.checks,
                      self.ignored + other.ignored)

    def parse(self, tree: Dict[str, Any], prefix: str = '',
              joints: Optional[int] = None) -> Values:
        """
        Return ``{full dotted name: value}`` of `tree`, the namespace `prefix` (module doc).

        `joints`: the joint count of `per_joint` Fields. Raises ConfigError naming the key.
        """
        readers = _Namespaces(tree, prefix, [*self.fields, *self.ignored])
        values = Values()
        values.given = set()
        first = [key for key, field in self.fields.items() if field.when is None]
        later = [key for key, field in self.fields.items() if field.when is not None]
        for key in first + later:
            field = self.fields[key]
            if field.when is not None and values.get(field.when[0]) not in field.when[1]:
                continue
            reader, name = readers.leaf(key)
            if reader.has(name):
                values.given.add(key)
            elif field.default is REQUIRED:
                if field.required:
                    reader.raw(name)        # raises: required but missing (or the typo)
                continue
            values[key] = reader.field(name, field, joints)
        readers.reject_unknown()
        for check in self.checks:
            check.run(values)
        return values


class _Namespaces:
    """The Readers of a table's namespaces in one tree; each knows the table's names in it."""

    def __init__(self, tree: Dict[str, Any], prefix: str, keys: Any) -> None:
        self.prefix = prefix
        self.known: Dict[str, Set[str]] = {}
        for key in keys:
            parts = self.relative(key).split('.')
            for depth in range(len(parts)):
                self.known.setdefault('.'.join(parts[:depth]), set()).add(parts[depth])
        self.readers = {'': Reader(tree, prefix)}
        self.readers[''].used.update(self.known.get('', ()))

    def relative(self, key: str) -> str:
        """Return `key` without the prefix."""
        if not self.prefix:
            return key
        if not key.startswith(self.prefix + '.'):
            raise ValueError(f'{key} is not under {self.prefix}')
        return key[len(self.prefix) + 1:]

    def reader(self, namespace: str) -> Reader:
        """Return the Reader of `namespace` (relative, dotted; '' the top)."""
        if namespace not in self.readers:
            parent, _, name = namespace.rpartition('.')
            reader = self.reader(parent).namespace(name)
            reader.used.update(self.known.get(namespace, ()))
            self.readers[namespace] = reader
        return self.readers[namespace]

    def leaf(self, key: str) -> Tuple[Reader, str]:
        """Return the Reader of `key`'s namespace and its name there."""
        namespace, _, name = self.relative(key).rpartition('.')
        return self.reader(namespace), name

    def reject_unknown(self) -> None:
        """Raise ConfigError for a key the table does not name: deepest namespaces first."""
        for namespace in sorted(self.known, key=lambda ns: (-ns.count('.') - bool(ns), ns)):
            self.reader(namespace).finish()
