"""
Two hosts on one machine: network namespaces and a link between them, for the node tests.

    with Link() as link:                     # namespaces, bridge, links (root only)
        with pair(tmp_path, params, link) as run:
            link.cut()                       # nothing passes either way; link.restore()
            run.finish()                     # run.near, run.far: what each side recorded

The controller runs in the namespace `link.near`, the simulator in `link.far` (`ip netns
exec`), each behind a veth pair to a bridge in `link.wire`. DDS discovers over the link
(SUBNET range, multicast), and the nodes' Fast DDS has UDPv4 as its only transport: its
shared memory would otherwise carry the data between two processes of one machine past the
link. A listener process on each side (test/support/rig_listener.py) records what that side sees.
"""

import contextlib
import os
import pickle
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

from continuum_ctrl.params.launch_description import CONTROLLER, SIMULATOR, simulation
from continuum_ctrl.apps.launch import start, stop
from conftest import participant_env
from support.ros_nodes import START_TIMEOUT

#: the listener script, run once per side
LISTENER = Path(__file__).with_name('rig_listener.py')
#: seconds a listener gets to write its records after SIGINT
LISTENER_STOP = 20.0
#: the listeners announce themselves for 5 s, as the test process's participants do (conftest)
PROFILE_ENV = participant_env()
#: the link's /30; 10.213/16 is unlikely to be a lab's or CI's own network
SUBNET = '10.213.{}.{}'
#: what every process on the rig has in its environment: discovery over the link, UDP only
RIG_ENV = {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET', 'FASTDDS_BUILTIN_TRANSPORTS': 'UDPv4'}


def ip(*args, check=True):
    """Run `ip ARGS...`; return the completed process (stderr in it)."""
    return subprocess.run(['ip', *args], capture_output=True, text=True, check=check)


class Unavailable(RuntimeError):
    """The rig cannot be made here: no privilege, no iproute2, no bridge or veth support."""


#: SCHED_FIFO priority of the rig's `bridge`: above the nodes' 50 and the listeners' 40
BRIDGE_PRIORITY = 60


def realtime(priority):
    """Return the command prefix that runs a command at SCHED_FIFO `priority`, or none here."""
    prefix = ['chrt', '-f', str(priority)]
    if shutil.which('chrt') and subprocess.run([*prefix, 'true'],
                                               capture_output=True).returncode == 0:
        return prefix
    return []


class Link:
    """
    Namespaces `near` and `far`, each with one end of a veth pair whose other end is a port
    of a bridge in a third namespace, `wire`; all removed on exit.

    A fault disables the near port of the bridge (`cut`): frames are dropped both ways while
    both hosts' interfaces stay up with their carrier, addresses and routes, as when a cable
    between two switches is pulled. Taking a host's own interface down instead also takes its
    routes: the nodes' sends then fail on that host rather than vanish on the wire, and
    after the return this kernel held one side's traffic for up to a second.
    """

    def __init__(self):
        tag = os.getpid() % 100000
        self.near, self.far, self.wire = (f'ccrig_{side}_{tag}'
                                          for side in ('near', 'far', 'wire'))
        self.ends = {self.near: f'ccn{tag}', self.far: f'ccf{tag}'}
        self.ports = {self.near: f'cwn{tag}', self.far: f'cwf{tag}'}
        octet = 64 + tag % 128
        self.address = {self.near: SUBNET.format(octet, 1), self.far: SUBNET.format(octet, 2)}

    def __enter__(self):
        """Make the namespaces, the bridge and the links; raise Unavailable where not here."""
        if shutil.which('ip') is None or shutil.which('bridge') is None:
            raise Unavailable('no `ip` or `bridge` command (iproute2)')
        try:
            for ns in (self.near, self.far, self.wire):
                ip('netns', 'add', ns)
            ip('-n', self.wire, 'link', 'add', 'name', 'wire', 'type', 'bridge',
               'mcast_snooping', '0')
            ip('-n', self.wire, 'link', 'set', 'wire', 'up')
            for ns, end in self.ends.items():
                port = self.ports[ns]
                ip('-n', self.wire, 'link', 'add', 'name', port, 'type', 'veth', 'peer', 'name',
                   end, 'netns', ns)
                ip('-n', self.wire, 'link', 'set', port, 'master', 'wire', 'up')
                ip('-n', ns, 'addr', 'add', f'{self.address[ns]}/30', 'dev', end)
                ip('-n', ns, 'link', 'set', 'lo', 'up')
                ip('-n', ns, 'link', 'set', end, 'up')
            self.multicast(True)            # DDS discovery
            # one `bridge` kept running: a fault then starts within microseconds, where
            # starting a process took up to 60 ms on a loaded machine; at a real-time
            # priority above the nodes', which otherwise held it up to 0.7 s on a loaded CI
            # machine (it blocks on its input between faults)
            self._bridge = subprocess.Popen([*realtime(BRIDGE_PRIORITY), 'bridge', '-n',
                                             self.wire, '-batch', '-'],
                                            stdin=subprocess.PIPE, text=True)
        except subprocess.CalledProcessError as exc:
            self.__exit__()
            raise Unavailable(f'{" ".join(exc.cmd)}: {exc.stderr.strip()}') from None
        return self

    def __exit__(self, *exc):
        """Stop `bridge`; delete the namespaces (their links go with them)."""
        if getattr(self, '_bridge', None) is not None:
            self._bridge.stdin.close()
            self._bridge.wait()
        for ns in (self.near, self.far, self.wire):
            ip('netns', 'delete', ns, check=False)

    def multicast(self, on):
        """Give both hosts a multicast route on the link (`on`), or take it away."""
        for ns, end in self.ends.items():
            ip('-n', ns, 'route', 'replace' if on else 'delete', '224.0.0.0/4', 'dev', end)

    def _port_state(self, state):
        """Set the near port's state through the running `bridge -batch` (no process start)."""
        self._bridge.stdin.write(f'link set dev {self.ports[self.near]} state {state}\n')
        self._bridge.stdin.flush()

    def cut(self):
        """Drop every frame both ways; return the time just before (time.time())."""
        before = time.time()
        self._port_state(0)         # disabled
        return before

    def restore(self):
        """Pass frames again; return the time after (time.time())."""
        self._port_state(3)         # forwarding
        return time.time()

    def command(self, ns, line):
        """Return `line` run in namespace `ns`."""
        return ['ip', 'netns', 'exec', ns, *line]


class Run:
    """
    The nodes and listeners of one run on the rig.

    `controller`, `simulator`: their Popen; `near`, `far`: the listeners' records once
    `finish` was called (see test/support/rig_listener.py); `logs`: node name -> log path.
    """

    def __init__(self, link, processes, listeners, outputs, logs):
        self.link, self.logs = link, logs
        self.controller, self.simulator = processes
        self.processes, self.listeners, self.outputs = processes, listeners, outputs
        self.near = self.far = None

    def wait_for(self, word, timeout=START_TIMEOUT):
        """Wait until the near listener prints `word`; return whether it did in `timeout` s."""
        listener = self.listeners[0]
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any(p.poll() is not None for p in self.processes + self.listeners):
                return False
            ready, _, _ = select.select([listener.stdout], [], [], 0.1)
            if ready and listener.stdout.readline().strip() == word:
                return True
        return False

    def finish(self):
        """Stop the listeners; load what they kept into `near` and `far`."""
        stop(self.listeners, LISTENER_STOP)
        self.near, self.far = (pickle.loads(Path(out).read_bytes()) for out in self.outputs)
        return self

    def tails(self):
        """Return the last lines of the nodes' logs."""
        return '\n'.join(Path(log).read_text()[-3000:] for log in self.logs.values())


@contextlib.contextmanager
def pair(tmp_path, params, link, env=None):
    """
    Run the controller in `link.near` and the simulator in `link.far` from `params`.

    Yields a Run once the controller is active across the link, with a listener on each
    side; fails with the nodes' logs when it does not become so. On exit the link is
    restored and every process stopped (SIGINT), whatever happened. `env`: variables for
    every process on the rig, over RIG_ENV.
    """
    tmp_path = Path(tmp_path)
    nodes = simulation(params)
    homes = {CONTROLLER: link.near, SIMULATOR: link.far}
    logs = {node.name: tmp_path / f'{node.name}.log' for node in nodes}
    env = {**os.environ, **RIG_ENV, **(env or {})}
    processes, listeners, outputs, files = [], [], [], []
    try:
        files = [open(logs[node.name], 'w') for node in nodes]
        processes = start([InNamespace(node, homes[node.name], link) for node in nodes],
                          env=env, outputs=files)
        for ns, side in ((link.near, 'near'), (link.far, 'far')):
            outputs.append(tmp_path / f'{side}.pickle')
            listeners.append(subprocess.Popen(
                link.command(ns, [sys.executable, str(LISTENER), side, str(outputs[-1])]),
                env={**env, **PROFILE_ENV}, stdout=subprocess.PIPE, text=True))
        run = Run(link, processes, listeners, outputs, logs)
        if not run.wait_for('active'):
            raise AssertionError(f'nodes did not start across the link\n{run.tails()}')
        try:
            yield run
        except Exception:
            print(f'the nodes\' logs, last lines:\n{run.tails()}')
            raise
    finally:
        link.restore()
        stop(listeners + processes)
        for file in files:
            file.close()


class InNamespace:
    """A node description whose command line runs in a network namespace."""

    def __init__(self, node, ns, link):
        self.node, self.ns, self.link = node, ns, link
        self.name = node.name

    def command(self):
        """Return the node's command line inside `ns`."""
        return self.link.command(self.ns, self.node.command())
