"""
Where one controller tick's time goes: its parts timed one by one, in one process.

The controller node for the three-section continuum arm (CoG model, pressure mode) is built
in-process and fed a fresh valid state; its control loop is active. Each part of a tick is
then called on its own, back to back, in interleaved rounds (medians of round medians, us):
the reference sample, the clamps of the reference, the law (one model call and the NumPy
around it), the effort clamp and rate limit, the pressure map, the command publish (reused
message against pre-serialized bytes), the timing statistics, and the whole `_tick`; then the
`~/state` publish and the 1 Hz diagnostics, which share the loop thread today. The Python side
of a tick is everything but the model call. Some parts are timed woken from a 1 ms sleep too
(`WOKEN`), as a live loop calls them, and woken from 0.8 ms of sleep followed by 0.2 ms of
spinning (`spin_before`). Run: `./run bench bench/bench_tick.py` (~30 s).
"""

import os
import tempfile
import time

import numpy as np

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')

from bench_node import controller_in_process, params  # noqa: E402 - after the DDS settings
from continuum_ctrl.ros.conversion import set_doubles  # noqa: E402
from continuum_ctrl.ros.fast_publish import CommandPublisher  # noqa: E402

ROUNDS = 15
CALLS = 300
#: parts also timed woken from a 1 ms sleep before each call, as in a live loop
WOKEN = ('model call alone', 'loop.tick alone', 'publish: message', 'publish: bytes',
         'whole _tick (no state)')


def median_us(function, calls=CALLS, pause=0.0, spin=0.0):
    """
    Return the median duration (us) of `function()` over `calls` calls.

    Before each call: a sleep of `pause` s, then `spin` s of busy waiting.
    """
    times = np.empty(calls)
    for k in range(calls):
        if pause:
            time.sleep(pause)
        end = time.perf_counter() + spin
        while time.perf_counter() < end:
            pass
        start = time.perf_counter()
        function()
        times[k] = time.perf_counter() - start
    return float(np.median(times)) * 1e6


def parts(node):
    """Return {name: callable} of the parts of a tick, with the node's own objects."""
    loop = node.loop
    t = node._now()
    q_des, qd_des, qdd_des = loop.reference.sample(t)
    settings = loop.settings
    low, high = loop._effort_range
    step = loop._step if loop._step is not None else np.full(loop.model.n, np.inf)
    fast = CommandPublisher(node, '~/commands_bytes', loop.model.n)

    def clamp_reference():
        np.clip(q_des, loop.low, loop.high, out=loop.q_des)
        inside = np.equal(loop.q_des, q_des, out=loop._inside)
        np.multiply(qd_des, inside, out=loop.qd_des)
        np.multiply(qdd_des, inside, out=loop.qdd_des)

    def limit_effort():
        np.clip(loop._tau, low, high, out=loop._tau)
        np.clip(loop._tau, loop.effort - step, loop.effort + step, out=loop.effort)

    def publish_message():
        set_doubles(node.command_msg.data, loop.command)
        node.command_pub.publish(node.command_msg)

    def statistics():
        node.period.add(2000.0)
        node.age.add(500.0)
        node.compute.add(80.0)

    return {
        'reference sample': lambda: loop.reference.sample(t),
        'reference clamps': clamp_reference,
        'law (model call + NumPy)': lambda: loop.law(loop.q, loop.qd, loop.q_des, loop.qd_des,
                                                     loop.qdd_des),
        'model call alone': lambda: loop.model.inverse_dynamics(loop.q, loop.qd,
                                                                loop.qdd_des),
        'effort clamp + rate limit': limit_effort,
        'pressure map + order': lambda: np.take(settings.actuation.pressure(loop.effort),
                                                settings.order, out=loop.command),
        'publish: message': publish_message,
        'publish: bytes': lambda: fast.publish(loop.command),
        'timing statistics': statistics,
        'clock now (node._now)': node._now,
        'loop.tick alone': lambda: loop.tick(t),
        'whole _tick (no state)': node._tick,
        '~/state publish': lambda: node._publish_state(t),
        'diagnostics (1 Hz)': node._diagnostics,
    }


def main():
    """Print the median of each part and its share of the whole tick."""
    with tempfile.TemporaryDirectory() as directory:
        path = params(directory, 1000.0)
        with controller_in_process(path, '-p', 'state_decimation:=1000', '-p',
                                   'state_timeout:=1000.0') as (node, msg):
            for _ in range(node.loop.settings.resume_count + 1):
                msg.header.stamp = node.get_clock().now().to_msg()
                node._on_state(msg)
            node._tick()
            if node.loop.status != 'active':
                raise SystemExit(f'controller is {node.loop.status}, not active')
            functions = parts(node)
            rounds = {name: [] for name in functions}
            for _ in range(ROUNDS):
                msg.header.stamp = node.get_clock().now().to_msg()
                node._on_state(msg)
                for name, function in functions.items():
                    calls = 5 if name.startswith('diagnostics') else CALLS
                    rounds[name].append(median_us(function, calls))
                    if name in WOKEN:
                        rounds.setdefault(f'{name}, woken', []).append(
                            median_us(function, CALLS // 10, pause=1e-3))
                        rounds.setdefault(f'{name}, woken + spin', []).append(
                            median_us(function, CALLS // 10, pause=0.8e-3, spin=0.2e-3))
    whole = np.median(rounds['whole _tick (no state)'])
    for name, values in rounds.items():
        value = np.median(values)
        print(f'{name:<38} {value:8.1f} us  {value / whole:6.1%} of a tick')


if __name__ == '__main__':
    main()
