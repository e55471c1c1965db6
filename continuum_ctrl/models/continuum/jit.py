"""
Numba compilation with an on-disk cache when one is writable, and without one otherwise.

Numba looks for a cache directory next to the source (``__pycache__``), then in
``NUMBA_CACHE_DIR`` or the user's cache directory; when none is writable, `compiled` compiles
without a cache (each process then pays the first-call compile time again) instead of failing.
"""

from numba import njit


def compiled(**options):
    """Return a decorator: ``njit(cache=True, **options)``, uncached if no cache is writable."""
    def decorate(function):
        try:
            return njit(cache=True, **options)(function)
        except RuntimeError:            # numba: "cannot cache function ...: no locator"
            return njit(**options)(function)
    return decorate
