"""
Single-threaded executors: rclpy's EventsExecutor where this rclpy has it, else the classic one.

`rclpy.experimental.EventsExecutor` exists from Jazzy on; Humble's rclpy (3.3) lacks it. It is
imported only when an executor is made, never at module level, so every module of the package
imports on Humble.
"""

import rclpy.executors
import rclpy.logging


def find_events_executor():
    """
    Return `rclpy.experimental.EventsExecutor`, or None where this rclpy lacks it.

    A class in Kilted, a factory function in Jazzy: both take `context` and return an executor.
    """
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return None
    return EventsExecutor


def single_threaded_executor(events=True, context=None, logger=None):
    """
    Return an EventsExecutor (`events`) or a SingleThreadedExecutor on `context`.

    Where the events executor is asked for but missing, says so in one info line on `logger`
    (default: the `continuum_ctrl` logger) and returns a SingleThreadedExecutor.
    """
    if events:
        events_executor = find_events_executor()
        if events_executor is not None:
            return events_executor(context=context)
        (logger or rclpy.logging.get_logger('continuum_ctrl')).info(
            'rclpy.experimental.EventsExecutor is not available in this rclpy: '
            'using SingleThreadedExecutor')
    return rclpy.executors.SingleThreadedExecutor(context=context)
