"""Real-time scheduling of the loop thread: the thread asked for it gets it, and only it."""

import os
import threading

import pytest

from continuum_ctrl.ros.scheduling import set_thread_priority

pytestmark = pytest.mark.skipif(not hasattr(os, 'sched_getscheduler'), reason='Linux only')


def in_thread(function):
    """Run `function` in a new thread; return its result."""
    result = []
    thread = threading.Thread(target=lambda: result.append(function()))
    thread.start()
    thread.join()
    return result[0]


def test_fifo_then_normal_for_the_calling_thread_only():
    def switch():
        problem = set_thread_priority(20)
        during = os.sched_getscheduler(0), os.sched_getparam(0).sched_priority
        main = os.sched_getscheduler(os.getpid())
        back = set_thread_priority(0)
        return problem, during, main, back, os.sched_getscheduler(0)

    before = os.sched_getscheduler(0)
    problem, during, main, back, after = in_thread(switch)
    assert main == before                               # the main thread is untouched
    assert back is None and after == os.SCHED_OTHER
    if problem is None:
        assert during == (os.SCHED_FIFO, 20)
    else:                                               # no privilege here: unchanged
        assert 'CAP_SYS_NICE' in problem and during[0] == os.SCHED_OTHER


def test_a_refusal_names_the_reason_and_changes_nothing():
    problem = in_thread(lambda: set_thread_priority(1000))   # outside 1-99 on Linux
    assert problem is not None and 'rtprio' in problem
    assert in_thread(lambda: os.sched_getscheduler(0)) == os.SCHED_OTHER
