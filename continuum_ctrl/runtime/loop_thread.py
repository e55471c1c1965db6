"""
A control loop on a thread of its own, woken at absolute deadlines (as ros2_control runs it).

    thread = LoopThread(tick, period=0.002, priority=50)
    thread.start()            # tick(lateness) runs every period, lateness in s (>= 0)
    thread.move(seconds)      # from a tick: the deadlines after it move by `seconds`
    ...
    thread.stop()             # True once the thread has ended (join with a timeout)

The deadlines lie on a fixed grid on the monotonic clock, ``start + k * period``: a slow tick
does not shift the ones after it; only `move`, called from a tick, moves the grid's origin
(the runtime's lock to where the states arrive, runtime/phase_lock.py). The thread sleeps
with `time.sleep` to the deadline (on
Linux a ``clock_nanosleep`` on ``CLOCK_MONOTONIC``); with `spin_before` > 0 it wakes that much
earlier and spins to the deadline, against the slower first instructions of a thread woken
from idle. The spin is capped at `MAX_SPIN_BEFORE`: under ``SCHED_FIFO`` a spinning thread
holds its core against every normal thread. When a tick ends after the next deadline, the
deadlines it overran are skipped (counted in `missed`) and the loop keeps its grid.

The thread follows the wall (monotonic) clock only. Under simulated time (``use_sim_time``)
the loop must follow ``/clock``, which only the executor sees: a node then keeps its executor
timer (``create_timer`` runs on the ROS clock) and does not start a LoopThread. rclpy's
``Clock.sleep_until`` (in Humble and Kilted) would follow ``/clock`` from this thread, but it
registers a time-jump callback and makes an event on every call, and simulated time has no
real-time deadline to keep.

`runtime.handoff.StateHandoff` carries the latest validated state from the executor thread,
where the subscriptions run, to the loop thread, without locks (the next reference goes
through the loop planner's `control.planner.ReferenceSlot`); `SnapshotRing`
(runtime/snapshot_ring.py) carries what the loop produced (for ``~/state``) the other way.

The two threads share the GIL. A loop thread woken while the executor thread runs Python waits
until that thread drops the GIL, at the latest after the interpreter's switch interval (5 ms
by default), and a C call that holds the GIL (rclpy converting a 5 MB message) holds it for
its whole length. `start` therefore lowers the switch interval to `SWITCH_INTERVAL` (process
wide; `stop` restores it), which makes far fewer of a SCHED_FIFO loop's ticks late beside
a busy Python thread (docs/benchmarks.md, "Figures quoted by the code"). The executor's
callbacks must stay short, and input is bounded before it is converted
(ros/raw_input.py).
"""

import sys
import threading
import time

from continuum_ctrl.runtime.lateness import split_in_python
from continuum_ctrl.runtime.scheduling import set_thread_priority

#: longest spin before a deadline, s: a FIFO thread must block, not spin, between ticks
MAX_SPIN_BEFORE = 200e-6
#: the interpreter's switch interval while a loop thread runs, s (see the module doc)
SWITCH_INTERVAL = 1e-4


class LoopThread:
    """
    Call `tick(lateness)` every `period` s on a new thread, at absolute deadlines.

    `lateness`: how long after the first deadline not yet served this tick started, s.
    `priority`: SCHED_FIFO priority of the thread (0: normal scheduling); `priority_problem`
    says why it could not be applied (None: applied or not asked). `spin_before`: s of
    spinning before each deadline, at most MAX_SPIN_BEFORE. Counters (read from any thread):
    `ticks` and `missed` (deadlines skipped, as runtime/lateness.py defines them; the
    runtime counts late ticks from the `lateness` it is handed); `deadline`: the one the
    current tick serves
    (`time.monotonic` s). An exception raised by `tick` ends the loop and is kept in `error`.
    """

    def __init__(self, tick, period, priority=0, spin_before=0.0, name='control_loop'):
        if not period > 0.0:
            raise ValueError(f'period must be > 0, got {period}')
        if not 0.0 <= spin_before <= MAX_SPIN_BEFORE:
            raise ValueError(f'spin_before must lie in [0, {MAX_SPIN_BEFORE}] s, got '
                             f'{spin_before}')
        self.tick = tick
        self.period = period
        self.priority = priority
        self.spin_before = spin_before
        self.deadline = None
        self.ticks = 0
        self.missed = 0
        self.priority_problem = None
        self.error = None
        self._running = False
        self._move = 0.0
        self._switch_interval = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self):
        """Start the thread (first tick one period from now); lower the switch interval."""
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch_interval, SWITCH_INTERVAL))
        self._running = True
        self._thread.start()

    def stop(self, timeout=None):
        """
        Ask the loop to end after its current tick; return True once the thread has ended.

        `timeout` (s) bounds the wait; default: two periods plus 0.5 s. A tick in progress is
        never interrupted, so the caller may publish a last (safe) command after this.
        """
        self._running = False
        if self._thread.ident is None:
            return True
        self._thread.join(2.0 * self.period + 0.5 if timeout is None else timeout)
        if self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)
            self._switch_interval = None
        return not self._thread.is_alive()

    def move(self, seconds):
        """
        Move the deadlines after the current tick's by `seconds` (> 0: later); from `tick`.

        The period is unchanged: the grid's origin moves (runtime/phase_lock.py).
        """
        self._move += seconds

    @property
    def alive(self):
        """Tell whether the thread runs."""
        return self._thread.is_alive()

    @property
    def native_id(self):
        """Return the thread's native id (for its scheduling), None before `start`."""
        return self._thread.native_id

    def _run(self):
        if self.priority:
            self.priority_problem = set_thread_priority(self.priority)
        period, spin, clock, sleep = self.period, self.spin_before, time.monotonic, time.sleep
        start, k = clock(), 1
        deadline = start + period               # the first deadline no tick has served yet
        try:
            while self._running:
                pause = deadline - clock() - spin
                if pause > 0.0:
                    sleep(pause)
                while clock() < deadline:       # at most `spin` s (or a short sleep's slack)
                    pass
                if not self._running:
                    break
                lateness = clock() - deadline
                skipped = split_in_python(lateness, period)[0]
                if skipped:
                    self.missed += skipped
                    k += skipped
                    deadline = start + k * period   # a product, not a sum: no drift
                self.deadline = deadline
                self.tick(lateness)
                self.ticks += 1
                k += 1
                if self._move:
                    start, self._move = start + self._move, 0.0
                deadline = start + k * period
        except Exception as exc:  # noqa: B902 - kept for the owner, which decides what to do
            self.error = exc
        finally:
            self._running = False
