"""
Real-time scheduling of the control-loop thread (Linux ``SCHED_FIFO``), as ros2_control does.

A priority from 1 to 99 puts the calling thread, and only it, under ``SCHED_FIFO``: it then
runs whenever it is ready, ahead of every normal thread, including the middleware's. 0 returns
it to normal scheduling. Raising a priority needs ``CAP_SYS_NICE`` or an ``rtprio`` limit (for
example in ``/etc/security/limits.conf``); without either, the thread keeps its scheduling and
the reason is returned for the log.
"""

import os


def set_thread_priority(priority):
    """
    Put the calling thread under ``SCHED_FIFO`` at `priority` (1-99), or normal if 0.

    Return None on success, else the reason it could not be done (the thread is unchanged).
    """
    if not hasattr(os, 'sched_setscheduler'):
        return 'real-time scheduling is not available on this system'
    policy = os.SCHED_FIFO if priority > 0 else os.SCHED_OTHER
    try:
        os.sched_setscheduler(0, policy, os.sched_param(priority))
    except OSError as exc:
        return f'{exc.strerror} (needs CAP_SYS_NICE or an rtprio limit of at least {priority})'
    return None


def apply_thread_priority(logger, priority, previous=0):
    """
    Give the calling thread `priority` unless it equals `previous`; log the outcome.

    At start-up `previous` is 0, so a thread started under ``chrt`` keeps its scheduling when
    the parameter is 0.
    """
    if priority == previous:
        return
    problem = set_thread_priority(priority)
    if problem is not None:
        logger.warning(f'loop thread: cannot use SCHED_FIFO priority {priority}: {problem}; '
                       'normal scheduling')
    elif priority > 0:
        logger.info(f'loop thread: SCHED_FIFO priority {priority}')
