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

A compiled caller passes a constant argument (a mode, a flag, a first index) as a NumPy
scalar (``np.int64``, ``np.True_``), never as a Python literal: Numba types a literal
``3`` or ``True`` as ``Literal[int](3)`` or ``Literal[bool](True)`` and compiles the callee
once more for each value, which cost a cold cache seconds per kernel. The modules keep such
constants beside the kernels that take them (`modes.py`'s evaluation modes, `model.TASK_*`,
`terms.COLUMN0`, `kinematics.WITH_DERIVATIVES`, the tick record's kinds).

A model calls its kernel through `entry_point`: the compiled function for fixed argument
types, without the dispatcher's per-call typing of the arguments, which costs more than the
kernel for a tuple of many arrays (about 8 us for 40 arrays, against 0.5 us to unbox them).
A module-level kernel that objects call through gets a `cached_entry_point`: the objects take
it in their constructors, so it is compiled (or loaded) once per process, before the first
real-time call.

Numba keys a kernel's cache on its own file's source only, so a caller compiled with a
callee of another file (the fused tick and the model kernels it calls) would be loaded
stale after an edit to the callee alone (a `git pull`, a symlinked install). The package's
kernels are therefore cached under a stamp that also holds `kernel_sources_digest`, a
hash of every file of the package that compiles kernels (`PackageKernelLocator`): any edit
to one recompiles them all, as the warm step then does.

Numba rewrites a kernel's cache index (one file for all its signatures) by read, modify and
replace, without a lock: two processes saving two signatures of one kernel at once can lose
one, or file both under one data file name. Processes that compile side by side (the warm
step's workers) call `lock_cache` first.

Objects built only to check a parameter file (the launcher's check before it starts the
nodes) never run their kernels: within `kernels_deferred`, `entry_point` hands out the
dispatcher itself, which compiles or loads at its first call, so the check costs no kernel
loads (about half a second of Numba's set-up and cache reads).

The first kernel of a process that `entry_point` finds missing from the cache is announced
once through the callback given to `on_compile` (default: a line on stderr), before the
compilation: a first start after installing, without the warm step, is then seen to compile
rather than to hang.
"""

import contextlib
import functools
import hashlib
from pathlib import Path
import sys

from numba import njit, typeof
from numba.core import caching
from numba.core.cpu import CPUTargetOptions

try:
    import fcntl
    from numba.core.caching import IndexDataCacheFile
except ImportError:                     # not POSIX, or a Numba without this class
    fcntl = IndexDataCacheFile = None

WITHOUT_RUNTIME = {'_nrt': False} if hasattr(CPUTargetOptions, '_nrt') else {}
#: what the first compilation of a process says
COMPILE_NOTICE = ('compiling the Numba kernels, which are not in the on-disk cache yet: the '
                  'first start after installing (or after a change to their sources) takes '
                  'one to three minutes on a 2-core machine, later starts a second or two; '
                  '`continuum-ctrl warm` compiles them ahead')
_notice = {'say': lambda text: print(f'continuum_ctrl: {text}', file=sys.stderr, flush=True),
           'said': False}
#: whether `entry_point` hands out dispatchers (see `kernels_deferred`)
_deferred = [False]


@contextlib.contextmanager
def kernels_deferred():
    """Within: `entry_point` compiles and loads nothing, see the module (one thread at a time)."""
    _deferred[0] = True
    try:
        yield
    finally:
        _deferred[0] = False


def on_compile(say):
    """Announce the process's first compilation by ``say(COMPILE_NOTICE)`` (a log call)."""
    _notice['say'] = say


#: the package's directory: the kernels under it are cached by `PackageKernelLocator`
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def kernel_sources_digest(root=PACKAGE_ROOT):
    """Return a SHA-256 (hex) of the path and text of every file under `root` with kernels."""
    digest = hashlib.sha256()
    for path in sorted(Path(root).rglob('*.py')):
        text = path.read_bytes()
        if b'compiled(' in text:
            digest.update(path.relative_to(root).as_posix().encode() + b'\0' + text + b'\0')
    return digest.hexdigest()


class PackageKernelLocator(getattr(caching, '_CacheLocator', object)):
    """
    Numba's own locator of a package kernel's cache, its stamp the file's and the package's.

    The stamp Numba keeps in the index is ``(its own stamp, kernel_sources_digest(root))``;
    the directory and the file names are the ones Numba would use.
    """

    #: the directory whose kernels it locates
    root = PACKAGE_ROOT

    def __init__(self, numba_locator):
        self._numba = numba_locator

    def ensure_cache_path(self):
        self._numba.ensure_cache_path()

    def get_cache_path(self):
        return self._numba.get_cache_path()

    def get_disambiguator(self):
        return self._numba.get_disambiguator()

    def get_source_stamp(self):
        return self._numba.get_source_stamp(), kernel_sources_digest(self.root)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not Path(py_file).resolve().is_relative_to(cls.root):
            return None
        for numba_class in NUMBA_LOCATORS:
            found = numba_class.from_function(py_func, py_file)
            if found is not None:
                return cls(found)
        return None


#: the locators Numba tries, in its order, after this package's (none: a Numba without them,
#: whose caches then key on each kernel's own file only)
NUMBA_LOCATORS = tuple(getattr(getattr(caching, 'CacheImpl', None), '_locator_classes', ()))
if NUMBA_LOCATORS:
    caching.CacheImpl._locator_classes.insert(0, PackageKernelLocator)

#: whether `lock_cache` can lock here
CACHE_LOCKS = IndexDataCacheFile is not None and all(
    hasattr(IndexDataCacheFile, name) for name in ('load', 'save'))


def lock_cache(path):
    """
    Make this process's cache index reads and writes hold an ``flock`` on the file `path`.

    Shared to read an index and its data, exclusive to write them (see the module); for the
    whole process. Only where CACHE_LOCKS.
    """
    def locked(method, mode):
        @functools.wraps(method)
        def call(self, *args):
            with open(path, 'a') as lock:   # closing it releases the lock
                fcntl.flock(lock, mode)
                return method(self, *args)
        return call
    IndexDataCacheFile.load = locked(IndexDataCacheFile.load, fcntl.LOCK_SH)
    IndexDataCacheFile.save = locked(IndexDataCacheFile.save, fcntl.LOCK_EX)


def cached(dispatcher):
    """
    Tell whether `dispatcher`'s on-disk cache holds compiled code for its source (or None).

    None when that cannot be told (no cache, or a Numba without these internals).
    """
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except (AttributeError, OSError):
        return None


def compiled(**options):
    """Return a decorator: ``njit(cache=True, **options)`` without the runtime, see the module."""
    options = {**WITHOUT_RUNTIME, **options}

    def decorate(function):
        try:
            return njit(cache=True, **options)(function)
        except RuntimeError:            # numba: "cannot cache function ...: no locator"
            return njit(**options)(function)
    return decorate


def entry_point(dispatcher, *args, run=True):
    """
    Compile (or load) `dispatcher` for the types of `args` and return that compiled function.

    It is called like the dispatcher but checks no types: every later call must pass
    arguments of exactly these types (C-contiguous float64 arrays of the same dimensions,
    ints, the same namedtuple layouts). It runs once on `args` here, unless `run` is False
    (`args` then only give the types: a kernel with side effects, or examples of other sizes).
    Within `kernels_deferred`: `dispatcher` itself, neither compiled nor run.
    """
    if _deferred[0]:
        return dispatcher
    if not _notice['said'] and not dispatcher.overloads and cached(dispatcher) is False:
        _notice['said'] = True
        _notice['say'](COMPILE_NOTICE)
    signature = tuple(typeof(a) for a in args)
    if run:
        dispatcher(*args)
    else:
        dispatcher.compile(signature)
    return dispatcher.get_overload(signature)


def cached_entry_point(dispatcher, *examples):
    """
    Return a getter of ``entry_point(dispatcher, *examples)``, built at its first call.

    `examples`: arguments of the types every call will pass (one-element arrays will do).
    """
    @functools.cache
    def loaded():
        return entry_point(dispatcher, *examples)

    def getter():
        return dispatcher if _deferred[0] else loaded()
    return getter
