"""
Plans made away from the loop's thread and handed to it whole.

    planner = Planner(threaded=True)    # a worker thread of its own runs the jobs (a node)
    planner.request(job)                # job() -> (reference, note) or None
    planner.step()                      # without a worker: run the pending job here
    planner.slot.take(loop, t)          # the loop's tick installs what was posted

Nothing that iterates runs on the loop's thread: a reference that needs IK (a tip circle,
tip waypoints, a clamped tip target) is a job. Until its plan is posted the loop keeps its
reference (for the configured one: the measured pose, held), and takes the plan whole at a
tick. The newest request wins: a job superseded before it ends (a newer request, a posted
trajectory) posts nothing. One worker runs the jobs one after the other on its own model
data (`DynamicsModel.for_thread`), and given the model's parameters, its IK in a process of
its own (control/reach.py: no interpreter lock shared with the loop); in process
(`sim.closed_loop.simulate_nodes`, tests) the caller runs them with `step` between ticks,
or at once for a caller without a deadline.
"""

import collections
import threading
import time

from continuum_ctrl.control.reach import ReachProcess


class ReferenceSlot:
    """
    The next reference for the loop, from the executor thread and from workers that plan one.

    A writer publishes ``(reference, t, blend_time)`` (a fully built reference, its start time
    in s, None: the tick that installs it; the blend from the measured state, s) by one
    attribute assignment of a new tuple; the loop thread (`take`) installs each new one once,
    without a lock, and so sees the old reference or the new one, never a half-built one.
    Writers serialize among themselves: a worker that plans aside takes a ticket first
    (`claim`), and its `post` is refused when anything was claimed or posted since, checked
    and stored under one lock, so a slow plan never replaces a newer reference. The loop
    thread never waits for a plan.
    """

    def __init__(self):
        self.latest = None
        self._seen = None
        self._serial = 0
        self._lock = threading.Lock()

    def claim(self, discard=False):
        """
        Writer: return a ticket for a reference planned aside; supersedes older tickets.

        `discard` (the reader's own claim, when it restarts its reference): what was posted
        and not taken yet is dropped too.
        """
        with self._lock:
            self._serial += 1
            if discard:
                self._seen = self.latest
            return self._serial

    def current(self, ticket):
        """Return whether `ticket` is still the newest claim (nothing claimed or posted since)."""
        return ticket == self._serial

    def post(self, reference, t, ticket=None, blend_time=0.0):
        """
        Writer: publish `reference` from time `t` (s); return False when refused.

        With a `ticket`, only while it is `current`; every post supersedes older tickets.
        """
        with self._lock:
            if ticket is not None and ticket != self._serial:
                return False
            self._serial += 1
            self.latest = (reference, t, blend_time)
            return True

    def take(self, loop, t=None):
        """
        Reader: install a newly posted reference in `loop` (``loop.install``); True if any.

        A reference posted without a start time starts at `t` (s), the installing tick.
        """
        latest = self.latest
        if latest is None or latest is self._seen:
            return False
        self._seen = latest
        reference, start, blend_time = latest
        loop.install(reference, t if start is None else start, blend_time)
        return True


class Planner:
    """
    Runs plan jobs aside from the loop (see the module) and posts their references.

    `threaded`: a daemon worker runs each request as it comes; otherwise `step` runs the
    pending one on the caller's thread. `prepare`, when given, is called on the worker before
    each job: a node returns it to normal scheduling there (it is started by the real-time
    loop thread, whose policy it inherits, and a node's priority change moves every thread).
    `model_spec` (the ``model.*`` parameters): the IK of the plans runs in a `ReachProcess`.
    A job returns ``(reference, note)`` (`note`: a log line, said once the reference is
    posted) or None (nothing to post); a job that raises is said in `notes` as a warning and
    posts nothing. Figures: `plans` (references posted),
    `longest` (s, the longest job), `busy` (a job runs now). `notes` holds ``(level, text)``
    lines for the loop's events.
    """

    def __init__(self, threaded=False, prepare=None, model_spec=None):
        self.slot = ReferenceSlot()
        self.threaded = threaded
        self.prepare = prepare
        self.model_spec = model_spec
        self._reach = None
        self.notes = collections.deque()
        self.plans = 0
        self.longest = 0.0
        self.busy = False
        self._job = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread = None
        self._closed = False

    @property
    def pending(self):
        """Tell whether a request waits for its job to start."""
        return self._job is not None

    def request(self, job, t=None, blend_time=0.0, discard=False):
        """
        Ask for `job` to run aside; return its ticket (see `ReferenceSlot.claim`).

        Its reference is posted to start at `t` (s; None: the installing tick), blended in
        over `blend_time` s. A request not started yet is replaced.
        """
        with self._lock:
            ticket = self.slot.claim(discard)
            self._job = (ticket, job, t, blend_time)
        if self.threaded and not self._closed:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name='planner',
                                                daemon=True)
                self._thread.start()
            self._wake.set()
        return ticket

    def step(self):
        """Run the pending job on this thread (no worker only); return whether one ran."""
        if self.threaded:
            return False
        return self._run()

    def task_space(self, task, start=True):
        """
        Return the planning copy of `task` (the loop's TaskSpace, or None): its jobs' tool.

        On the model's `for_thread` copy; its IK in a new `ReachProcess` given `model_spec`
        (the one made for an earlier task space ends), started now or (`start` False) by the
        first plan.
        """
        if self._reach is not None:
            self._reach.close()
            self._reach = None
        if task is None:
            return None
        if self.model_spec is not None and not self._closed:
            self._reach = ReachProcess(self.model_spec, task.settings)
            if start:
                self._reach.start()
        return task.for_thread(self._reach)

    def wait_ready(self, timeout):
        """Wait until the IK process (if any) serves, at most `timeout` s; return whether so."""
        return self._reach is None or self._reach.wait_ready(timeout)

    @property
    def ready(self):
        """Tell whether the IK process (if any) serves, without waiting."""
        reach = self._reach
        return reach is None or reach.ready

    def close(self):
        """End the worker after its current job (it posts nothing more) and the IK process."""
        self._closed = True
        self._wake.set()
        if self._reach is not None:
            self._reach.close()
            self._reach = None

    def _run(self):
        with self._lock:
            request, self._job = self._job, None
        if request is None:
            return False
        ticket, job, t, blend_time = request
        self.busy = True
        start = time.perf_counter()
        try:
            result = job()
        except Exception as exc:  # noqa: B902 - a failed plan is said, the loop keeps holding
            self.notes.append(('warn', f'planning failed: {type(exc).__name__}: {exc}'))
            result = None
        finally:
            self.longest = max(self.longest, time.perf_counter() - start)
            self.busy = False
        if result is not None and not self._closed:
            reference, note = result
            if self.slot.post(reference, t, ticket, blend_time):
                self.plans += 1
                if note:
                    self.notes.append(('info', note))
        return True

    def _work(self):
        while not self._closed:
            self._wake.wait()
            self._wake.clear()
            while not self._closed and self._job is not None:
                if self.prepare is not None:
                    self.prepare()
                self._run()
