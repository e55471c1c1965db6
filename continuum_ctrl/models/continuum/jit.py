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
"""

from numba import njit
from numba.core.cpu import CPUTargetOptions

_WITHOUT_RUNTIME = {'_nrt': False} if hasattr(CPUTargetOptions, '_nrt') else {}


def compiled(**options):
    """Return a decorator: ``njit(cache=True, **options)`` without the runtime, see the module."""
    options = {**_WITHOUT_RUNTIME, **options}

    def decorate(function):
        try:
            return njit(cache=True, **options)(function)
        except RuntimeError:            # numba: "cannot cache function ...: no locator"
            return njit(**options)(function)
    return decorate
