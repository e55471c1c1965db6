"""
A cached kernel is recompiled when a kernel it calls changes in another file.

Numba keys a kernel's on-disk cache on its own file alone; `numerics.jit` adds the hash of
every kernel file of the package to the key. Two processes in turn load a caller whose
callee (in another file) was edited between them: with the package's locator the second
sees the edit, with Numba's own it runs the stale callee.
"""

import subprocess
import sys

import pytest

from continuum_ctrl.numerics import jit

CALLER = '''
from continuum_ctrl.numerics.jit import compiled
from callee import step


@compiled()
def run(x):
    return step(x)
'''
CALLEE = '''
from continuum_ctrl.numerics.jit import compiled


@compiled()
def step(x):
    return x + {increment}
'''
PROCESS = '''
import sys
from pathlib import Path
from numba.core import caching
from continuum_ctrl.numerics import jit
jit.PackageKernelLocator.root = Path({root!r}).resolve()
if {numba_only}:
    caching.CacheImpl._locator_classes.remove(jit.PackageKernelLocator)
sys.path.insert(0, {root!r})
import caller
print(caller.run(1.0))
'''


def run_twice(root, numba_only):
    """Return the caller's result before and after its callee's file is edited."""
    (root / 'caller.py').write_text(CALLER)
    results = []
    for increment in (1.0, 2.0):
        (root / 'callee.py').write_text(CALLEE.format(increment=increment))
        code = PROCESS.format(root=str(root), numba_only=numba_only)
        done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                              check=True)
        results.append(float(done.stdout.split()[-1]))
    return results


@pytest.mark.skipif(not jit.NUMBA_LOCATORS, reason="this Numba's cache locators are not known")
def test_an_edited_callee_recompiles_its_cached_caller(tmp_path):
    (tmp_path / 'ours').mkdir()
    (tmp_path / 'numba').mkdir()
    assert run_twice(tmp_path / 'ours', numba_only=False) == [2.0, 3.0]
    assert run_twice(tmp_path / 'numba', numba_only=True) == [2.0, 2.0]     # stale


def test_the_digest_follows_kernel_files_only(tmp_path):
    (tmp_path / 'kernel.py').write_text(CALLEE.format(increment=1.0))
    (tmp_path / 'plain.py').write_text('X = 1\n')
    before = jit.kernel_sources_digest(tmp_path)
    (tmp_path / 'plain.py').write_text('X = 2\n')
    jit.kernel_sources_digest.cache_clear()
    assert jit.kernel_sources_digest(tmp_path) == before
    (tmp_path / 'kernel.py').write_text(CALLEE.format(increment=2.0))
    jit.kernel_sources_digest.cache_clear()
    assert jit.kernel_sources_digest(tmp_path) != before


def test_the_package_kernels_are_located_by_it():
    from continuum_ctrl.control import fused_tick
    dispatchers = [v for v in vars(fused_tick).values() if hasattr(v, '_cache')]
    assert dispatchers
    for dispatcher in dispatchers:
        locator = dispatcher._cache._impl.locator
        assert isinstance(locator, jit.PackageKernelLocator)
        assert locator.get_source_stamp()[1] == jit.kernel_sources_digest()
