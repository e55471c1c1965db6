"""
Two hosts on one machine: two network namespaces joined by a veth pair, for the node tests.

    with Link() as link:                     # namespaces, veth pair, addresses (root only)
        with pair(tmp_path, params, link) as (rec, far, processes):
            link.cut()                       # 100 % loss both ways; link.restore()
            link.netem('duplicate 50% reorder 25% delay 2ms')

The controller runs in the namespace `link.near`, the simulator in `link.far` (`ip netns
exec`). DDS discovers over the veth (SUBNET range, multicast on the link), and the nodes'
Fast DDS has UDPv4 as its only transport: its shared memory would otherwise carry the data
between two processes of one machine past the link. `rec` is a Recorder made in the near
namespace (it hears the controller's topics, and the simulator's across the link); `far`
listens in the far namespace, beside the simulator. Link faults are `tc netem` on both
ends, not `ip link set down`: a downed veth also takes its address's local route, and so
the near side's own traffic (controller to recorder), which a cable fault leaves alone.
"""

import contextlib
import json
import os
import pickle
import select
import subprocess
import sys
import time
from pathlib import Path

from continuum_ctrl.launch_description import CONTROLLER, SIMULATOR, simulation
from continuum_ctrl.launch_runner import start, stop
from conftest import PARTICIPANT_PROFILE, profiles_variable
from ros_nodes import START_TIMEOUT

#: the listener script, run once per side
LISTENER = Path(__file__).with_name('rig_listener.py')
#: seconds a listener gets to write its records after SIGINT
LISTENER_STOP = 20.0
#: the listeners announce themselves for 5 s, as the test process's participants do (conftest)
PROFILE_ENV = {profiles_variable(): str(PARTICIPANT_PROFILE)}
#: the link's /30; 10.213/16 is unlikely to be a lab's or CI's own network
SUBNET = '10.213.{}.{}'
#: what every process on the rig has in its environment: discovery over the link, UDP only
RIG_ENV = {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET', 'FASTDDS_BUILTIN_TRANSPORTS': 'UDPv4'}


def ip(*args, check=True):
    """Run `ip ARGS...`; return the completed process (stderr in it)."""
    return subprocess.run(['ip', *args], capture_output=True, text=True, check=check)


def namespaces_unavailable():
    """Return why network namespaces cannot be made here (None: they can)."""
    name = f'ccrig_probe_{os.getpid()}'
    try:
        made = ip('netns', 'add', name, check=False)
    except FileNotFoundError:
        return 'no `ip` command (iproute2) on this machine'
    if made.returncode != 0:
        return f'cannot make a network namespace: {made.stderr.strip()}'
    ip('netns', 'delete', name, check=False)
    if subprocess.run(['tc', '-V'], capture_output=True).returncode != 0:
        return 'no `tc` command (iproute2) for the link faults'
    return None


class Link:
    """Two namespaces `near` and `far`, a veth pair between them, removed on exit."""

    def __init__(self):
        tag = os.getpid() % 100000
        self.near, self.far = f'ccrig_near_{tag}', f'ccrig_far_{tag}'
        self.ends = {self.near: f'ccn{tag}', self.far: f'ccf{tag}'}
        octet = 64 + tag % 128
        self.address = {self.near: SUBNET.format(octet, 1), self.far: SUBNET.format(octet, 2)}

    def __enter__(self):
        """Make both namespaces and the link, up, with addresses and a multicast route."""
        try:
            for ns in (self.near, self.far):
                ip('netns', 'add', ns)
            ip('link', 'add', self.ends[self.near], 'type', 'veth', 'peer', 'name',
               self.ends[self.far])
            for ns, end in self.ends.items():
                ip('link', 'set', end, 'netns', ns)
                ip('-n', ns, 'addr', 'add', f'{self.address[ns]}/30', 'dev', end)
                ip('-n', ns, 'link', 'set', 'lo', 'up')
                ip('-n', ns, 'link', 'set', end, 'up')
                ip('-n', ns, 'route', 'add', '224.0.0.0/4', 'dev', end)   # DDS discovery
            for ns, peer in ((self.near, self.far), (self.far, self.near)):
                mac = json.loads(ip('-n', peer, '-j', 'link', 'show', self.ends[peer]).stdout)
                ip('-n', ns, 'neigh', 'replace', self.address[peer], 'lladdr',
                   mac[0]['address'], 'dev', self.ends[ns], 'nud', 'permanent')
        except subprocess.CalledProcessError as exc:
            self.__exit__()
            raise RuntimeError(f'{" ".join(exc.cmd)}: {exc.stderr.strip()}') from None
        return self

    def __exit__(self, *exc):
        """Delete both namespaces (the veth pair goes with them)."""
        for ns in (self.near, self.far):
            ip('netns', 'delete', ns, check=False)

    def cut(self):
        """
        Take the near end down, as a pulled cable; return the time just before (time.time()).

        The far end then has no carrier: nothing passes either way. One end only, so that
        the fault begins and ends with one command each.
        """
        before = time.time()
        ip('-n', self.near, 'link', 'set', self.ends[self.near], 'down')
        return before

    def restore(self):
        """Bring the near end up again; return the time once it is (time.time())."""
        ip('-n', self.near, 'link', 'set', self.ends[self.near], 'up')
        up = time.time()
        # a downed link loses its routes: discovery's multicast one comes back by hand
        ip('-n', self.near, 'route', 'replace', '224.0.0.0/4', 'dev', self.ends[self.near])
        return up

    def command(self, ns, line):
        """Return `line` run in namespace `ns`."""
        return ['ip', 'netns', 'exec', ns, *line]


class Run:
    """
    The nodes and listeners of one run on the rig.

    `controller`, `simulator`: their Popen; `near`, `far`: the listeners' records once
    `finish` was called (see test/rig_listener.py); `logs`: node name -> log path.
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
def pair(tmp_path, params, link):
    """
    Run the controller in `link.near` and the simulator in `link.far` from `params`.

    Yields a Run once the controller is active across the link, with a listener on each
    side; fails with the nodes' logs when it does not become so. On exit the link is
    restored and every process stopped (SIGINT), whatever happened.
    """
    tmp_path = Path(tmp_path)
    nodes = simulation(params)
    homes = {CONTROLLER: link.near, SIMULATOR: link.far}
    logs = {node.name: tmp_path / f'{node.name}.log' for node in nodes}
    env = {**os.environ, **RIG_ENV}
    listeners, outputs, files = [], [], []
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
