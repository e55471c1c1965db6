"""
`continuum-ctrl launch {controller|simulation} [--params-file F ...] [--use-sim-time] [...]`.

Runs the node list of continuum_ctrl.params.launch_description as child processes, with the same
command lines `ros2 launch` would run, for machines without `ros2 launch`. Several parameter
files merge in order, later keys winning (an overlay last). The files are checked first, as
the nodes would read them: a bad one is one error line (exit status 2) and no node starts.
SIGINT and SIGTERM are forwarded to the nodes as SIGINT (the controller then publishes its safe
command, waits until its subscribers have it and exits); a node that does not stop within
`STOP_TIMEOUT` is killed, and named on stderr. Exits with 0, or the status of the first node that
failed. A runner that is itself killed (SIGKILL) takes its nodes with it: on Linux each node
gets SIGINT when the runner dies, as from a Ctrl-C, and so still sends its safe command.
"""

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time

from continuum_ctrl.params.launch_description import DEFAULT_PARAMS, DESCRIPTIONS
from continuum_ctrl.apps.node_pair import check_parameter_file

#: seconds a node gets to exit after SIGINT before it is killed
STOP_TIMEOUT = 5.0
#: prctl(2) option: the signal a process gets when the thread that started it ends (Linux)
PR_SET_PDEATHSIG = 1


def _with_runner():
    """
    Return a `preexec_fn` giving the child SIGINT when this process dies, or None off Linux.

    prctl is looked up here, before the fork: the child only calls it, then checks that its
    parent did not die before the call.
    """
    if not sys.platform.startswith('linux'):
        return None
    prctl, runner = ctypes.CDLL(None, use_errno=True).prctl, os.getpid()

    def preexec():
        prctl(PR_SET_PDEATHSIG, signal.SIGINT)
        if os.getppid() != runner:
            os.kill(os.getpid(), signal.SIGINT)
    return preexec


def start(nodes, env=None, outputs=None):
    """
    Start every node's command line; return the Popen objects (same order).

    `outputs`: one open file per node for its stdout and stderr (default: inherited).
    """
    outputs, preexec = outputs or [None] * len(nodes), _with_runner()
    return [subprocess.Popen(node.command(), env=env, stdout=out, stderr=out,
                             preexec_fn=preexec)
            for node, out in zip(nodes, outputs)]


def stop(processes, timeout=STOP_TIMEOUT):
    """
    Send SIGINT to every running process at once, wait up to `timeout` s, then kill the rest.

    All get the signal before any is waited for, as `ros2 launch` does, so no node's exit
    waits for another's. A killed node is named in one line on stderr (it may have had no
    time to publish its last message).
    """
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
    deadline = time.monotonic() + timeout
    for process in processes:
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            print(f'continuum-ctrl launch: {os.path.basename(str(process.args[0]))} (pid '
                  f'{process.pid}) did not exit within {timeout:g} s of SIGINT: killed',
                  file=sys.stderr, flush=True)


def main(argv=None):
    """Run a launch description's nodes until they exit or SIGINT/SIGTERM; return a status."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl launch', description=__doc__.split(
        '\n\n')[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('launch', choices=sorted(DESCRIPTIONS))
    parser.add_argument('--params-file', nargs='+', default=[DEFAULT_PARAMS],
                        help='parameter file(s), merged in order (names in config/ or paths)')
    parser.add_argument('--use-sim-time', action='store_true', help='use /clock')
    parser.add_argument('--commands-topic', help="controller only: remap '~/commands' to "
                                                 'this topic')
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.commands_topic and args.launch != 'controller':
        parser.error('--commands-topic applies to the controller launch only')
    options = {'remappings': [('~/commands', args.commands_topic)]} if args.commands_topic \
        else {}
    nodes = DESCRIPTIONS[args.launch](args.params_file, args.use_sim_time, **options)
    check_parameter_file(list(nodes[0].parameters), [node.name for node in nodes])
    for node in nodes:
        print(' '.join(node.command()), flush=True)
    received = []

    def forward(number, frame):
        received.append(number)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    processes = start(nodes, env=dict(os.environ))
    status = 0
    try:
        while not received:
            codes = [p.poll() for p in processes]
            failed = [c for c in codes if c not in (None, 0)]
            if failed or all(c is not None for c in codes):
                status = failed[0] if failed else 0
                break
            time.sleep(0.1)
    finally:
        stop(processes)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return status
