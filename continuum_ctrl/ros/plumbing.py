"""
What both nodes share around rclpy: executors, heap, log throttling, `deliver`, `spin`.

    sys.exit(spin(ControllerNode))     # a node's main(): one error line and status 2 on bad input

`spin` checks the parameter files given with ``--params-file`` with the package's own reader
before rclpy reads them, so a missing file or a YAML syntax error gives the same one-line
``error:`` as a bad value, not rcl's traceback.
"""

import ctypes
import ctypes.util
import gc
import os
import signal
import sys
import time
from typing import Any, Callable, List, Optional, Sequence

import rclpy
import rclpy.executors
import rclpy.logging
from rclpy.duration import Duration
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

from continuum_ctrl.params import check_declarable, ConfigError, read_yaml

#: default executor kind, see `make_executor`
EXECUTOR = 'events'
#: mallopt's parameters (glibc's malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: freed memory malloc keeps for reuse rather than return to the kernel, bytes; half of it is
#: the size from which a buffer is mapped on its own (glibc's largest such threshold)
HEAP_KEEP = 64 * 1024 * 1024
#: longest wait for the subscribers to acknowledge a node's last message, s (`deliver`)
DELIVERY_TIMEOUT = 0.2
#: while not acknowledged, the last message is sent again at this interval, s
DELIVERY_STEP = 0.005


def find_events_executor() -> Optional[Callable[..., rclpy.executors.Executor]]:
    """
    Return `rclpy.experimental.EventsExecutor`, or None where this rclpy lacks it (Humble).

    A class in Kilted, a factory function in Jazzy: both take `context` and return an executor.
    It is imported here, never at module level, so every module of the package imports on
    Humble.
    """
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return None
    return EventsExecutor


def single_threaded_executor(events: bool = True, context: Any = None,
                             logger: Any = None) -> rclpy.executors.Executor:
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


def make_executor(kind: Optional[str] = None) -> rclpy.executors.Executor:
    """
    Return the node's single-threaded executor: 'events' (EventsExecutor) or 'single'.

    Default: the environment variable CONTINUUM_CTRL_EXECUTOR, else `EXECUTOR` (the one
    that cost less CPU in bench/bench_node.py; see docs/benchmarks.md).
    """
    kind = kind or os.environ.get('CONTINUUM_CTRL_EXECUTOR', EXECUTOR)
    return single_threaded_executor(events=(kind == 'events'))


def settle_heap() -> None:
    """
    Collect, then freeze every object made so far out of the garbage collector's scans.

    A node process holds a hundred thousand objects and more after start-up (rclpy, NumPy,
    SciPy, Numba), and a full collection of them takes tens of ms (docs/benchmarks.md). The
    loop allocates little, so one is rare, but it would stall a tick; frozen, the collector
    only scans what was made since.
    """
    gc.collect()
    gc.freeze()


def keep_freed_memory() -> Optional[str]:
    """
    Make glibc's malloc keep freed memory (up to `HEAP_KEEP` bytes) instead of returning it.

    The middleware and rclpy copy every message into fresh buffers before a callback can
    reject it by size, on the executor's thread with the GIL held. By default malloc gives a
    freed multi-MB buffer back to the kernel at once, so each such message costs hundreds of
    new pages, each a page fault, while the loop thread waits for the GIL: under a flood of
    large trajectories the loop lost many of its ticks; kept, few
    (docs/benchmarks.md).
    Return None, or why this C library cannot be told (then nothing changed).
    """
    name = ctypes.util.find_library('c')
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):
        return 'the C library has no mallopt (not glibc): freed memory goes back at once'
    ok = mallopt(M_MMAP_THRESHOLD, HEAP_KEEP // 2) and mallopt(M_TRIM_THRESHOLD, HEAP_KEEP)
    return None if ok else 'mallopt refused the thresholds'


def deliver(publisher: Any, send: Callable[[], None], logger: Any, what: str,
            timeout: float = DELIVERY_TIMEOUT, step: float = DELIVERY_STEP) -> bool:
    """
    Send a last message with `send()`; wait until `publisher`'s subscribers acknowledged it.

    Returns whether every reliable subscriber acknowledged everything sent (best-effort ones
    never do and are not waited for) within `timeout` s; logs one line saying so, or a warning
    with the number of subscribers when the wait timed out. A node destroyed right after a
    publication may take the sample with it before the middleware has sent it on (with
    Fast DDS and SCHED_FIFO nodes, most exits lost the last command that way).

    While not acknowledged, `send()` is called again every `step` s, so the message must be one
    a subscriber may receive more than once, as the safe command: a reliable writer asks for
    acknowledgements with heartbeats, which Fast DDS adds to a sample only when its history
    (the publisher's depth) is full, else every few seconds, so a lone last sample, received
    at once, was often acknowledged seconds later (docs/benchmarks.md); sent again, the
    heartbeat comes within `depth` sends.
    """
    start = time.monotonic()
    send()
    while True:
        left = timeout - (time.monotonic() - start)
        try:
            acked = publisher.wait_for_all_acked(Duration(nanoseconds=int(
                max(min(step, left), 0.0) * 1e9)))
        except _rclpy.RCLError as exc:      # a middleware without acknowledgements
            logger.warning(f'{what}: cannot wait for its acknowledgement: '
                           f'{str(exc).splitlines()[0]}')
            return False
        if acked or left <= step:
            break
        send()
    elapsed = (time.monotonic() - start) * 1e3
    count = publisher.get_subscription_count()
    if acked:
        logger.info(f'{what}: acknowledged after {elapsed:.0f} ms ({count} subscribers matched)')
    else:
        logger.warning(f'{what}: not acknowledged within {timeout * 1e3:.0f} ms ({count} '
                       f'subscribers matched; at least one has not confirmed it)')
    return acked


def log_lines(logger: Any, lines: Any) -> None:
    """Log each ``(level, text)`` of `lines` at its level: 'error', 'warn' or 'info'."""
    for level, text in lines:
        # one call site per severity: rclpy raises ValueError when a call site's changes
        if level == 'error':
            logger.error(text)
        elif level == 'warn':
            logger.warning(text)
        else:
            logger.info(text)


def params_files(args: Sequence[str]) -> List[str]:
    """Return the files given with ``--params-file`` inside the ``--ros-args`` of `args`."""
    files, ros = [], False
    for k, arg in enumerate(args):
        if arg == '--ros-args':
            ros = True
        elif arg == '--':
            ros = False
        elif ros and arg == '--params-file' and k + 1 < len(args):
            files.append(args[k + 1])
    return files


def check_params_files(args: Sequence[str]) -> None:
    """Read every ``--params-file`` of `args`; missing, malformed or undeclarable: ConfigError."""
    for path in params_files(args):
        check_declarable(read_yaml(path), path)


def spin(node_class: Callable[[], Any], argv: Optional[Sequence[str]] = None,
         executor: Optional[str] = None) -> int:
    """
    Run one node until SIGINT/SIGTERM; bad parameters exit with status 2 and one error line.

    Before spinning, malloc is told to keep freed memory (`keep_freed_memory`), the start-up
    heap is frozen (`settle_heap`) and
    this thread, which runs the node's loop, gets the node's `realtime_priority`. On the way
    out, `node.stop()` runs before the node is destroyed: the controller publishes its safe
    command there, the last thing it publishes, and waits until its subscribers have it
    (`deliver`).
    """
    args = list(sys.argv if argv is None else argv)
    name = getattr(node_class, '__name__', 'node')
    stop: List[int] = []
    node = None
    try:
        check_params_files(args)
        memory = keep_freed_memory()
        rclpy.init(args=args, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda number, frame: stop.append(number))
        node = node_class()
        if memory is not None:
            node.get_logger().warning(memory)
        settle_heap()
        exec_ = make_executor(executor)
        exec_.add_node(node)
        node.apply_realtime_priority()      # after the executor made its threads
        while not stop and rclpy.ok():
            exec_.spin_once(timeout_sec=0.1)
    except ConfigError as exc:
        print(f'{name}: error: {exc}', file=sys.stderr)
        return 2
    except _rclpy.RCLError as exc:          # rcl refused the arguments: one line too
        print(f'{name}: error: {str(exc).splitlines()[0]}', file=sys.stderr)
        return 2
    finally:
        if node is not None:
            if hasattr(node, 'stop'):
                node.stop()
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0
