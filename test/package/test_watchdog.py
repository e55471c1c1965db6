"""
The suite's watchdog (test/conftest.py) ends a run whose test hangs in a C call holding the GIL.

pytest-timeout's thread cannot run then; the watchdog is faulthandler's C thread. The hang
here is a regular expression's backtracking (the `re` module keeps the GIL throughout), run
under this suite's conftest in a pytest of its own with a 1 s timeout (thread method).
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

TEST_DIR = Path(__file__).resolve().parents[1]
HANG = '''
import re


def test_holds_the_gil_for_good():
    re.match(r'(a+)+$', 'a' * 64 + 'b')
'''


@pytest.mark.slow           # a pytest of its own: about 5 s
def test_a_test_that_hangs_holding_the_gil_ends_the_run_with_its_traceback(tmp_path):
    (tmp_path / 'test_hang.py').write_text(HANG)
    start = time.monotonic()
    command = [sys.executable, '-m', 'pytest', '-p', 'conftest', '-p', 'no:cacheprovider',
               '-o', 'timeout=1', '-o', 'timeout_method=thread',
               '--rootdir', str(tmp_path), str(tmp_path)]
    # without the watchdog, this run ends only at subprocess's timeout
    run = subprocess.run(command, capture_output=True, text=True, timeout=60,
                         env={**os.environ, 'PYTHONPATH': str(TEST_DIR)})
    assert run.returncode == 1
    assert time.monotonic() - start < 30.0
    assert 'Timeout (0:00:02)!' in run.stderr and 'test_holds_the_gil_for_good' in run.stderr, \
        run.stdout[-2000:] + run.stderr[-2000:]
