"""
Numba compilation of the continuum kernels: no reference counting, cached on disk if possible.

The kernels only read and write arrays allocated once by the model, so they are compiled
without Numba's runtime (``_nrt=False``): views and calls then carry no reference counting,
which otherwise costs more than the arithmetic (about 2x on the three-section CoG model). A
kernel that allocated would fail to compile, not misbehave. Should a Numba release drop the
option, the kernels compile with the runtime instead: slower, same results.

Numba looks for a cache directory next to the source (``__pycache__``), then in
``NUMBA_CACHE_DIR`` or the user's cache directory; when none is writable, `compiled` compiles
without a cache (each process then pays the first-call compile time again) instead of failing.

A model calls its kernel through `entry_point`: the compiled function for fixed argument
types, without the dispatcher's per-call typing of the arguments, which costs more than the
kernel for a tuple of many arrays (about 8 us for 40 arrays, against 0.5 us to unbox them).
A module-level kernel that objects call through gets a `cached_entry_point`: the objects take
it in their constructors, so it is compiled (or loaded) once per process, before the first
real-time call.
"""

import functools

from numba import njit, typeof
from numba.core.cpu import CPUTargetOptions

WITHOUT_RUNTIME = {'_nrt': False} if hasattr(CPUTargetOptions, '_nrt') else {}


def compiled(**options):
    """Return a decorator: ``njit(cache=True, **options)`` without the runtime, see the module."""
    options = {**WITHOUT_RUNTIME, **options}

    def decorate(function):
        try:
            return njit(cache=True, **options)(function)
        except RuntimeError:            # numba: "cannot cache function ...: no locator"
            return njit(**options)(function)
    return decorate


def entry_point(dispatcher, *args):
    """
    Compile (or load) `dispatcher` for the types of `args` and return that compiled function.

    It is called like the dispatcher but checks no types: every later call must pass
    arguments of exactly these types (C-contiguous float64 arrays of the same dimensions,
    ints, the same namedtuple layouts). It runs once on `args` here.
    """
    dispatcher(*args)
    return dispatcher.get_overload(tuple(typeof(a) for a in args))


def cached_entry_point(dispatcher, *examples):
    """
    Return a getter of ``entry_point(dispatcher, *examples)``, built at its first call.

    `examples`: arguments of the types every call will pass (one-element arrays will do).
    """
    @functools.cache
    def getter():
        return entry_point(dispatcher, *examples)
    return getter
