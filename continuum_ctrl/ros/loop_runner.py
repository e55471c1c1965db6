"""
What calls a node's control tick at its rate: a LoopThread, or an executor timer on sim time.

    runner = LoopRunner(node, tick)             # tick(lateness)
    runner.start(settings)                      # rate_hz, realtime_priority, spin_before_us
    runner.move(seconds)                        # from a tick: the deadlines after it move
    runner.stop()                               # after the tick in progress; False: timed out
    runner.apply_priority(settings.realtime_priority, previous)

On the wall clock a `runtime.loop_thread.LoopThread` keeps absolute deadlines and passes each
tick its lateness; under ``use_sim_time`` the node's executor timer (on the ROS clock, which
follows ``/clock``) calls ``tick(0.0)``: simulated time has no deadline to miss. A
`realtime_priority` puts the loop thread under SCHED_FIFO and the node's other threads
(executor, middleware) one below it.
"""

from typing import Optional

from continuum_ctrl.runtime.loop_thread import LoopThread
from continuum_ctrl.runtime.scheduling import set_node_priority, set_thread_priority

#: longest wait for the loop thread to end its tick before the safe command, s
STOP_TIMEOUT = 5.0


class LoopRunner:
    """Run `tick(lateness)` for `node` at its rate (see the module doc); `thread`: the thread."""

    def __init__(self, node, tick):
        self.node = node
        self.tick = tick
        self.thread: Optional[LoopThread] = None
        self.timer = None

    def start(self, settings) -> None:
        """Start ticking at `settings.rate_hz` (a ControllerNodeSettings)."""
        if self.node.get_parameter('use_sim_time').value:
            self.timer = self.node.create_timer(settings.period, lambda: self.tick(0.0))
            return
        self.thread = LoopThread(self.tick, settings.period, settings.realtime_priority,
                                 settings.spin_before_us * 1e-6)
        if settings.realtime_priority:      # the executor's and middleware's threads below
            self._set_priorities(settings.realtime_priority)
        self.thread.start()

    def stop(self) -> bool:
        """End the loop thread (after its tick in progress) or the timer; False: timed out."""
        if self.timer is not None:
            self.node.destroy_timer(self.timer)
            self.timer = None
        ended = True
        if self.thread is not None:
            ended = self.thread.stop(STOP_TIMEOUT)
            self.thread = None
        return ended

    def move(self, seconds: float) -> None:
        """Move the loop thread's deadlines by `seconds` (from a tick); none on sim time."""
        if self.thread is not None:
            self.thread.move(seconds)

    @property
    def error(self) -> Optional[BaseException]:
        """Return the exception that ended the loop thread (None: none, or no thread)."""
        return None if self.thread is None else self.thread.error

    def apply_priority(self, priority: int, previous: int = 0) -> None:
        """
        Give the loop thread `priority`, the node's other threads one less; log the outcome.

        0 (when `previous` is 0 too) leaves every thread as started, so a node started under
        ``chrt`` keeps it.
        """
        if priority == previous:
            return
        problem = self._set_priorities(priority)
        logger = self.node.get_logger()
        if problem is not None:
            logger.warning(f'loop thread: cannot use SCHED_FIFO priority {priority}: '
                           f'{problem}; normal scheduling')
        elif priority > 0:
            logger.info(f'loop thread: SCHED_FIFO priority {priority}, other threads '
                        f'{max(priority - 1, 1)}')

    def _set_priorities(self, priority: int) -> Optional[str]:
        """Put the loop thread at `priority`, every other thread one below (0: all normal)."""
        problem = set_node_priority(priority)   # the caller at `priority`, the others below
        if problem is None and priority:
            set_thread_priority(max(priority - 1, 1))   # the caller (executor) below too
            if self.thread is not None and self.thread.native_id:
                problem = set_thread_priority(priority, self.thread.native_id)
        return problem
