"""
The planner's inverse kinematics in a process of its own.

    reach = ReachProcess(model_spec, task_settings)
    reach.start()                 # spawn it now (else the first call does)
    reach.wait_ready(timeout)     # until it has built its model (a second or two)
    reach.ready                   # whether it serves, without waiting (any thread)
    reach(positions, q0, chain)   # TaskSpace.closest_points there: [(point, distance, q)]
    reach.close()

An unreachable tip path costs the IK up to a second of Python around its compiled steps
(seconds on a URDF arm, in NumPy). On a thread of the controller's
process it holds the interpreter lock all that time, and whenever the machine is loaded and
the scheduler parks it while it holds the lock, the real-time loop thread waits for the lock:
under a load of 6 to 9 on two cores, 20 to 50 % of a 500 Hz loop's deadlines were missed and
the executor fell behind the joint states. In a process of its own the IK shares no lock with
the loop; the calling thread waits on a pipe. The process builds the model from its
parameters (``model.*``) and the task space of `settings`, as the controller did, so its
answers are those of `TaskSpace.closest_points` in process. It starts with the controller's
configuration, so that a plan is as quick as on a thread once it serves (imports, kernel
loading: a second or two); a call before then waits for it. It is a daemon: it ends with the
controller, and `close` ends it at once (a check in progress is dropped).
"""

import multiprocessing
import signal
import threading

import numpy as np


def _serve(connection, spec, settings):
    """Serve ``(positions, q0, chain)`` requests until the pipe closes (the process's body)."""
    # a terminal's Ctrl-C reaches the whole process group: the controller ends this process
    # (`close`, or the pipe's end when it dies), which then has no traceback to print
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from continuum_ctrl.control.task_space import TaskSpace
    from continuum_ctrl.models import load_model
    task = TaskSpace(load_model(spec), settings)
    try:
        connection.send(('ready', None))
        while True:
            positions, q0, chain = connection.recv()
            try:
                answer = ('ok', task.closest_points(positions, q0, chain))
            except Exception as exc:  # noqa: B902 - said to the caller, the process serves on
                answer = ('error', f'{type(exc).__name__}: {exc}')
            connection.send(answer)
    except (EOFError, OSError):       # the controller closed its end, or ended
        return


class ReachProcess:
    """`TaskSpace.closest_points` of `settings` on the model of `spec`, in a daemon process."""

    def __init__(self, spec, settings):
        self._args = (spec, settings)
        self._connection = self._process = None
        self._closed = self._ready = False
        self._lock = threading.Lock()       # one thread at a time reads the 'ready' message

    def start(self):
        """Spawn the process, unless it runs (or was closed)."""
        if self._process is not None or self._closed:
            return
        context = multiprocessing.get_context('spawn')    # forking a process with threads
        self._connection, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, *self._args),
                                        name='planner-ik', daemon=True)
        self._process.start()
        child.close()

    def wait_ready(self, timeout=None):
        """Start it if needed and wait until it serves (s; None: no bound); return whether so."""
        self.start()
        with self._lock:
            return self._read_ready(timeout)

    @property
    def ready(self):
        """Tell whether it serves, without waiting (False while another thread waits for it)."""
        if self._ready or self._process is None or not self._lock.acquire(blocking=False):
            return self._ready
        try:
            return self._read_ready(0.0)
        finally:
            self._lock.release()

    def _read_ready(self, timeout):
        """Take the process's 'ready' message if it comes within `timeout` s (lock held)."""
        if not self._ready and not self._closed:
            try:
                if self._connection.poll(timeout):
                    self._ready = self._connection.recv()[0] == 'ready'
            except (EOFError, OSError):
                return False
        return self._ready

    def __call__(self, positions, q0, chain=False):
        """Return ``[(reachable point, distance [m], joints)]``; RuntimeError if it failed."""
        if self._closed or not self.wait_ready():
            raise RuntimeError('the planning process ended')
        try:
            self._connection.send(([np.asarray(p, dtype=float) for p in positions],
                                   np.asarray(q0, dtype=float), chain))
            status, result = self._connection.recv()
        except (EOFError, OSError):
            raise RuntimeError('the planning process ended') from None
        if status != 'ok':
            raise RuntimeError(result)
        return result

    def close(self):
        """End the process now (if it started); later calls raise RuntimeError."""
        self._closed = True
        if self._process is not None:
            self._process.terminate()
            self._connection.close()
