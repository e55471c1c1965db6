"""
Humble runs Python 3.10 (Ubuntu 22.04) and has no wheels here: every Python file of the package,
its tests and benchmarks is checked statically with vermin for syntax and standard-library
features newer than 3.10.
"""

from pathlib import Path
import subprocess
import sys

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ['continuum_ctrl', 'launch', 'test', 'bench', 'setup.py']


@pytest.mark.linter
def test_nothing_newer_than_python_3_10():
    pytest.importorskip('vermin', reason='vermin is not installed (pip install vermin)')
    result = subprocess.run(
        [sys.executable, '-c', 'import sys, vermin; sys.exit(vermin.main())',
         '--target=3.10-', '--violations', '--pessimistic', '--no-tips', *SOURCES],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'Target versions not met' not in result.stdout
