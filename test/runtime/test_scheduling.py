"""Real-time scheduling of a node's threads: the loop thread first, the others one below."""

import os
import resource
import signal
import subprocess
import sys
import threading
import time

import pytest

from continuum_ctrl.runtime.scheduling import set_node_priority, set_thread_priority
from conftest import REALTIME_RUN_LIMIT
from support.ros_nodes import in_thread

pytestmark = pytest.mark.skipif(not hasattr(os, 'sched_getscheduler'), reason='Linux only')


def policy(thread=0):
    """Return (policy, priority) of a thread (native id; 0: the caller)."""
    return os.sched_getscheduler(thread), os.sched_getparam(thread).sched_priority


def test_fifo_then_normal_for_the_calling_thread_only():
    def switch():
        problem = set_thread_priority(20)
        during, main = policy(), policy(os.getpid())
        back = set_thread_priority(0)
        return problem, during, main, back, policy()

    before = policy()
    problem, during, main, back, after = in_thread(switch)
    assert main == before                               # the main thread is untouched
    assert back is None and after == (os.SCHED_OTHER, 0)
    if problem is None:
        assert during == (os.SCHED_FIFO, 20)
    else:                                               # no privilege here: unchanged
        assert 'CAP_SYS_NICE' in problem and during[0] == os.SCHED_OTHER


def test_node_priority_puts_the_other_threads_one_below_then_all_back():
    ready, done = threading.Event(), threading.Event()
    helper = threading.Thread(target=lambda: (ready.set(), done.wait()))
    helper.start()
    ready.wait()
    try:
        def switch():
            problem = set_node_priority(30)
            during = policy(), policy(helper.native_id), policy(os.getpid())
            back = set_node_priority(0)
            return problem, during, back, (policy(), policy(helper.native_id))

        problem, during, back, after = in_thread(switch)
    finally:
        done.set()
        helper.join()
    assert back is None and after == ((os.SCHED_OTHER, 0),) * 2
    assert policy() == (os.SCHED_OTHER, 0)              # this thread is back to normal too
    if problem is None:
        assert during == ((os.SCHED_FIFO, 30), (os.SCHED_FIFO, 29), (os.SCHED_FIFO, 29))
    else:
        assert all(p == os.SCHED_OTHER for p, _ in during)


def test_a_refusal_names_the_reason_and_changes_nothing():
    problem = in_thread(lambda: set_thread_priority(1000))   # outside 1-99 on Linux
    assert problem is not None and 'rtprio' in problem
    assert in_thread(policy) == (os.SCHED_OTHER, 0)


#: a process that puts itself under SCHED_FIFO and never blocks again (exit 3: not permitted)
RUNAWAY = """
import os, sys
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
except OSError:
    sys.exit(3)
print('spinning', flush=True)
while True:
    pass
"""


@pytest.mark.slow          # the kernel ends it after its RLIMIT_RTTIME: about 5 s
def test_a_runaway_real_time_process_is_ended_by_the_kernel():
    """A test's node that spins under SCHED_FIFO is ended (conftest: RLIMIT_RTTIME)."""
    assert resource.getrlimit(resource.RLIMIT_RTTIME)[0] <= REALTIME_RUN_LIMIT * 1e6
    runaway = subprocess.Popen([sys.executable, '-c', RUNAWAY], stdout=subprocess.PIPE,
                               text=True)
    try:
        if runaway.stdout.readline() != 'spinning\n':
            assert runaway.wait(10.0) == 3
            pytest.skip('SCHED_FIFO is not permitted here')
        start = time.monotonic()
        try:
            status = runaway.wait(timeout=3 * REALTIME_RUN_LIMIT)   # the other core runs this
        except subprocess.TimeoutExpired:
            pytest.fail(f'a SCHED_FIFO spin still ran {3 * REALTIME_RUN_LIMIT} s later')
        assert status in (-signal.SIGKILL, -signal.SIGXCPU)
        assert REALTIME_RUN_LIMIT - 1.0 < time.monotonic() - start < 2 * REALTIME_RUN_LIMIT
    finally:
        if runaway.poll() is None:
            runaway.kill()
            runaway.wait()
