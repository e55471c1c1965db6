"""
The controller node at 500 Hz and 1 kHz against the simulator: timing figures per executor.

Three-section continuum arm (CoG model in the controller, integral model as plant), both nodes
as processes over DDS (launch description command lines). For each rate and executor
(EventsExecutor, SingleThreadedExecutor) it measures over `SECONDS` after start-up, from the
controller's /diagnostics and /proc:
- achieved rate (median of 1 s windows), ticks on time (period < 1.5 x nominal);
- period p50 / p99 / max and compute p99 (median of 1 s windows; max: worst window);
- CPU share of the controller and simulator processes (one core = 1.0; the floor's own too);
- latency joint_states -> command: transport (stamp to receipt) + wait for the tick
  (input age at every tick) + compute, medians, with the first two apart; the p99 sum is
  printed too. With states at 500 Hz and ticks at 1 kHz every other tick reuses a state, so
  the input age's median lies half a period above the wait of a new state for its first tick
  (`state_wait`), which the latency from the send (below) uses instead.
  The stamp is the simulator's plant time, when the state held (its timer's due time), as a
  driver stamps the moment it read the sensors; the plant step and the wake-up lie between
  it and the send. That part (stamp to the DDS send time, heard for 1 s after the window) is
  printed, and the latency without it: from the state's send to the command, the part the
  controller and DDS own.
~/state is published every STATE_DECIMATION ticks. First it measures the cost of one tick
in-process (no other node, no executor). Then, at 1 kHz with the EventsExecutor, both loop
threads under SCHED_FIFO (`realtime_priority`), and the same-run baseline: `floor_node.py`, a
node that only publishes at 1 kHz against the same simulator, with and without SCHED_FIFO
(what rclpy and this machine allow any Python loop). Run: `./run bench bench/bench_node.py`
(about 2 min). Prints medians, the ratio EventsExecutor / SingleThreadedExecutor and the ratio
controller / floor. `--task [ROUNDS]` instead compares the controller in task space (the tip
circle of continuum_task.yaml) with joint space at 500 Hz, side by side in one run (about 5
min for two rounds).
"""

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from continuum_ctrl.params import read_yaml
from continuum_ctrl.params.launch_description import config_path, simulation
from continuum_ctrl.apps.launch import start, stop
from continuum_ctrl.ros.recorder import Recorder

SECONDS = 10.0
WARMUP = 3.0
RATES = (500.0, 1000.0)
EXECUTORS = ('events', 'single')
#: SCHED_FIFO priority of the loop thread in the real-time cases (ros2_control's default)
PRIORITY = 50
#: (node, rate, executor, priority[, publish, loop]): node 'controller' or 'floor'
#: (floor_node.py, whose publish is 'message' or 'bytes' and loop 'timer' or 'thread')
CASES = [('controller', r, e, 0) for r in RATES for e in EXECUTORS] + [
    ('controller', 1000.0, 'events', PRIORITY), ('floor', 1000.0, 'events', 0),
    ('floor', 1000.0, 'events', PRIORITY)] + [
    ('floor', 1000.0, 'events', p, publish, loop) for p in (0, PRIORITY)
    for publish, loop in (('bytes', 'timer'), ('message', 'thread'), ('bytes', 'thread'))]
FLOOR = Path(__file__).resolve().parent / 'floor_node.py'
#: ``--baseline CHECKOUT``: the controller of this tree against the one of another checkout
#: (for example /work/main) and the floor, at 1 kHz, SCHED_FIFO and normal
BASELINE_CASES = [(node, 1000.0, 'events', p) for p in (PRIORITY, 0)
                  for node in ('controller', 'baseline', 'floor')]
#: longest wait for a new node to hear the simulator, s
DISCOVERY = 10.0
#: ~/state is published every this many ticks (100 or 200 Hz), as a monitoring rate
STATE_DECIMATION = 5


def cpu_seconds(pid):
    """Return user + system CPU seconds of a process."""
    fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def params(directory, rate, priority=0, task=False):
    """
    Write the continuum parameters, controller at `rate` Hz; return the path.

    `priority`: the `realtime_priority` of both nodes' loop threads (0: normal scheduling).
    `task`: the controller in task space, its `task` and `reference` (the tip circle) from
    continuum_task.yaml, all else (valve compensation included) as in joint space.
    """
    data = read_yaml(config_path('continuum_3section.yaml'))
    data['/**']['ros__parameters']['realtime_priority'] = priority
    section = data['continuum_controller']['ros__parameters']
    if task:
        tip = read_yaml(config_path('continuum_task.yaml'))['continuum_controller']
        section['task'] = tip['ros__parameters']['task']
        section['reference'] = tip['ros__parameters']['reference']
    section['rate_hz'] = rate
    section['state_timeout'] = 1.0
    section['state_decimation'] = STATE_DECIMATION
    path = Path(directory) / f'bench_{int(rate)}_{priority}{"_task" if task else ""}.yaml'
    path.write_text(yaml.safe_dump(data))
    return path


def column(windows, key):
    """Return the float values of `key` over diagnostics windows."""
    return np.array([float(w[key]) for w in windows if key in w])


class Baseline:
    """The controller's node description, run from the source tree `checkout`."""

    def __init__(self, node, checkout):
        self.node = node
        self.name = node.name
        self.checkout = checkout

    def command(self):
        """Return the controller's command line, importing the package from `checkout`."""
        code = (f'import sys; sys.path.insert(0, {str(self.checkout)!r}); '
                'from continuum_ctrl.ros.controller_node import main; sys.exit(main())')
        return [sys.executable, '-c', code] + self.node.command()[1:]


def measure(path, executor, baseline=None):
    """
    Run both nodes with `executor`; return a dict of figures.

    `baseline`: None (this tree's controller) or the source tree of another checkout whose
    controller runs instead.
    """
    os.environ['CONTINUUM_CTRL_EXECUTOR'] = executor
    nodes = simulation(path)
    if baseline:
        nodes[0] = Baseline(nodes[0], baseline)
    with open(os.devnull, 'w') as sink:
        processes = start(nodes, outputs=[sink, sink])
        try:
            with Recorder(record=False) as rec:
                ok = rec.wait(lambda: any(d.get('status') == 'active'
                                          for d in rec.diagnostics), 90.0, processes)
                if not ok:
                    return None
                rec.run(WARMUP)
                first = dict(rec.diagnostics[-1])
                cpu0 = [cpu_seconds(p.pid) for p in processes]
                wall0 = time.monotonic()
                count = len(rec.diagnostics)
                rec.run(SECONDS)
                cpu = [(cpu_seconds(p.pid) - c) / (time.monotonic() - wall0)
                       for p, c in zip(processes, cpu0)]
                windows = rec.diagnostics[count:]
                last = dict(rec.diagnostics[-1])
                lag = stamp_lag_us()
        finally:
            stop(processes)
    ticks = float(last['run_ticks']) - float(first['run_ticks'])
    late = float(last['run_late_ticks']) - float(first['run_late_ticks'])
    median = {key: float(np.median(column(windows, key))) if column(windows, key).size
              else float('nan') for key in (
        'rate_hz', 'period_p50_us', 'period_p99_us', 'compute_p50_us', 'compute_p99_us',
        'input_age_p50_us', 'input_age_p99_us', 'state_wait_p50_us', 'state_wait_p99_us',
        'state_latency_p50_us', 'state_latency_p99_us')}
    return dict(median, period_max_us=float(np.max(column(windows, 'period_max_us'))),
                on_time=1.0 - late / max(ticks, 1.0), cpu_controller=cpu[0],
                cpu_simulator=cpu[1],
                latency_p50_us=median['state_latency_p50_us'] + median['input_age_p50_us']
                + median['compute_p50_us'],
                latency_p99_us=median['state_latency_p99_us'] + median['input_age_p99_us']
                + median['compute_p99_us'], stamp_lag_p50_us=lag,
                sent_latency_p50_us=median['state_latency_p50_us'] - lag
                + median['state_wait_p50_us'] + median['compute_p50_us'])


def stamp_lag_us(seconds=1.0):
    """
    Return the median time from the simulator's header stamp to its send, us, over `seconds`.

    The send time is the DDS `source_timestamp` (the publisher's clock, the same system clock
    as the stamp's here). Heard by a node of its own after the timed window, so its Python
    callbacks cost the measured nodes nothing; it waits up to `DISCOVERY` s to be matched.
    """
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import JointState
    lags = []

    def heard(msg, info):
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        lags.append((info['source_timestamp'] - stamp) * 1e-3)
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node('stamp_lag', context=context)
        node.create_subscription(JointState, 'joint_states', heard, qos_profile_sensor_data)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        end = time.monotonic() + DISCOVERY
        while not lags and time.monotonic() < end:      # the new node must be discovered
            executor.spin_once(timeout_sec=0.05)
        lags.clear()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        executor.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
    return float(np.median(lags)) if lags else float('nan')


ROWS = [('achieved rate [Hz]', 'rate_hz', '{:.1f}'), ('ticks on time', 'on_time', '{:.2%}'),
        ('period p50 [us]', 'period_p50_us', '{:.0f}'),
        ('period p99 [us]', 'period_p99_us', '{:.0f}'),
        ('period max [us]', 'period_max_us', '{:.0f}'),
        ('compute p50 [us]', 'compute_p50_us', '{:.0f}'),
        ('compute p99 [us]', 'compute_p99_us', '{:.0f}'),
        ('CPU controller', 'cpu_controller', '{:.2f}'),
        ('CPU simulator', 'cpu_simulator', '{:.2f}'),
        ('latency p50 [us]', 'latency_p50_us', '{:.0f}'),
        ('  transport p50 [us]', 'state_latency_p50_us', '{:.0f}'),
        ('    of which stamp to send p50 [us]', 'stamp_lag_p50_us', '{:.0f}'),
        ('  tick wait p50 [us]', 'input_age_p50_us', '{:.0f}'),
        ('new state wait p50 [us]', 'state_wait_p50_us', '{:.0f}'),
        ('latency from the send p50 [us]', 'sent_latency_p50_us', '{:.0f}'),
        ('latency p99 [us]', 'latency_p99_us', '{:.0f}')]


def measure_floor(path, rate, executor, priority, *variant):
    """Run `floor_node.py` in the controller's place against the simulator; return figures."""
    with open(os.devnull, 'w') as sink:
        processes = start(simulation(path)[1:], outputs=[sink])
        try:
            floor = subprocess.run([sys.executable, str(FLOOR), str(rate), str(SECONDS),
                                    str(priority), executor, *variant], capture_output=True,
                                   text=True, timeout=120)
        finally:
            stop(processes)
    lines = floor.stdout.strip().splitlines()
    return json.loads(lines[-1]) if floor.returncode == 0 and lines else None


@contextlib.contextmanager
def controller_in_process(path, *arguments):
    """
    Yield a ControllerNode built in this process and a valid JointState of its joints.

    The node reads `path` (plus the ``--ros-args`` `arguments`); its loop thread is stopped:
    stamp the message, pass it serialized to `_on_joint_states`, then call `runtime.tick`.
    """
    import rclpy
    from sensor_msgs.msg import JointState
    from continuum_ctrl.ros.controller_node import ControllerNode
    from continuum_ctrl.ros.plumbing import settle_heap
    context = rclpy.Context()
    rclpy.init(args=['bench', '--ros-args', '--params-file', str(path), *arguments],
               context=context)
    node = ControllerNode(context=context)
    node.runner.thread.stop()
    settle_heap()
    try:
        n = node.model.n
        yield node, JointState(name=list(node.model.joint_names), position=[0.012] * n,
                               velocity=[0.0] * n)
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def tick_cost(path, ticks=5000):
    """
    Return p50, p99 (us) of one controller tick in this process, with a fixed fresh state.

    The node's runtime's `tick` (loop, command, ~/state row, statistics) without the
    executor, the simulator or DDS traffic in between: the compute time the loop needs when it
    has the CPU.
    """
    from rclpy.serialization import serialize_message
    with controller_in_process(path) as (node, msg):
        times = np.zeros(ticks)
        for k in range(ticks):
            msg.header.stamp = node.get_clock().now().to_msg()
            node._on_joint_states(serialize_message(msg))
            start = time.perf_counter()
            node.runtime.tick(node.now())
            times[k] = (time.perf_counter() - start) * 1e6
        return np.percentile(times[ticks // 10:], (50.0, 99.0))


def task_against_joint(rounds=2):
    """
    Task space against joint space at 500 Hz, side by side in one run; print both.

    In-process tick cost of each, then for `realtime_priority` 50 and 0 `rounds` interleaved
    runs of each against the simulator (EventsExecutor), medians over the rounds.
    """
    with tempfile.TemporaryDirectory() as directory:
        for task in (False, True):
            p50, p99 = tick_cost(params(directory, 500.0, 0, task))
            print(f'one tick in-process, {"task" if task else "joint"} space: p50 {p50:.0f} '
                  f'us, p99 {p99:.0f} us')
        results = {}
        for priority in (PRIORITY, 0):
            for _ in range(rounds):
                for task in (False, True):
                    figures = measure(params(directory, 500.0, priority, task), 'events')
                    results.setdefault((task, priority), []).append(figures)
                    print(f'measured {"task" if task else "joint"} rt{priority}: '
                          + ('failed' if figures is None else
                             f'{figures["on_time"]:.2%} on time, '
                             f'{figures["rate_hz"]:.1f} Hz'), file=sys.stderr, flush=True)
    table = {}
    for (task, priority), runs in results.items():
        runs = [r for r in runs if r is not None]
        name = ('task' if task else 'joint', 500.0, 'events', priority)
        table[name] = ({key: float(np.median([r[key] for r in runs])) for key in runs[0]}
                       if runs else None)
    print_table(table)
    for priority in (PRIORITY, 0):
        a, b = table[('task', 500.0, 'events', priority)], table[
            ('joint', 500.0, 'events', priority)]
        if a and b:
            print(f'500 Hz, priority {priority}, task/joint: compute p50 '
                  f'{a["compute_p50_us"] / b["compute_p50_us"]:.2f}, p99 '
                  f'{a["compute_p99_us"] / b["compute_p99_us"]:.2f}, on time '
                  f'{a["on_time"]:.2%} vs {b["on_time"]:.2%}, rate {a["rate_hz"]:.1f} vs '
                  f'{b["rate_hz"]:.1f} Hz')


def main():
    """
    Measure every case; print a table and the ratios.

    ``--floor``: only the floor cases (no controller), for comparing loop and publish kinds.
    ``--baseline CHECKOUT``: this controller against the one of CHECKOUT and the floor.
    ``--task [ROUNDS]``: task space against joint space at 500 Hz (`task_against_joint`).
    """
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    if '--task' in sys.argv[1:]:
        rest = sys.argv[sys.argv.index('--task') + 1:]
        task_against_joint(int(rest[0]) if rest else 2)
        return
    floor_only = '--floor' in sys.argv[1:]
    baseline = (sys.argv[sys.argv.index('--baseline') + 1] if '--baseline' in sys.argv
                else None)
    if not floor_only and not baseline:
        with tempfile.TemporaryDirectory() as directory:
            p50, p99 = tick_cost(params(directory, 1000.0))
        print(f'one tick in-process (3-section CoG, pressure mode): p50 {p50:.0f} us, '
              f'p99 {p99:.0f} us')
    results = {}
    with tempfile.TemporaryDirectory() as directory:
        for case in BASELINE_CASES if baseline else CASES:
            node, rate, executor, priority, *variant = case
            if floor_only and node != 'floor':
                continue
            path = params(directory, rate, priority)
            results[case] = (measure_floor(path, rate, executor, priority, *variant)
                             if node == 'floor' else
                             measure(path, executor,
                                     baseline=baseline if node == 'baseline' else None))
            print(f'measured {case}', file=sys.stderr, flush=True)
    print_table(results)
    for priority in (0, PRIORITY):
        base = results.get(('floor', 1000.0, 'events', priority))
        for publish, loop in (('bytes', 'timer'), ('message', 'thread'), ('bytes', 'thread')):
            other = results.get(('floor', 1000.0, 'events', priority, publish, loop))
            if base and other:
                print(f'floor 1000 Hz, priority {priority}, {publish} {loop} / message timer: '
                      f'compute p50 {other["compute_p50_us"] / base["compute_p50_us"]:.2f}, '
                      f'period p99 {other["period_p99_us"] / base["period_p99_us"]:.2f}, on '
                      f'time {other["on_time"]:.2%} vs {base["on_time"]:.2%}')
    for priority in (0, PRIORITY):
        a = results.get(('controller', 1000.0, 'events', priority))
        b = results.get(('baseline', 1000.0, 'events', priority))
        if a and b:
            print(f'1000 Hz, priority {priority}, controller/baseline: compute p50 '
                  f'{a["compute_p50_us"] / b["compute_p50_us"]:.2f}, p99 '
                  f'{a["compute_p99_us"] / b["compute_p99_us"]:.2f}, CPU '
                  f'{a["cpu_controller"] / b["cpu_controller"]:.2f}, latency p50 '
                  f'{a["latency_p50_us"] / b["latency_p50_us"]:.2f}, on time '
                  f'{a["on_time"]:.2%} vs {b["on_time"]:.2%}')
    for priority in (0, PRIORITY):
        floor = results.get(('floor', 1000.0, 'events', priority))
        for node in ('controller', 'baseline'):
            a = results.get((node, 1000.0, 'events', priority))
            if a and floor:
                print(f'1000 Hz, priority {priority}, {node}/floor: CPU '
                      f'{a["cpu_controller"] / floor["cpu_controller"]:.2f} (target <= 1.5), '
                      f'on time {a["on_time"]:.2%} vs {floor["on_time"]:.2%}; latency from '
                      f'the send p50 {a["sent_latency_p50_us"]:.0f} us (target <= 1300)')
    if floor_only or baseline:
        return
    for rate in RATES:
        a = results['controller', rate, 'events', 0]
        b = results['controller', rate, 'single', 0]
        if a and b:
            print(f'{rate:.0f} Hz events/single: compute p99 '
                  f'{a["compute_p99_us"] / b["compute_p99_us"]:.2f}, period p99 '
                  f'{a["period_p99_us"] / b["period_p99_us"]:.2f}, CPU '
                  f'{a["cpu_controller"] / b["cpu_controller"]:.2f}, on time '
                  f'{a["on_time"]:.2%} vs {b["on_time"]:.2%}')
    for priority in (0, PRIORITY):
        a = results['controller', 1000.0, 'events', priority]
        b = results['floor', 1000.0, 'events', priority]
        if a and b:
            print(f'1000 Hz events, priority {priority}, controller/floor: compute p99 '
                  f'{a["compute_p99_us"] / b["compute_p99_us"]:.2f}, period p99 '
                  f'{a["period_p99_us"] / b["period_p99_us"]:.2f}, on time '
                  f'{a["on_time"]:.2%} vs {b["on_time"]:.2%}')
    print('target at 1 kHz: >= 99.5 % ticks on time, compute p99 < 300 us')


def print_table(results):
    """Print one column per case, one row per figure ('-': not measured for the floor)."""
    keys = list(results)
    heads = [(f'{"" if n == "controller" else n + " "}{r:.0f} {e}' + (f' rt{p}' if p else '')
              + ''.join(f' {v[:3]}' for v in variant)) for n, r, e, p, *variant in keys]
    width = max(24, *(len(h) + 2 for h in heads))
    labels = max(len(label) for label, _, _ in ROWS)
    print(f'{"":<{labels}}' + ''.join(f'{h:>{width}}' for h in heads))
    for label, key, form in ROWS:
        cells = [('failed' if results[k] is None else
                  form.format(results[k][key]) if key in results[k] else '-') for k in keys]
        print(f'{label:<{labels}}' + ''.join(f'{c:>{width}}' for c in cells))


if __name__ == '__main__':
    main()
