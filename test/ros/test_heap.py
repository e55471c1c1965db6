"""The nodes' heap settings: malloc keeps freed multi-MB buffers for the next message."""

import subprocess
import sys

import pytest

#: in a fresh interpreter: RSS (kB) after touching and freeing a 16 MB buffer, with or
#: without `keep_freed_memory` first
PROBE = '''
import sys
from continuum_ctrl.ros.plumbing import keep_freed_memory
if sys.argv[1] == 'keep':
    assert keep_freed_memory() is None
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1])
before = rss()
buffer = bytearray(16 * 1024 * 1024)    # zeroed: every page touched
del buffer
print(rss() - before)
'''


def kept_kb(mode):
    """Return how much of the freed 16 MB the process still holds, kB."""
    out = subprocess.run([sys.executable, '-c', PROBE, mode], capture_output=True, text=True,
                         timeout=60, check=True)
    return int(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='glibc malloc, /proc')
def test_freed_buffers_stay_in_the_process_only_when_asked():
    assert kept_kb('default') < 4 * 1024          # glibc hands a 16 MB block back at once
    assert kept_kb('keep') > 12 * 1024            # kept for the next large message
