"""
Command rate under a flood of oversized joint_states: this controller against another's.

Continuum arm at 500 Hz with the simulator, both under normal scheduling (``--priority P``:
both loop threads under SCHED_FIFO at P, as the shipped continuum config has it). For each
node: the command rate (median of 1 s /diagnostics windows) without a flood, then while
another process floods `joint_states` with 100,000-name messages (3.2 MB, pre-serialized) at
10 per second, then as fast as it can publish them, then the same with 20,000-point
`~/joint_trajectory` messages (reliable); and the node's resident memory growth. Run:
`./run bench bench/bench_flood.py [--priority P] [CHECKOUT]` (about 3 min per node; with
CHECKOUT, a source tree such as an older main, its controller is measured in the same run).
Prints the rates and the ratio flood / none.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_node import Baseline, column, params
from continuum_ctrl.params.launch_description import config_path, simulation
from continuum_ctrl.models import load_model
from continuum_ctrl.apps.launch import start, stop
from continuum_ctrl.ros.recorder import Recorder

PHASE = 6.0
NAMES = 100000
POINTS = 20000
#: the flooding process: pre-serialized 100k-name JointStates or 20k-point trajectories of the
#: joints NAMES at RATE (0: at once)
FLOODER = '''
import os, sys, time
import rclpy
from rclpy.qos import qos_profile_sensor_data, QoSProfile
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
rate, seconds, n, names = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rclpy.init()
node = rclpy.create_node('flooder')
if names:
    names = names.split(',')
    point = JointTrajectoryPoint(positions=[0.0] * len(names), velocities=[0.0] * len(names))
    point.time_from_start.sec = 1
    msg = JointTrajectory(joint_names=names, points=[point] * n)
    pub = node.create_publisher(JointTrajectory, '/continuum_controller/joint_trajectory',
                                QoSProfile(depth=10))
else:
    msg = JointState(name=[f'joint_{k}' for k in range(n)], position=[0.0] * n,
                     velocity=[0.0] * n)
    pub = node.create_publisher(JointState, 'joint_states', qos_profile_sensor_data)
data = serialize_message(msg)
time.sleep(1.0)
end, sent = time.monotonic() + seconds, 0
while time.monotonic() < end:
    pub.publish(data)
    sent += 1
    if rate:
        time.sleep(1.0 / rate)
print(sent / seconds, flush=True)
os._exit(0)
'''


def rss_mb(pid):
    """Return the resident memory of a process, MB."""
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024.0
    return float('nan')


def phase(rec, seconds, flood_rate=None, names=()):
    """
    Run `seconds` (flooding at `flood_rate`/s, 0: at once); return (rate Hz, floods/s).

    `names`: the joints of trajectories to flood with (none: joint_states).
    """
    count = len(rec.diagnostics)
    flooder = None
    if flood_rate is not None:
        flooder = subprocess.Popen([sys.executable, '-c', FLOODER, str(flood_rate),
                                    str(seconds), str(POINTS if names else NAMES),
                                    ','.join(names)], stdout=subprocess.PIPE, text=True)
    rec.run(seconds + (1.0 if flooder else 0.0))
    sent = float(flooder.communicate(timeout=60)[0] or 'nan') if flooder else 0.0
    windows = rec.diagnostics[count + 1:]
    return float(np.median(column(windows, 'rate_hz'))), sent


def measure(path, baseline):
    """Return {phase: (command rate, floods/s)} and the memory growth of one node kind."""
    nodes = simulation(path)
    if baseline:
        nodes[0] = Baseline(nodes[0], baseline)
    with open(os.devnull, 'w') as sink:
        processes = start(nodes, outputs=[sink, sink])
        try:
            with Recorder(record=False) as rec:
                if not rec.wait(lambda: any(d.get('status') == 'active'
                                            for d in rec.diagnostics), 90.0, processes):
                    return None
                rec.run(2.0)
                memory = rss_mb(processes[0].pid)
                out = {'none': phase(rec, PHASE)}
                out['10/s'] = phase(rec, PHASE, 10.0)
                out['at once'] = phase(rec, PHASE, 0.0)
                names = load_model(config_path('continuum_3section.yaml')).joint_names
                out['trajectories 10/s'] = phase(rec, PHASE, 10.0, names)
                out['trajectories at once'] = phase(rec, PHASE, 0.0, names)
                out['memory MB'] = (rss_mb(processes[0].pid) - memory, 0.0)
                rejected = rec.diagnostics[-1]
                out['rejected'] = (sum(float(v) for k, v in rejected.items()
                                       if k.startswith('rejected_')), 0.0)
                return out
        finally:
            stop(processes)


def main():
    """Measure both node kinds; print rates and ratios."""
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    with tempfile.TemporaryDirectory() as directory:
        args = sys.argv[1:]
        priority = 0
        if '--priority' in args:
            at = args.index('--priority')
            priority = int(args[at + 1])
            del args[at:at + 2]
        path = params(directory, 500.0, priority)
        checkouts = {'controller': None}
        if args:
            checkouts['baseline'] = args[0]
        results = {kind: measure(path, checkout) for kind, checkout in checkouts.items()}
    for kind, out in results.items():
        if out is None:
            print(f'{kind}: did not start')
            continue
        base = out['none'][0]
        floods = ('10/s', 'at once', 'trajectories 10/s', 'trajectories at once')
        print(f'{kind}: command rate {base:.0f} Hz without a flood; '
              + '; '.join(f'flood {name} ({out[name][1]:.0f} msgs/s): {out[name][0]:.0f} Hz '
                          f'({out[name][0] / base:.0%})' for name in floods)
              + f'; memory {out["memory MB"][0]:+.1f} MB; rejected {out["rejected"][0]:.0f}')
    time.sleep(0.1)


if __name__ == '__main__':
    main()
