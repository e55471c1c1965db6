"""
Exit probe: run the nodes, signal them, and see which command an outside subscriber got last.

    with CommandListener(safe) as listener:
        run = exit_once(listener, ['continuum-ctrl', 'launch', 'simulation', ...],
                        signal.SIGINT, log_path)
        run.last_is_safe, run.status, run.exit_s

The listener is a reliable subscriber of depth 100 on the controller's `~/commands` in a
process of its own, as a user's logger or a hardware bridge would be; it hands what it
receives to this one, which no hang of its DDS teardown can then stop. Run as a
script, it repeats exits and prints the count of runs whose last command was not the safe one:

    python test/support/exit_probe.py --runs 20 --signal INT --params planar_2r.yaml
"""

import argparse
import contextlib
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray

from continuum_ctrl.params.launch_description import CONTROLLER, find_executable

#: the outside subscriber's QoS: reliable, keep last 100
LISTENER_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
#: ordinary (non-safe) commands to receive before the signal: the loop controls by then
CONTROLLING = 50
#: after the launch process exited, a run ends once no command came for this long, s
QUIET = 0.3


@dataclass
class ExitRun:
    """One exit: runner status, commands received, the last one, exit time after the signal."""

    status: int
    received: int
    last: list
    last_is_safe: bool
    exit_s: float


#: s the listener's process gets to start, and to end once told to stop before it is killed
#: (Fast DDS can deadlock destroying a writer, with the GIL held: the test process then stopped
#: for good, past every Python timeout; in a process of its own only the listener does)
START_TIMEOUT = 60.0
TEARDOWN_TIMEOUT = 10.0
#: what the listener's process sends once it subscribes, and receives to stop
READY, STOP = 'ready', 'stop'


class CommandListener:
    """
    A reliable depth-100 subscriber of `/continuum_controller/commands`, in a process of its own.

    `env`: variables the listener's process sets before it makes its participant (the test
    process's announcement profile, test/conftest.py). The commands it receives arrive here
    during `spin`, in `commands`.
    """

    def __init__(self, safe, env=None):
        self.safe = np.asarray(safe, dtype=float)
        self.commands = []
        self.connection, child = multiprocessing.Pipe()
        self.process = multiprocessing.get_context('spawn').Process(
            target=listen, args=(child, dict(env or {})), daemon=True)
        self.process.start()
        child.close()
        if not self.connection.poll(START_TIMEOUT) or self.connection.recv() != READY:
            self.process.kill()
            raise AssertionError(f'the listener process did not subscribe within '
                                 f'{START_TIMEOUT:g} s')

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        with contextlib.suppress(OSError):
            self.connection.send(STOP)
        self.process.join(TEARDOWN_TIMEOUT)
        if self.process.is_alive():
            print(f'exit_probe: the listener\'s DDS teardown did not end within '
                  f'{TEARDOWN_TIMEOUT:g} s (a Fast DDS deadlock); killed', file=sys.stderr)
            self.process.kill()
            self.process.join()
        self.connection.close()

    def spin(self, seconds):
        """Take the commands the listener received, for `seconds`."""
        end = time.monotonic() + seconds
        while self.connection.poll(max(end - time.monotonic(), 0.0)):
            try:
                self.commands.append(np.array(self.connection.recv()))
            except EOFError:
                raise AssertionError('the listener process ended') from None
            if time.monotonic() >= end:
                break

    def controlling(self):
        """Return how many received commands differ from the safe command."""
        return sum(1 for c in self.commands if not np.array_equal(c, self.safe))


def listen(connection, env):
    """The listener's process: send each command received down `connection` until STOP."""
    os.environ.update(env)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node('exit_probe_listener', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    node.create_subscription(Float64MultiArray, f'/{CONTROLLER}/commands',
                             lambda msg: connection.send(msg.data.tolist()), LISTENER_QOS)
    connection.send(READY)
    while not connection.poll():
        executor.spin_once(timeout_sec=0.01)
    # the executor holds the node's entities: let it go first, or destroying them can wait on
    # it for good
    executor.remove_node(node)
    executor.shutdown(timeout_sec=1.0)
    node.destroy_node()
    rclpy.shutdown(context=context)


def exit_once(listener, command, sig, log_path, group=False, before_signal=None,
              start_timeout=120.0, exit_timeout=30.0):
    """
    Start `command` (a launch runner), wait until it controls, send `sig`, return an ExitRun.

    `group`: send `sig` to the runner's process group (as a terminal's Ctrl-C does), not to
    the runner alone; `before_signal(process)`: called once the nodes control, before the
    signal. Raises AssertionError with the log's tail when the nodes do not start controlling
    within `start_timeout` s, or the runner does not exit within `exit_timeout` s of the
    signal, and when commands still arrive `exit_timeout` s after it exited.
    """
    listener.commands = []
    with open(log_path, 'w') as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=group)
    try:
        end = time.monotonic() + start_timeout
        while listener.controlling() < CONTROLLING:
            if time.monotonic() > end or process.poll() is not None:
                raise AssertionError(f'nodes did not start controlling (status '
                                     f'{process.poll()}):\n{Path(log_path).read_text()[-3000:]}')
            listener.spin(0.05)
        if before_signal is not None:
            before_signal(process)
        if not group:
            process.send_signal(sig)
        elif process.poll() is None:
            os.killpg(process.pid, sig)
        sent = time.monotonic()
        while process.poll() is None:
            if time.monotonic() - sent > exit_timeout:
                raise AssertionError(f'no exit within {exit_timeout} s of {sig!r}:\n'
                                     f'{Path(log_path).read_text()[-3000:]}')
            listener.spin(0.01)
        exited = time.monotonic()
        exit_s = exited - sent
        count, quiet = len(listener.commands), exited + QUIET
        while time.monotonic() < quiet:
            if time.monotonic() - exited > exit_timeout:
                raise AssertionError(f'commands still arrive {exit_timeout} s after the runner '
                                     f'exited: a node outlived it')
            listener.spin(0.02)
            if len(listener.commands) != count:
                count, quiet = len(listener.commands), time.monotonic() + QUIET
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    last = listener.commands[-1]
    return ExitRun(process.returncode, len(listener.commands), last.tolist(),
                   bool(np.array_equal(last, listener.safe)), exit_s)


def launch_command(params, launch='simulation'):
    """Return the command line of `continuum-ctrl launch LAUNCH --params-file PARAMS`."""
    return [find_executable('continuum-ctrl'), 'launch', launch, '--params-file', str(params)]


def main():
    """Repeat exits; print each run and the count whose last command was not the safe one."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--signal', default='INT', choices=['INT', 'TERM'])
    parser.add_argument('--params', default='planar_2r.yaml', help='parameter file')
    parser.add_argument('--safe', type=float, nargs='+', required=True,
                        help='the safe command, joints order')
    parser.add_argument('--logs', default='.', help='directory for the runner log of each run')
    args = parser.parse_args()
    sig = getattr(signal, f'SIG{args.signal}')
    bad = 0
    with CommandListener(args.safe) as listener:
        for k in range(args.runs):
            run = exit_once(listener, launch_command(args.params), sig,
                            Path(args.logs) / f'exit_{args.signal}_{k}.log')
            bad += not run.last_is_safe
            print(f'run {k}: status {run.status}, {run.received} commands, exit '
                  f'{run.exit_s:.2f} s, last {"safe" if run.last_is_safe else run.last}',
                  flush=True)
    print(f'SIG{args.signal}: {bad} of {args.runs} runs ended on a command other than the safe '
          f'one')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
