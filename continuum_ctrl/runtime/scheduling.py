"""
Real-time scheduling of a node's threads (Linux ``SCHED_FIFO``), as ros2_control does.

A priority from 1 to 99 puts the calling thread, the one that runs the node's loop, under
``SCHED_FIFO`` at that priority, and the node's other threads (the middleware's, which deliver
its messages) one below it: they then run whenever they are ready, ahead of every normal
thread; threads made later inherit their maker's. 0 returns them all to normal scheduling.
Raising a priority needs ``CAP_SYS_NICE`` or an ``rtprio`` limit (for example in
``/etc/security/limits.conf``); without either, nothing changes and the reason is returned
for the log.
"""

import os
import threading

#: where Linux lists the threads of this process
TASKS = '/proc/self/task'


def set_thread_priority(priority, thread=0):
    """
    Put `thread` (a native id; 0: the caller) under ``SCHED_FIFO`` at `priority`, or normal if 0.

    Return None on success, else the reason it could not be done (the thread is unchanged).
    """
    if not hasattr(os, 'sched_setscheduler'):
        return 'real-time scheduling is not available on this system'
    policy = os.SCHED_FIFO if priority > 0 else os.SCHED_OTHER
    try:
        os.sched_setscheduler(thread, policy, os.sched_param(priority))
    except OSError as exc:
        return f'{exc.strerror} (needs CAP_SYS_NICE or an rtprio limit of at least {priority})'
    return None


def set_node_priority(priority):
    """
    Give the calling thread `priority` and the process's other threads ``priority - 1``.

    0: all of them normal. Return None on success, else the reason (then nothing changed).
    """
    problem = set_thread_priority(priority)
    if problem is not None or not os.path.isdir(TASKS):
        return problem
    own = threading.get_native_id()
    for name in os.listdir(TASKS):
        if int(name) != own:            # a thread that ended meanwhile is simply skipped
            set_thread_priority(max(priority - 1, 1) if priority else 0, int(name))
    return None


def apply_thread_priority(logger, priority, previous=0):
    """
    Apply `set_node_priority(priority)` unless `priority` equals `previous`; log the outcome.

    At start-up `previous` is 0, so threads started under ``chrt`` keep their scheduling when
    the parameter is 0.
    """
    if priority == previous:
        return
    problem = set_node_priority(priority)
    if problem is not None:
        logger.warning(f'loop thread: cannot use SCHED_FIFO priority {priority}: {problem}; '
                       'normal scheduling')
    elif priority > 0:
        logger.info(f'loop thread: SCHED_FIFO priority {priority}, other threads '
                    f'{max(priority - 1, 1)}')
