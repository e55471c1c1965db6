"""
Exit probe: run the nodes, signal them, and see which command an outside subscriber got last.

    with CommandListener(safe) as listener:
        run = exit_once(listener, ['continuum-ctrl', 'launch', 'simulation', ...],
                        signal.SIGINT, log_path)
        run.last_is_safe, run.status, run.exit_s

The listener is a reliable subscriber of depth 100 on the controller's `~/commands` in a
process of its own (this one), as a user's logger or a hardware bridge would be. Run as a
script, it repeats exits and prints the count of runs whose last command was not the safe one:

    python test/support/exit_probe.py --runs 20 --signal INT --params planar_2r.yaml
"""

import argparse
import os
import signal
import subprocess
import sys
import threading
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


#: s a listener's teardown gets before it is left behind (`CommandListener.__exit__`)
TEARDOWN_TIMEOUT = 10.0


class CommandListener:
    """A reliable depth-100 subscriber of `/continuum_controller/commands`, own context."""

    def __init__(self, safe):
        self.safe = np.asarray(safe, dtype=float)
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = Node('exit_probe_listener', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.commands = []
        self.node.create_subscription(Float64MultiArray, f'/{CONTROLLER}/commands',
                                      lambda msg: self.commands.append(np.array(msg.data)),
                                      LISTENER_QOS)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # Fast DDS can deadlock destroying a writer (CI: the test process stopped for good in
        # destroy_publisher, ResourceEvent::unregister_timer waiting on its event thread, twice
        # in this suite): tear down aside, and leave a listener that hangs behind
        teardown = threading.Thread(target=self._teardown, daemon=True)
        teardown.start()
        teardown.join(TEARDOWN_TIMEOUT)
        if teardown.is_alive():
            print(f'exit_probe: the listener\'s DDS teardown did not end within '
                  f'{TEARDOWN_TIMEOUT:g} s (a Fast DDS deadlock); left behind', file=sys.stderr)

    def _teardown(self):
        # the executor holds the node's entities: let it go first, or destroying them can
        # wait on it for good
        self.executor.remove_node(self.node)
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)

    def spin(self, seconds):
        """Take messages for `seconds`."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)

    def controlling(self):
        """Return how many received commands differ from the safe command."""
        return sum(1 for c in self.commands if not np.array_equal(c, self.safe))


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
